"""Validate one date partition of the warehouse: the code behind ``rocketmq-retry validate`` and the DAG's
``validate`` task.

Reads ``<warehouse>/<table>/dt=<date>`` of every table the suites check (``suites.TABLES``) with Spark, runs one
checkpoint per table (all under the run name ``dt=<date>``, so a re-run replaces its own results and pages), updates
Data Docs, writes a page for the date that links the tables' validation pages, and returns a summary in which
failures are split by the severity configured for their check.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import html
import importlib
import json
import os
import pathlib
import shutil
import sys
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rocketmq_retry.dates import partition_date
from rocketmq_retry.errors import InputError, UserError
from rocketmq_retry.spark_session import session_settings, small_input_settings
from rocketmq_retry.urls import docs_url, run_page, run_url
from rocketmq_retry.validation.settings import ValidationSettings
from rocketmq_retry.validation.status import badge, status
from rocketmq_retry.validation.suites import TABLES, view

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from rocketmq_retry.config import Config

EXIT_CRITICAL = 1

# Packages that starting a Spark session imports and Great Expectations imports too. They are loaded on the calling
# thread before GX starts loading on another, so that the two threads never import one package at the same time:
# when two threads' import orders cross, Python breaks the would-be deadlock by handing one of them a partly
# initialised module.
_SHARED_IMPORTS = ("numpy", "pandas", "pyarrow", "google.protobuf.message", "pyspark.testing.utils")
_SHARED_IMPORTS_CLASSIC = ("pyspark.sql.classic.dataframe",)
_SHARED_IMPORTS_CONNECT = ("pyspark.sql.connect.session", "pyspark.sql.connect.dataframe")


def prefetch_great_expectations(remote: bool) -> None:
    """Start importing Great Expectations (~4 s on 2 cores with compiled bytecode, twice that without; docs/scale.md)
    on a daemon thread, so that it overlaps the JVM's start and the tables' first reads instead of following them.
    The later ``import great_expectations`` waits for this one (the import system's per-module lock); should it
    fail here, that import raises the error itself, with its own traceback."""
    for name in (*_SHARED_IMPORTS, *(_SHARED_IMPORTS_CONNECT if remote else _SHARED_IMPORTS_CLASSIC)):
        with contextlib.suppress(ImportError):  # not installed: then no thread imports it either
            importlib.import_module(name)

    def load() -> None:
        # a failure is raised again, where it is handled, by the caller's own import
        with contextlib.suppress(Exception):
            importlib.import_module("great_expectations")

    threading.Thread(target=load, name="import great_expectations", daemon=True).start()


@dataclass
class CheckResult:
    table: str
    check: str
    expectation: str
    severity: str
    success: bool
    column: str | None = None
    unexpected: int | None = None
    observed: Any = None


@dataclass
class ValidationSummary:
    ds: str
    warehouse: str
    success: bool
    rows: dict[str, int]
    results: list[CheckResult] = field(default_factory=list)
    docs_page: str = ""
    docs_index: str = ""
    validation_pages: dict[str, str] = field(default_factory=dict)

    @property
    def critical_failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.success and r.severity == "critical"]

    @property
    def warning_failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.success and r.severity != "critical"]

    @property
    def status(self) -> str:
        """passed, passed with warnings or failed (validation/status.py)."""
        return status(len(self.critical_failures), len(self.warning_failures))

    @property
    def docs_url(self) -> str:
        """The run page's URL on the api-server, relative to it (the Airflow task makes it absolute with its
        ``[api] base_url``: airflow/links.py)."""
        return docs_url(run_page(self.ds))

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status
        out["critical_failures"] = [r.check for r in self.critical_failures]
        out["warning_failures"] = [r.check for r in self.warning_failures]
        out["evaluated"] = len(self.results)
        out["docs_url"] = self.docs_url
        return out

    def render(self, docs_link: str | None = None) -> str:
        """The summary a person reads in a log: the status, each failed check, and last the run page's URL
        (``docs_link``, else ``docs_url``), which a log viewer turns into a link; the page's file before it."""
        lines = [
            f"validation dt={self.ds}: {self.status} ({len(self.results)} expectations, "
            f"{len(self.critical_failures)} critical failure(s), {len(self.warning_failures)} warning(s))"
        ]
        for r in self.critical_failures + self.warning_failures:
            detail = f"{r.unexpected} unexpected" if r.unexpected is not None else f"observed {r.observed}"
            where = f" column {r.column}" if r.column else ""
            lines.append(f"  [{r.severity.upper()}] {r.check}{where} ({r.expectation}): {detail}")
        lines.append(f"  page file: {self.docs_page}")
        lines.append(f"  Data Docs: {docs_link or self.docs_url}")
        return "\n".join(lines)


