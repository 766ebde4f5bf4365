"""Data Docs an operator can read with no internet: GX's own site builder, with renderers and views of ours.

GX 1.x's page templates load about twenty files from CDNs (bootstrap, bootstrap-table, jQuery, vega, Font Awesome,
its logo from S3), build the index's list of validations in the browser with bootstrap-table, and show each
expectation's status as an icon of the Font Awesome font. Offline, and under the plugin's Content-Security-Policy
(``validation/docs_safety.py``), that leaves an empty index and an empty Status column. The site's configuration
(``project.DOCS_SITE_CONFIG``) names the classes below instead, through GX's own ``site_index_builder`` and
``site_section_builders`` options:

* the views put ``docs_templates/`` in front of GX's templates: pages without a single foreign URL or script, styled
  by one small stylesheet of this project's, inlined;
* the index is rendered on the server: one row per run date, linking the run's page (``runs/dt=D.html``, written by
  ``validation/run.py``), the operator's overview of that date, and each table's validation page, status in words
  (``validation/status.py``: a day with only warnings has passed with warnings; the index builder below counts each
  validation's failures by severity, which GX's links do not carry);
* a validation page says each expectation's status and severity in words, shows up to ``EXAMPLE_ROWS`` failing rows
  (msg_id linked to the operator's message page, consumer group, the offending value) and links the run's pages.

Every value shown here comes from a stored result that ``docs_safety.publish`` escaped; it is normalised with
``_text`` (unescape, escape once) so that an escaped and a raw value both end up as text, never as markup.
"""

from __future__ import annotations

import html
import pathlib
import re
from typing import Any

from great_expectations.render import RenderedComponentContent, RenderedDocumentContent, RenderedSectionContent
from great_expectations.render.renderer.content_block.validation_results_table_content_block import (
    ValidationResultsTableContentBlockRenderer,
)
from great_expectations.render.renderer.page_renderer import ValidationResultsPageRenderer
from great_expectations.render.renderer.site_builder import DefaultSiteIndexBuilder
from great_expectations.render.renderer.site_index_page_renderer import SiteIndexPageRenderer
from great_expectations.render.view.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import ChoiceLoader, FileSystemLoader

from rocketmq_retry.urls import message_url, run_page, run_url
from rocketmq_retry.validation.status import badge, status

TEMPLATES = pathlib.Path(__file__).with_name("docs_templates")
EXAMPLE_ROWS = 10
HTML_BLOCK = "rocketmq_retry_html"  # docs_templates/rocketmq_retry_html.j2 renders it
_RUN_NAME = re.compile(r"dt=(\d{4}-\d{2}-\d{2})")
# Shown first in an example row, in this order; the remaining columns follow as the result names them.
_KEY_COLUMNS = ("msg_id", "consumer_group")


def _text(value: Any) -> str:
    """A value as HTML text: escaped exactly once, whether or not docs_safety escaped it before."""
    return html.escape(html.unescape("" if value is None else str(value)), quote=True)


def _raw(value: Any) -> str:
    return html.unescape("" if value is None else str(value))


def run_date(run_name: Any) -> str | None:
    """The partition date of a run name ``dt=YYYY-MM-DD`` (validation/run.py names every run so)."""
    match = _RUN_NAME.fullmatch(str(run_name or ""))
    return match.group(1) if match else None


class HtmlBlock(RenderedComponentContent):
    """Markup this module built (every value in it passed through ``_text``), rendered as it is."""

    def __init__(self, markup: str, classes: list[str] | None = None) -> None:
        super().__init__(content_block_type=HTML_BLOCK, styling={"classes": classes or ["col-12"]})
        self.markup = markup

    def to_json_dict(self) -> dict[str, Any]:
        d = super().to_json_dict()
        d["markup"] = self.markup
        return d


def severity_of(result: Any) -> str:
    cfg = result.expectation_config
    severity = getattr(cfg, "severity", None) or "critical"
    return str(getattr(severity, "value", severity))


