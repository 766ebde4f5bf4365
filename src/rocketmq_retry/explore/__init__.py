"""The read layer behind the operator's pages and ``rocketmq-retry explain`` (docs/explore.md).

DuckDB over the committed warehouse partitions (``warehouse.partitions.committed``) and the compensation ledger opened
read only; it never starts Spark, never writes, and every request value is a bound SQL parameter or a date checked
by ``dates.partition_date``: no parameter becomes a path.

Public API (results are frozen dataclasses of ``explore.model``, each with ``to_dict()`` for JSON)::

    ex = open_warehouse(warehouse, config=None)      # -> Explorer; config: Config, a file, or None (env/defaults)
    ex.dates(table="lifecycles")                     # -> list[str], committed dates, newest first
    ex.run_overview(date)                            # -> RunOverview
    ex.dead_letters(date_from, date_to, filters, page, page_size, sort=None, descending=False)  # -> DeadLetterPage
    ex.dead_letters_csv(date_from, date_to, filters) # -> Iterator[str], CSV text of every filtered row
    ex.find(query, date_from=None, date_to=None)     # -> list[FoundMessage] (msg_id, offset msg id, business key)
    ex.story(msg_id, group=None, date_from=None, date_to=None)      # -> list[Story], one per consumer group
    ex.groups(date_to, days=14)                      # -> list[GroupView]
    ex.causes(date, group=None)                      # -> CausePage (docs/causes.md)
    ex.safe_sets(date_from, date_to, group, redrivable, limit)   # -> list[SafeSet], ended outages
    ex.advice_of([(date, group, msg_id), ...])       # -> {key: {redrive_advice, cause, failure_kind}}
    ex.ledger.reason_counts(date_from, date_to, group=None)      # -> [(reason, rows)]: outcome reasons, most first
    explore.backlog.backlog(ex, as_of=None)          # -> Backlog: the dead-letter backlog across dates, per group
    ex.close()                                       # (an Explorer is also a context manager)

``None`` for a date bound means "no bound". Bad parameters raise ``ExploreError`` and an empty answer where one
was required (unknown message, date never reconstructed) ``NotFound``; both are ``errors.UserError`` with a
one-line message naming what was searched.
"""

from __future__ import annotations

from rocketmq_retry.explore.model import (
    COMPENSATION_STATES,
    DEAD_LETTER_SORTS,
    LEDGER_STATES,
    NOT_COMPENSABLE,
    NOT_REGISTERED,
    AnomalyExample,
    AnomalySummary,
    CausePage,
    CauseSummary,
    CompensationRecord,
    DailyRate,
    DeadLetterFilter,
    DeadLetterPage,
    DeadLetterRow,
    EvidenceLine,
    ExpectedPath,
    ExpectedStep,
    ExploreError,
    FailedAttempt,
    FileNotRead,
    FoundMessage,
    GroupStates,
    GroupView,
    Hop,
    Incident,
    IngestAccounting,
    LevelCount,
    NotFound,
    ReconciliationGap,
    RunOverview,
    SafeSet,
    Story,
    UnattributedLines,
    ValidationStatus,
)
from rocketmq_retry.explore.warehouse import DEAD_LETTER_CSV_COLUMNS, Explorer, open_warehouse

__all__ = [
    "COMPENSATION_STATES",
    "DEAD_LETTER_CSV_COLUMNS",
    "DEAD_LETTER_SORTS",
    "LEDGER_STATES",
    "NOT_COMPENSABLE",
    "NOT_REGISTERED",
    "AnomalyExample",
    "AnomalySummary",
    "CausePage",
    "CauseSummary",
    "CompensationRecord",
    "DailyRate",
    "DeadLetterFilter",
    "DeadLetterPage",
    "DeadLetterRow",
    "EvidenceLine",
    "ExpectedPath",
    "ExpectedStep",
    "ExploreError",
    "Explorer",
    "FailedAttempt",
    "FileNotRead",
    "FoundMessage",
    "GroupStates",
    "GroupView",
    "Hop",
    "Incident",
    "IngestAccounting",
    "LevelCount",
    "NotFound",
    "ReconciliationGap",
    "RunOverview",
    "SafeSet",
    "Story",
    "UnattributedLines",
    "ValidationStatus",
    "open_warehouse",
]