def partition_path(warehouse: str | os.PathLike[str], table: str, ds: str) -> pathlib.Path:
    """The partition once its job's commit is complete (never a half-swapped set: warehouse/partitions.py)."""
    from rocketmq_retry.warehouse.partitions import committed

    return committed(warehouse, table, ds)


# A partition is cached for Great Expectations when its Parquet files are smaller than this. GE computes each metric
# with its own Spark job: on a small partition re-reading Parquet for each costs more than the metric (the example
# day's validate 1.5-3 s slower with its events uncached), while on a large one building the in-memory copy of every
# column costs more than the checks' own reads of the one or two columns each needs (the 10 M-line production day's
# validate 82-84 s -> 52-56 s: docs/scale.md "Validate: what to cache").
CACHE_BELOW_BYTES = 16 * 2**20


def _frame(spark: SparkSession, warehouse: str, table: str, ds: str) -> Any:
    """The partition as Great Expectations reads it, cached when it is small (``CACHE_BELOW_BYTES``). The only
    cache: the project's datasource does not persist the frames it is given (``project.open_project``)."""
    path = partition_path(warehouse, table, ds)
    if not path.is_dir():
        raise InputError(f"no {table} partition for {ds} at {path} (run ingest and reconstruct for that date first)")
    frame = spark.read.parquet(str(path))
    size = sum(f.stat().st_size for f in path.glob("*.parquet"))
    return frame.cache() if size < CACHE_BELOW_BYTES else frame


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def validate_partition(
    ds: str,
    warehouse: str,
    config: Config,
    settings: ValidationSettings,
    spark: SparkSession,
) -> ValidationSummary:
    partition_date(ds, what="--date")
    frames = {table: _frame(spark, warehouse, table, ds) for table in TABLES}
    for table, frame in frames.items():  # what the checks across tables read (suites.view)
        frame.createOrReplaceTempView(view(table))
    try:
        # counted (and cached) before Great Expectations is needed: meanwhile it may still be loading (``run``)
        rows = {table: frame.count() for table, frame in frames.items()}
        # a small partition's metrics run on Spark's interpreted expressions: compiling each metric's code costs
        # more than its rows (``spark_session.small_input_settings``)
        small = small_input_settings(sum(rows.values()), config.spark.interpreted_below_rows, config.spark.conf)
        with session_settings(spark, small):
            return _validate_frames(frames, rows, config, settings, ds, warehouse)
    finally:
        for table, frame in frames.items():  # a worker or test session that outlives the run keeps no cached blocks
            spark.catalog.dropTempView(view(table))
            frame.unpersist()


def _validate_frames(
    frames: dict[str, DataFrame],
    rows: dict[str, int],
    config: Config,
    settings: ValidationSettings,
    ds: str,
    warehouse: str,
) -> ValidationSummary:
    import great_expectations as gx

    from rocketmq_retry.validation.docs_safety import publish
    from rocketmq_retry.validation.project import DOCS_SITE, checkpoint_name, open_project

    context = open_project(config, settings)
    # A fixed run time per date: re-running a date overwrites its results and pages instead of piling up.
    run_id = gx.RunIdentifier(run_name=f"dt={ds}", run_time=dt.datetime.fromisoformat(ds).replace(tzinfo=dt.UTC))
    summary = ValidationSummary(ds=ds, warehouse=str(warehouse), success=True, rows=dict(rows))
    results: dict[str, list[tuple[Any, Any]]] = {}
    for table, frame in frames.items():
        checkpoint = context.checkpoints.get(checkpoint_name(table))
        results[table] = _run_checkpoint(checkpoint, frame, run_id)
    publish(context, [pair for pairs in results.values() for pair in pairs], DOCS_SITE)
    for table, pairs in results.items():
        for identifier, validation in pairs:
            urls = context.get_docs_sites_urls(resource_identifier=identifier, site_name=DOCS_SITE)
            if urls and urls[0].get("site_url"):
                summary.validation_pages[table] = _url_to_path(urls[0]["site_url"])
            for r in validation.results:
                cfg = r.expectation_config
                severity = getattr(cfg, "severity", "critical")
                summary.results.append(
                    CheckResult(
                        table=table,
                        check=str((cfg.meta or {}).get("check", cfg.type)),
                        expectation=cfg.type,
                        severity=str(getattr(severity, "value", severity)),
                        success=bool(r.success),
                        column=(cfg.kwargs or {}).get("column"),
                        unexpected=_number(r.result.get("unexpected_count")),
                        observed=r.result.get("observed_value"),
                    )
                )
    summary.success = not summary.critical_failures
    # GX copies its own static/ folder into the site on every build; no page of ours uses it (validation/docs_site.py)
    # and its stylesheet names a logo on a foreign server, so the plugin would serve a file that points outside.
    shutil.rmtree(settings.docs_dir / "static", ignore_errors=True)
    summary.docs_index = str(settings.docs_dir / "index.html")
    summary.docs_page = _write_run_page(settings.docs_dir, summary)
    return summary