def status_of(result: Any) -> str:
    if (result.exception_info or {}).get("raised_exception"):
        return "Error"
    return "Success" if result.success else "Failed"


def failures_by_severity(results: Any) -> tuple[int, int]:
    """(critical, warning) failures among a validation's expectation results."""
    failed = [r for r in results if not r.success]
    critical = sum(1 for r in failed if severity_of(r) == "critical")
    return critical, len(failed) - critical


def status_html(result: Any) -> str:
    status = status_of(result)
    severity = severity_of(result)
    return (
        f'<span class="rr-status rr-{status.lower()}">{status}</span> '
        f'<span class="rr-severity rr-{_text(severity)}">{_text(severity)}</span>'
    )


def example_rows(result: Any) -> list[dict[str, Any]]:
    """Up to EXAMPLE_ROWS failing rows of a result, as GX returned them: the rows an ``UnexpectedRowsExpectation``
    query found, else the id columns plus the offending value (``unexpected_index_list``, requested by the
    checkpoints' ``unexpected_index_column_names``), else bare values."""
    r = result.result or {}
    details = r.get("details") or {}
    rows = details.get("unexpected_rows")
    if not rows:
        rows = r.get("partial_unexpected_index_list") or r.get("unexpected_index_list")
    if not rows:
        values = r.get("partial_unexpected_list") or []
        column = (result.expectation_config.kwargs or {}).get("column") or "value"
        rows = [{column: v} for v in values]
    return [dict(row) if isinstance(row, dict) else {"value": row} for row in list(rows)[:EXAMPLE_ROWS]]


