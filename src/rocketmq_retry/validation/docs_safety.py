"""Data Docs that never turn a logged value into markup, and the headers they are served with.

Great Expectations 1.x renders the sample values of a failing expectation (``partial_unexpected_list``, the
value counts, exception messages) into its pages as raw HTML. Those values come from RocketMQ logs: message keys,
topics, group names and thread names are chosen by whoever produces the messages or names the applications. So the
checkpoints store their results without building pages, every string that came from the data is HTML-escaped in
the stored result, and only then are the pages built from it (``publish``). GX's templates insert the escaped text
verbatim, so ``<img src=x onerror=…>`` shows as that text and never becomes an element.

``CONTENT_SECURITY_POLICY`` is the second wall, for whatever a future GX version renders differently: the plugin
serves every Data Docs file with it. The pages are built from this project's templates (``docs_site.py``), which
name no foreign URL and no script at all; the policy allows nothing from another origin either (no CDN script,
stylesheet, font or image), and the pages live in a sandbox with an opaque origin, so even a script that ran could
not read Airflow's cookies or call its API as the signed-in user.
"""

from __future__ import annotations

import copy
import html
from typing import Any

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        # Inline <style> only: the pages inline their one stylesheet (docs_templates/rocketmq_retry_docs.css).
        "style-src 'self' 'unsafe-inline'",
        "font-src 'self' data:",
        "img-src 'self' data:",
        "connect-src 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
        "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox",
    )
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def escaped(value: Any) -> Any:
    """``value`` with every string inside it (dict keys included) HTML-escaped, quotes too."""
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(escaped(v) for v in value)
    return value


def escape_validation_result(validation: Any) -> Any:
    """A copy of an ``ExpectationSuiteValidationResult`` whose data-derived strings are escaped: each
    expectation's ``result`` (sample and counted unexpected values, observed values, unexpected rows) and its
    ``exception_info`` (a Spark error message can quote a value). The expectation configurations are the
    project's own and stay as they are."""
    safe = copy.deepcopy(validation)
    for r in safe.results:
        r.result = escaped(dict(r.result or {}))
        if r.exception_info:
            r.exception_info = escaped(r.exception_info)
    return safe


def publish(context: Any, results: list[tuple[Any, Any]], site_name: str) -> None:
    """Store each escaped result over the raw one, then build their Data Docs pages (and the index) from them.

    ``results``: (identifier, validation result) pairs. One build for all of them: each build also renders the
    index over every result stored so far, so a build per result re-rendered it once per table."""
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

    identifiers: list[Any] = []
    for identifier, validation in results:
        context.validation_results_store.set(identifier, escape_validation_result(validation))
        identifiers += [identifier, ExpectationSuiteIdentifier(name=validation.suite_name)]
    if identifiers:
        context.build_data_docs(site_names=[site_name], resource_identifiers=identifiers)