def _run_checkpoint(checkpoint: Any, frame: DataFrame, run_id: Any) -> list[tuple[Any, Any]]:
    """(result identifier, validation result) pairs of ``checkpoint``'s validation definitions over ``frame``.

    Each suite runs with the checkpoint's stored format at level BASIC (counts and observed values), and only its
    failing expectations run again with the stored format itself (SUMMARY: example values and the rows that failed,
    for the page; COMPLETE for a row query, whose rows SUMMARY leaves out), their results put in place of the BASIC
    ones. GX computes SUMMARY's examples with extra Spark
    queries for every column expectation, passing or not: a passing expectation (nearly all of them on any day) is
    spared those, and a failing one gets the result a SUMMARY run of the whole suite gives it (GX's ``Batch.validate``
    of one expectation and a suite's run go through the same ``Validator._validate_expectation_configs``)."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    basic = {**checkpoint.result_format, "result_format": "BASIC"}
    # A row query returns the rows it found only under COMPLETE (GX caps them at 200); its query already ran, so
    # the rows cost nothing more, and its page can list them (which group, which source, which counts)
    rows = {**checkpoint.result_format, "result_format": "COMPLETE"}
    pairs = []
    for definition in checkpoint.validation_definitions:
        batch_parameters = {"dataframe": frame}
        validation = definition.run(
            checkpoint_id=checkpoint.id,
            batch_parameters=batch_parameters,
            result_format=basic,
            run_id=run_id,
        )
        failed = [i for i, r in enumerate(validation.results) if not r.success]
        if failed:
            batch = definition.batch_definition.get_batch(batch_parameters=batch_parameters)
            by_id = {e.id: e for e in definition.suite.expectations}
            for i in failed:
                config = validation.results[i].expectation_config
                expectation = by_id[config.id]
                row_query = config.type == "unexpected_rows_expectation"
                validation.results[i] = batch.validate(
                    expectation, result_format=rows if row_query else checkpoint.result_format
                )
        identifier = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=definition.suite.name),
            run_id=run_id,
            batch_identifier=validation.batch_id,
        )
        pairs.append((identifier, validation))  # stored over the BASIC result by publish, escaped
    return pairs


def run_page_path(docs_dir: pathlib.Path, ds: str) -> pathlib.Path:
    return docs_dir / run_page(ds)


# The Data Docs' own stylesheet (docs_site.py inlines it in every GX page): the run page looks like the rest.
STYLESHEET = pathlib.Path(__file__).with_name("docs_templates") / "rocketmq_retry_docs.css"


def _failed_check_html(r: CheckResult) -> str:
    count = r.unexpected if r.unexpected is not None else r.observed if isinstance(r.observed, int) else None
    where = f" ({html.escape(r.column)})" if r.column else ""
    rows = f' <span class="rr-caption">{count} unexpected</span>' if count is not None else ""
    return (
        f"<li><code>{html.escape(r.check)}</code>{where} "
        f'<span class="rr-severity rr-{html.escape(r.severity)}">{html.escape(r.severity)}</span>{rows}</li>'
    )


def run_page_html(summary: ValidationSummary, page_dir: pathlib.Path) -> str:
    """The run's page: its status, then one row per table (rows, status, the checks that failed with their
    severity), linking each table's validation page, the operator's overview of the date and the index."""
    ds = html.escape(summary.ds)
    rows = []
    for table in TABLES:
        target = summary.validation_pages.get(table, "")
        rel = urllib.parse.quote(os.path.relpath(target, page_dir)) if target else ""
        failed = [r for r in summary.results if r.table == table and not r.success]
        critical = sum(1 for r in failed if r.severity == "critical")
        name = f'<a href="{html.escape(rel, quote=True)}">{html.escape(table)}</a>' if rel else html.escape(table)
        checks = (
            f'<ul class="rr-checks">{"".join(_failed_check_html(r) for r in failed)}</ul>'
            if failed
            else '<span class="rr-caption">all expectations met</span>'
        )
        rows.append(
            f'<tr><td>{name}</td><td class="rr-num">{summary.rows.get(table, 0):,}</td>'
            f"<td>{badge(status(critical, len(failed) - critical))}</td><td>{checks}</td></tr>"
        )
    checked = len(summary.results)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f"<title>Validation of dt={ds}</title><style>{STYLESHEET.read_text(encoding='utf-8')}</style></head><body>"
        '<nav class="rr-navbar"><a class="rr-home" href="../index.html">RocketMQ retry Data Docs</a>'
        f'<span class="rr-breadcrumb">Validation of dt={ds}</span></nav><main class="rr-page rr-run">'
        f'<h1 class="rr-title">Validation of dt={ds} {badge(summary.status)}</h1>'
        f'<p class="rr-run-status">{checked} expectations over {len(TABLES)} tables: '
        f"{len(summary.critical_failures)} critical failure(s), {len(summary.warning_failures)} warning(s). "
        "A critical failure fails the run and holds back compensation; a warning is reported only.</p>"
        f'<p class="rr-run-links"><a href="{html.escape(run_url(summary.ds), quote=True)}">Run overview of {ds}</a>'
        ' · <a href="../index.html">All validation runs</a></p>'
        '<table class="rr-table rr-tables"><thead><tr><th>Table</th><th class="rr-num">Rows</th><th>Status</th>'
        f"<th>Failed checks</th></tr></thead><tbody>{''.join(rows)}</tbody></table></main></body></html>"
    )


def _write_run_page(docs_dir: pathlib.Path, summary: ValidationSummary) -> str:
    """One page per date linking its validation pages and the operator's overview of the date: what the Airflow
    extra link opens."""
    page = run_page_path(docs_dir, summary.ds)
    page.parent.mkdir(parents=True, exist_ok=True)
    body = run_page_html(summary, page.parent)
    tmp = page.with_suffix(".tmp")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(page)
    page.with_suffix(".json").write_text(json.dumps(summary.as_dict(), indent=2, default=str), encoding="utf-8")
    return str(page)


def _url_to_path(url: str) -> str:
    return urllib.parse.unquote(urllib.parse.urlparse(url).path) if url.startswith("file:") else url


# The driver's log4j configuration when validate starts its own session: errors only (see the file).
LOG4J2 = pathlib.Path(__file__).with_name("log4j2.properties")


def quiet_conf() -> dict[str, str]:
    """What validate's own session adds to the configured settings so that a run that succeeds writes nothing on
    stderr, which Airflow logs as ERROR lines: Spark's startup notices and WARN lines (the log level, and a log4j
    configuration read before the first line is logged) and its console progress bar. Errors still reach stderr.
    The config's ``spark.conf`` wins over these, as it does over every default."""
    from rocketmq_retry.spark_session import driver_java_options

    return {
        "spark.log.level": "ERROR",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"{driver_java_options()} -Dlog4j2.configurationFile={LOG4J2.as_uri()}",
    }