def _count(result: Any) -> int | None:
    r = result.result or {}
    for key in ("unexpected_count", "observed_value"):
        value = r.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def examples_html(result: Any) -> str:
    """The failing rows of one expectation as a small table, msg_id linked to the operator's message page."""
    rows = example_rows(result)
    if result.success:
        return ""
    if not rows:
        # An UnexpectedRowsExpectation returns its rows only under result_format COMPLETE (GX 1.x
        # unexpected_rows_expectation.py _validate); under SUMMARY its count at least gets a label.
        count = _count(result)
        return f'<p class="rr-caption">{count} unexpected row(s)</p>' if count is not None else ""
    columns = [c for c in _KEY_COLUMNS if any(_raw(k) == c for row in rows for k in row)]
    for row in rows:
        columns += [_raw(k) for k in row if _raw(k) not in columns]
    head = "".join(f"<th>{_text(c)}</th>" for c in columns)
    body = []
    for row in rows:
        plain = {_raw(k): v for k, v in row.items()}
        cells = []
        for column in columns:
            value = plain.get(column)
            if column == "msg_id" and value not in (None, ""):
                href = message_url(_raw(value), _raw(plain.get("consumer_group")) or None)
                cells.append(f'<td><a class="rr-msg" href="{html.escape(href, quote=True)}">{_text(value)}</a></td>')
            else:
                cells.append(f"<td>{_text(value)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    count = _count(result)
    shown = len(rows)
    caption = (
        f"{count} unexpected row(s); the first {shown} below"
        if count is not None and count > shown
        else f"{shown} unexpected row(s)"
    )
    return (
        f'<div class="rr-examples"><p class="rr-caption">{caption}</p>'
        f'<table class="rr-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


class OperatorTableRenderer(ValidationResultsTableContentBlockRenderer):
    """GX's expectation table with the Status cell in words (status and severity) and, under a failing
    expectation's text, its example rows."""

    @classmethod
    def _get_content_block_fn(cls, expectation_type: str, expectation_config: Any = None) -> Any:
        gx_row = super()._get_content_block_fn(expectation_type=expectation_type, expectation_config=expectation_config)
        if gx_row is None:
            return None

        def row(configuration: Any = None, result: Any = None, runtime_configuration: Any = None, **kwargs: Any) -> Any:
            rows = gx_row(
                configuration=configuration, result=result, runtime_configuration=runtime_configuration, **kwargs
            )
            if result is None or not rows:
                return rows
            cells = list(rows[0])
            cells[0] = [status_html(result)]
            examples = examples_html(result)
            if examples:
                text = cells[1] if isinstance(cells[1], list) else [cells[1]]
                cells[1] = [*text, examples]
            rows[0] = cells
            return rows

        return row


_COLUMN_SECTION = {
    "module_name": "great_expectations.render.renderer.column_section_renderer",
    "class_name": "ValidationResultsColumnSectionRenderer",
    "table_renderer": {"module_name": __name__, "class_name": "OperatorTableRenderer"},
}


class OperatorValidationPageRenderer(ValidationResultsPageRenderer):
    """GX's validation page plus a first section: the run's date, its status in words, links to the run's page and
    to the operator's overview of that date."""

    def __init__(self, column_section_renderer: Any = None, run_info_at_end: bool = False, data_context: Any = None):
        super().__init__(
            column_section_renderer=column_section_renderer or dict(_COLUMN_SECTION),
            run_info_at_end=run_info_at_end,
            data_context=data_context,
        )

    @classmethod
    def _render_validation_header(cls, validation_results: Any) -> Any:
        header = super()._render_validation_header(validation_results)
        # The icon is a Font Awesome glyph (a CDN font); GX's word next to it ("Failed" for a suite with only
        # warnings) gives way to the validation's status (validation/status.py).
        params = header.subheader.string_template["params"]
        params["html_success_icon"] = ""
        params["success"] = status(*failures_by_severity(validation_results.results))
        return header

    def render(self, validation_results: Any, suite_parameters: Any = None) -> Any:
        document = super().render(validation_results, suite_parameters=suite_parameters)
        run_name = getattr(validation_results.meta.get("run_id"), "run_name", None) or (
            (validation_results.meta.get("run_id") or {}).get("run_name")
            if isinstance(validation_results.meta.get("run_id"), dict)
            else None
        )
        ds = run_date(run_name)
        critical, warnings = failures_by_severity(validation_results.results)
        parts = [
            f'<p class="rr-run-status">Status: {badge(status(critical, warnings))}'
            f" ({len(validation_results.results)} expectations, {critical} critical and {warnings} "
            "warning failure(s))</p>"
        ]
        if ds:
            # validations/<suite>/<run name>/<run time>/<batch>.html: four folders below the site root.
            up = "../" * (validation_results.suite_name.count(".") + 4)
            parts.append(
                f'<p class="rr-run-links">Run dt={_text(ds)}: '
                f'<a href="{html.escape(up + run_page(ds), quote=True)}">all validations of this date</a> · '
                f'<a href="{html.escape(run_url(ds), quote=True)}">run overview</a></p>'
            )
        document.sections.insert(
            0, RenderedSectionContent(section_name="Run", content_blocks=[HtmlBlock("".join(parts))])
        )
        return document


class OperatorIndexPageRenderer(SiteIndexPageRenderer):
    """The site's index, rendered on the server: one row per run date (newest first) with its validations, and the
    expectation suites."""

    @classmethod
    def render(cls, index_links_dict: dict[str, Any]) -> Any:
        by_date: dict[str, list[dict[str, Any]]] = {}
        for link in index_links_dict.get("validations_links") or []:
            by_date.setdefault(run_date(link.get("run_name")) or str(link.get("run_name")), []).append(link)
        rows = []
        for ds in sorted(by_date, reverse=True):
            links = sorted(by_date[ds], key=lambda link: str(link.get("expectation_suite_name")))
            counts = [_link_failures(link) for link in links]
            day = status(sum(c for c, _ in counts), sum(w for _, w in counts))
            validations = ", ".join(
                f'<a href="{html.escape(str(link.get("filepath") or ""), quote=True)}">'
                f"{_text(link.get('asset_name') or link.get('expectation_suite_name'))}</a> {badge(status(*n))}"
                for link, n in zip(links, counts, strict=True)
            )
            pages = (
                f'<a href="{html.escape(run_page(ds), quote=True)}">run page</a> · '
                f'<a href="{html.escape(run_url(ds), quote=True)}">run overview</a>'
                if run_date(f"dt={ds}")
                else ""
            )
            rows.append(f"<tr><td>{_text(ds)}</td><td>{badge(day)}</td><td>{pages}</td><td>{validations}</td></tr>")
        runs = (
            '<table class="rr-table rr-runs"><thead><tr><th>Date</th><th>Status</th><th>Pages</th>'
            f"<th>Validations (any failure in words: see its page)</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>"
            if rows
            else "<p>No validation yet: run <code>make demo</code> or trigger <code>rocketmq_retry_daily</code>.</p>"
        )
        suites = "".join(
            f'<li><a href="{html.escape(str(link.get("filepath") or ""), quote=True)}">'
            f"{_text(link.get('expectation_suite_name'))}</a></li>"
            for link in sorted(
                index_links_dict.get("expectations_links") or [], key=lambda x: str(x.get("expectation_suite_name"))
            )
        )
        blocks = [
            HtmlBlock(f"<h2>Validation runs</h2>{runs}"),
            HtmlBlock(f'<h2>Expectation suites</h2><ul class="rr-suites">{suites}</ul>'),
        ]
        return RenderedDocumentContent(
            renderer_type="SiteIndexPageRenderer",
            sections=[RenderedSectionContent(section_name="RocketMQ retry validation", content_blocks=blocks)],
            utm_medium="index-page",
        )


CRITICAL_FAILURES = "rr_critical_failures"  # keys the index builder adds to each of GX's validation links
WARNING_FAILURES = "rr_warning_failures"


def _link_failures(link: dict[str, Any]) -> tuple[int, int]:
    """(critical, warning) failures of one validation link. A link the builder could not count (its result no
    longer readable) is known only by GX's success flag: failed then counts as critical, GX's default severity."""
    if isinstance(link.get(CRITICAL_FAILURES), int) and isinstance(link.get(WARNING_FAILURES), int):
        return link[CRITICAL_FAILURES], link[WARNING_FAILURES]
    return (0, 0) if link.get("validation_success") else (1, 0)


class OperatorSiteIndexBuilder(DefaultSiteIndexBuilder):
    """GX's index builder, whose validation links say only whether every expectation passed: each link also gets
    its failures counted by severity, so that the index can tell a day that passed with warnings from a failed one
    (``OperatorIndexPageRenderer``)."""

    def _add_validations_to_index_links(self, index_links_dict: Any, validation_and_profiling_result_site_keys: Any):
        super()._add_validations_to_index_links(index_links_dict, validation_and_profiling_result_site_keys)
        for link in index_links_dict.get("validations_links") or []:
            if CRITICAL_FAILURES in link:
                continue
            try:
                validation = self.data_context.get_validation_result(
                    batch_identifier=link.get("batch_identifier"),
                    expectation_suite_name=link.get("expectation_suite_name"),
                    run_id=link.get("run_id"),
                    validation_results_store_name=self.source_stores.get("validations"),
                )
                link[CRITICAL_FAILURES], link[WARNING_FAILURES] = failures_by_severity(validation.results)
            except Exception:  # GX itself skips a result it cannot read; _link_failures falls back to its flag
                continue


class _OfflineTemplates:
    """Puts docs_templates/ in front of GX's templates (GX itself looks at a project's custom views last, so they
    can add templates but never replace one)."""

    env: Any

    def _use_offline_templates(self) -> None:
        self.env.loader = ChoiceLoader([FileSystemLoader(str(TEMPLATES)), self.env.loader])


class OfflinePageView(_OfflineTemplates, DefaultJinjaPageView):
    def __init__(self, custom_styles_directory: Any = None, custom_views_directory: Any = None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        self._use_offline_templates()


class OfflineIndexPageView(_OfflineTemplates, DefaultJinjaIndexPageView):
    def __init__(self, custom_styles_directory: Any = None, custom_views_directory: Any = None) -> None:
        super().__init__(custom_styles_directory, custom_views_directory)
        self._use_offline_templates()
