"""A validation's outcome in one vocabulary, for every place that states it: the Data Docs index, a run's page, a
table's validation page, the validate task's log and the run report.

A warning is reported, never blocking (``config_sections.DEFAULT_SEVERITIES``), so a day whose only failures are
warnings has passed, and says that it has warnings; only a critical failure makes it failed. No Great Expectations
or Spark here: the Airflow task and the report import it cheaply.
"""

from __future__ import annotations

import html

PASSED = "passed"
PASSED_WITH_WARNINGS = "passed with warnings"
FAILED = "failed"
STATUSES = (PASSED, PASSED_WITH_WARNINGS, FAILED)
# the Data Docs stylesheet's class for each (docs_templates/rocketmq_retry_docs.css)
_CSS = {PASSED: "rr-passed", PASSED_WITH_WARNINGS: "rr-warned", FAILED: "rr-failed"}


def status(critical: int, warnings: int) -> str:
    """The outcome of ``critical`` failed critical checks and ``warnings`` failed warning ones."""
    if critical:
        return FAILED
    return PASSED_WITH_WARNINGS if warnings else PASSED


def badge(word: str) -> str:
    """The outcome as the pages show it: the word itself, coloured by its class (green, amber, red)."""
    if word not in _CSS:
        raise ValueError(f"no validation status {word!r} (statuses: {', '.join(STATUSES)})")
    return f'<span class="rr-status {_CSS[word]}">{html.escape(word)}</span>'