def run(ds: str, warehouse: str, config: Config | str | None) -> ValidationSummary:
    """Load the config (once: its ``validation:`` section is part of it) unless given, start (or reuse) a local
    Spark session (a Spark Connect one when ``SPARK_REMOTE`` is set), validate. The session is stopped only if
    this call started it, so an Airflow worker or a test suite that already has one keeps it."""
    from rocketmq_retry.config import Config, load_config
    from rocketmq_retry.spark_session import active_session, build_spark_session, is_remote

    partition_date(ds, what="--date")
    config = config if isinstance(config, Config) else load_config(config)
    settings = config.validation
    prefetch_great_expectations(remote=is_remote())
    existing = active_session()
    spark = existing or build_spark_session(
        "rocketmq-retry-validate",
        master=config.spark.master,
        driver_memory=config.spark.driver_memory,
        shuffle_partitions=config.spark.shuffle_partitions,
        conf={**quiet_conf(), **config.spark.conf},
    )
    try:
        return validate_partition(ds, warehouse, config, settings, spark)
    finally:
        if existing is None:
            spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rocketmq-retry validate",
        description="Run the Great Expectations checkpoints over one date partition and update Data Docs. "
        "Exit status 1 when a critical expectation fails; warnings are reported only.",
    )
    parser.add_argument("--date", required=True, help="partition date, YYYY-MM-DD")
    parser.add_argument("--warehouse", required=True, help="warehouse root (holds events/, transitions/, …)")
    parser.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    ns = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        summary = run(ns.date, ns.warehouse, ns.config)
    except UserError as exc:
        print(f"rocketmq-retry validate: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps(summary.as_dict(), indent=2, default=str) if ns.json else summary.render())
    return 0 if summary.success else EXIT_CRITICAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
