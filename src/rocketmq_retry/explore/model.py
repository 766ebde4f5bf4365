"""The read layer's results: typed, frozen, and each ``to_dict()`` JSON-ready (datetimes as ISO-8601 UTC text).

The pages and ``rocketmq-retry explain`` render these; nothing here reads a file. Field names are an API the web
pages depend on: add fields, never rename them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from rocketmq_retry.compensation.model import State
from rocketmq_retry.errors import UserError

# What a dead letter's compensation state is besides the ledger's own states (compensation/model.py ``State``):
# a row compensation never acts on (held for review, docs/compensation.md), and a compensable row that no
# compensate run has registered yet.
NOT_COMPENSABLE = "NOT_COMPENSABLE"
NOT_REGISTERED = "NOT_REGISTERED"
LEDGER_STATES = tuple(s.value for s in State)
COMPENSATION_STATES = (*LEDGER_STATES, NOT_COMPENSABLE, NOT_REGISTERED)


class ExploreError(UserError):
    """A request the warehouse cannot answer (bad parameter, nothing found): one line naming what was searched.
    The CLI prints it and exits 2; the pages answer 400/404 with it."""


class NotFound(ExploreError):
    """Nothing matches: no such message, date or partition."""


def plain(value: Any) -> Any:
    """``value`` as JSON takes it: times in UTC ISO with Z, dates ISO, dataclasses as dicts, tuples as lists."""
    if isinstance(value, dt.datetime):
        value = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class _Result:
    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form: nested results become dicts, datetimes ISO text in UTC (``...Z``)."""
        out: dict[str, Any] = plain(self)
        return out


class _Paged:
    """A page of a longer list: ``total`` rows in pages of ``page_size``."""

    total: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


# --- run overview ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GroupStates(_Result):
    """One consumer group's lifecycles of the date by final state, and its dead-letter rate."""

    consumer_group: str
    lifecycles: int
    final_states: dict[str, int]  # every FINAL_STATES value, 0 when absent
    dead_lettered: int  # lifecycles whose final state is DEAD_LETTERED
    dead_letter_rate: float  # dead_lettered / lifecycles
    dead_letters: int  # rows of dead_letters/ (the compensable ones and those held for review)
    held_for_review: int


@dataclasses.dataclass(frozen=True)
class AnomalyExample(_Result):
    consumer_group: str
    msg_id: str


@dataclasses.dataclass(frozen=True)
class AnomalySummary(_Result):
    code: str
    lifecycles: int
    examples: list[AnomalyExample]  # up to 5, ordered by (consumer_group, msg_id)


@dataclasses.dataclass(frozen=True)
class ReconciliationGap(_Result):
    """A group-minute whose reconstructed retry traffic differs from the broker's or client's counters."""

    consumer_group: str
    minute: dt.datetime
    reconstructed_send_backs: int | None
    broker_send_backs: int | None
    send_back_diff: int | None
    reconstructed_dlq: int | None
    broker_dlq: int | None
    dlq_diff: int | None
    reconstructed_failures: int | None
    client_failures: int | None
    failure_diff: int | None
    cause: str | None
    cause_text: str | None


@dataclasses.dataclass(frozen=True)
class UnattributedLines(_Result):
    """Consumer lines of one file, event type, topic and reason that no evidence or config gave a group."""

    source: str | None
    source_file: str | None
    instance: str | None
    event_type: str | None
    topic: str | None
    reason: str | None
    reason_text: str | None
    candidates: list[str]
    fix: str | None  # the config key that would settle them
    lines: int
    example_line_no: int | None


@dataclasses.dataclass(frozen=True)
class FileNotRead(_Result):
    source_file: str
    status: str  # quarantined | refused
    reason: str | None


@dataclasses.dataclass(frozen=True)
class IngestAccounting(_Result):
    """What ingest read for the date: lines_read = events + ignored + continuation + quarantined (+ other_date)."""

    files: int
    lines_read: int
    events: int
    event_rows: int
    ignored: int
    continuation: int
    quarantined: int
    other_date: int
    quarantined_by_reason: dict[str, int]
    ignored_by_kind: dict[str, int]
    files_not_read: list[FileNotRead]


@dataclasses.dataclass(frozen=True)
class ValidationStatus(_Result):
    """The date's Great Expectations result as ``rocketmq-retry validate`` left it on disk."""

    success: bool | None
    evaluated: int | None
    critical_failures: list[str]
    warning_failures: list[str]
    docs_page: str  # relative to the Data Docs site root, e.g. ``runs/dt=2026-11-20.html``
    docs_root: str  # absolute path of the Data Docs site the page lives in
    # passed / passed with warnings / failed (validation/status.py, the words every page uses); None: not recorded
    status: str | None = None


@dataclasses.dataclass(frozen=True)
class RunOverview(_Result):
    date: str
    lifecycles: int
    final_states: dict[str, int]
    groups: list[GroupStates]
    dead_letters: int
    held_for_review: int
    anomalies: list[AnomalySummary]
    reconciliation_gaps: list[ReconciliationGap]
    unattributed: list[UnattributedLines]
    unattributed_lines: int
    ingest: IngestAccounting | None  # None: no committed ingest_report for the date
    validation: ValidationStatus | None  # None: the date was not validated with this config
    # why messages failed (docs/causes.md): the day's causes ranked as the causes page ranks them (the first
    # few), and its incidents still open; empty on a date written before the causes existed
    top_causes: list[CauseSummary] = dataclasses.field(default_factory=list)
    open_incidents: list[Incident] = dataclasses.field(default_factory=list)
    failures: int = 0  # failed deliveries of the date (rows of failures/)
    # per group of the date, its lifecycles and dead letters on each of the TREND_DAYS days up to the date
    # (explore/groups.py's DailyRate; a day without a partition has no rate, never a zero)
    trends: dict[str, list[DailyRate]] = dataclasses.field(default_factory=dict)


# --- dead letters ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DeadLetterFilter(_Result):
    """Every field optional; set fields are ANDed. ``key`` is a substring of KEYS or of the business key;
    ``compensation_state`` one of COMPENSATION_STATES; ``attribution`` one of contract.ATTRIBUTIONS;
    ``msg_id`` exact."""

    group: str | None = None
    topic: str | None = None
    tag: str | None = None
    key: str | None = None
    compensation_state: str | None = None
    attribution: str | None = None
    msg_id: str | None = None  # exact
    cause: str | None = None  # exact: a fingerprint or one of contract.CAUSE_CODES (dead_letters.cause_fingerprint)
    failure_kind: str | None = None  # one of contract.FAILURE_KINDS
    incident_id: str | None = None  # exact
    redrive_advice: str | None = None  # one of contract.REDRIVE_ADVICE
    reason: str | None = None  # exact: the ledger's outcome reason (docs/compensation.md "Outcome reasons")


@dataclasses.dataclass(frozen=True)
class DeadLetterRow(_Result):
    date: str
    msg_id: str
    consumer_group: str
    topic: str | None  # the business topic
    tag: str | None
    keys: str | None
    business_key: str | None
    reconsume_times: int | None
    dlq_at: dt.datetime | None
    dlq_inferred: bool | None
    attribution: list[str]  # how the row's group was established (contract.ATTRIBUTIONS)
    compensable: bool
    review_reason: str | None
    compensation_state: str  # COMPENSATION_STATES
    attempts: int
    handler: str | None
    last_attempt_at: dt.datetime | None
    last_error: str | None
    completed_at: dt.datetime | None = None  # the ledger's: when the compensation's effect was done
    # why it was dead-lettered (docs/causes.md); None on a date written before the causes existed
    cause_fingerprint: str | None = None  # a fingerprint or one of contract.CAUSE_CODES
    cause: str | None = None  # "RootCauseClass: message" as logged, or the code
    app_frame: str | None = None
    failure_kind: str | None = None  # contract.FAILURE_KINDS
    incident_id: str | None = None
    kind_rule: str | None = None  # contract.KIND_RULES
    redrive_advice: str | None = None  # contract.REDRIVE_ADVICE
    reason: str | None = None  # the ledger's outcome reason of the last attempt
    loops: int = 0  # re-drive loops: earlier dates its business key was compensated on


# What the dead-letter table may be sorted by (the read layer's names; dead_letters.SORT_SQL holds their SQL).
DEAD_LETTER_SORTS = (
    "date", "consumer_group", "msg_id", "topic", "tag", "keys", "reconsume_times", "dlq_at", "compensation_state",
    "attempts",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class DeadLetterPage(_Paged, _Result):
    date_from: str
    date_to: str
    filters: DeadLetterFilter
    page: int  # 1-based
    page_size: int
    total: int  # rows matching the filters over the whole range
    rows: list[DeadLetterRow]
    sort: str | None = None  # one of DEAD_LETTER_SORTS; None: newest date first, then group and msg_id
    descending: bool = False


# --- lifecycles ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LifecycleRow(_Result):
    date: str
    consumer_group: str
    msg_id: str
    original_topic: str | None
    keys: str | None
    business_key: str | None
    first_seen: dt.datetime | None
    last_seen: dt.datetime | None
    deliveries: int | None
    final_state: str | None
    expected_final_state: str | None
    anomalies: list[str]


@dataclasses.dataclass(frozen=True)
class LifecyclePage(_Paged, _Result):
    """One date's lifecycles, filtered the way the overview's cards and tables count them."""

    date: str
    final_state: str | None
    group: str | None
    anomaly: str | None
    page: int
    page_size: int
    total: int
    rows: list[LifecycleRow]


# --- messages -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FoundMessage(_Result):
    date: str
    consumer_group: str
    msg_id: str
    final_state: str | None
    matched_by: str  # msg_id | offset_msg_id | business_key


@dataclasses.dataclass(frozen=True)
class EvidenceLine(_Result):
    """One event behind a hop: the log line (file and 1-based line number) it was parsed from."""

    event_id: str
    event_time: dt.datetime | None
    event_type: str | None
    source: str | None
    source_file: str | None
    line_no: int | None
    topic: str | None
    reconsume_times: int | None
    delay_level: int | None
    thread: str | None
    client_host: str | None
    broker: str | None
    detail: str | None
    date: str | None = None  # the events partition the line was read from (a line is its date's and its id's)


@dataclasses.dataclass(frozen=True)
class Hop(_Result):
    hop: int
    from_state: str | None
    to_state: str
    physical_topic: str | None
    queue_id: int | None
    delay_level: int | None
    reconsume_times: int | None
    observed_at: dt.datetime | None
    expected_at: dt.datetime | None
    drift_ms: int | None
    inferred: bool
    evidence: list[str]  # event_ids, each one of Story.evidence


@dataclasses.dataclass(frozen=True)
class ExpectedStep(_Result):
    """One retry of the engine's path for a message of the group that fails every time (``schedule``)."""

    hop: int
    reconsume_times: int
    delay_level: int | None
    delay_ms: int
    cumulative_ms: int
    topic: str | None


@dataclasses.dataclass(frozen=True)
class ExpectedPath(_Result):
    settings: list[tuple[str, str]]  # (config key, value as the engine reads it), as ``schedule`` prints them
    steps: list[ExpectedStep]
    final: str  # the engine's final state (RETRYING_FOREVER for a path that never ends)
    final_topic: str | None
    deliveries: int
    text: str  # the ``rocketmq-retry schedule`` table


@dataclasses.dataclass(frozen=True)
class CompensationRecord(_Result):
    """The ledger's row for a dead letter: its state and the attempts made so far."""

    state: str
    attempts: int
    redrives: int
    handler: str | None
    business_key: str | None
    dlq_date: str | None
    first_seen: dt.datetime | None
    last_attempt_at: dt.datetime | None
    completed_at: dt.datetime | None
    last_error: str | None
    result: str | None
    airflow_run_id: str | None
    reason: str | None = None  # the last outcome's normalised reason (docs/compensation.md "Outcome reasons")
    loops: int = 0  # earlier dates its business key was compensated on (docs/compensation.md "Re-drive loops")


@dataclasses.dataclass(frozen=True)
class Story(_Result):
    """One message's lifecycle under one consumer group (never merged with another group's)."""

    date: str  # the partition the lifecycle row was read from (the newest in the range)
    dates: list[str]  # every date in the range holding a lifecycle row of this (group, msg_id)
    consumer_group: str
    msg_id: str
    original_topic: str | None
    keys: str | None
    tags: str | None
    business_key: str | None
    first_seen: dt.datetime | None
    last_seen: dt.datetime | None
    deliveries: int | None
    final_state: str | None
    expected_final_state: str | None
    max_reconsume_times: int | None
    anomalies: list[str]
    evidence_class: str | None
    attribution: list[str]
    instances: list[str]
    hops: list[Hop]
    evidence: list[EvidenceLine]  # ordered by time, then file and line
    expected_path: ExpectedPath
    dead_letter: DeadLetterRow | None
    compensation: CompensationRecord | None
    # why it failed (docs/causes.md): each failed delivery's cause, and the lifecycle's own cause columns;
    # empty / None on a date written before the causes existed, or for a lifecycle that never failed
    failures: list[FailedAttempt] = dataclasses.field(default_factory=list)
    causes: list[str] = dataclasses.field(default_factory=list)
    last_cause: str | None = None
    failure_kind: str | None = None
    incident_id: str | None = None
    kind_rule: str | None = None


# --- groups ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DailyRate(_Result):
    date: str
    lifecycles: int
    dead_lettered: int
    dead_letter_rate: float | None  # None: no lifecycle of the group that date


@dataclasses.dataclass(frozen=True)
class LevelCount(_Result):
    """Retries the date's transitions show at one delay level (None: a retry without a level: local resubmit,
    orderly suspend, POP/gRPC invisible time)."""

    delay_level: int | None
    retries: int


@dataclasses.dataclass(frozen=True)
class GroupView(_Result):
    consumer_group: str
    configured: bool  # False: the group is not in the config and gets every default
    settings: list[tuple[str, str]]  # as ``rocketmq-retry schedule`` prints them
    expected_path: ExpectedPath
    retries_by_level: list[LevelCount]  # on date_to
    trend: list[DailyRate]  # the last N dates, oldest first


# --- causes (docs/causes.md) ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Incident(_Result):
    """An outage: one row of incidents/ (the newest date's row when several dates hold it)."""

    date: str
    consumer_group: str
    incident_id: str
    fingerprint: str | None
    cause_label: str | None  # the cause as the causes page names it
    started_at: dt.datetime | None
    last_failure_at: dt.datetime | None
    ended_at: dt.datetime | None  # None while open
    state: str | None  # contract.INCIDENT_STATES
    failures: int
    messages: int
    dead_letters: int
    recovered: int
    failure_share: float | None
    rule: str | None  # contract.KIND_RULES
    rule_text: str | None


@dataclasses.dataclass(frozen=True)
class CauseSummary(_Result):
    """One (consumer group, cause) of a date: a row of failure_causes/ with the words of its code and rule, its
    incidents, its failures per minute and one failing message."""

    date: str
    consumer_group: str
    fingerprint: str  # a fingerprint (32 hex) or one of contract.CAUSE_CODES
    label: str  # "RootCauseClass: normalised message", or the code
    code_text: str | None  # contract.CAUSE_CODES words when the cause is a code
    exception_class: str | None
    root_cause_class: str | None
    normalised_message: str | None
    app_frame: str | None
    example_message: str | None  # as logged: shown escaped
    example_event_id: str | None
    example_source_file: str | None
    example_line_no: int | None
    example_msg_id: str | None  # a message that failed with it (the example line's when the failures say so)
    failures: int
    messages: int
    dead_letters: int
    recovered: int
    first_failure: dt.datetime | None
    last_failure: dt.datetime | None
    failure_kind: str | None
    kind_rule: str | None
    rule_text: str | None
    incidents: list[Incident]
    per_minute: list[tuple[int, int]]  # (minute of the day from its start in the config's zone, failures)


@dataclasses.dataclass(frozen=True)
class CausePage(_Result):
    """The "Failures by cause" page of one date, all groups or one."""

    date: str
    group: str | None
    groups: list[str]  # every group with a failure that date
    day_start: dt.datetime  # the partition's day in the config's zone, as UTC
    day_end: dt.datetime
    failures: int  # failed deliveries shown (the group's, or the date's)
    unknown: dict[str, int]  # failures whose cause is UNKNOWN, by what is missing (failures.cause_evidence)
    causes: list[CauseSummary]  # ranked: dead letters, then failures
    incidents: list[Incident]  # every incident of the date (and group), open first
    written: bool  # False: the date has no failure_causes partition (written before the causes existed)


@dataclasses.dataclass(frozen=True)
class FailedAttempt(_Result):
    """One failed delivery of a message (a row of failures/) with what established its cause and the line."""

    date: str
    reconsume_times: int | None
    failed_at: dt.datetime | None
    cause: str | None  # a fingerprint or one of contract.CAUSE_CODES
    label: str | None  # "RootCauseClass: message" / the code
    code_text: str | None
    app_frame: str | None
    cause_evidence: str | None  # contract.CAUSE_EVIDENCE
    evidence_text: str | None
    source: str | None
    event_id: str | None
    source_file: str | None
    line_no: int | None
    failure_kind: str | None
    incident_id: str | None
    kind_rule: str | None
    rule_text: str | None


@dataclasses.dataclass(frozen=True)
class SafeSet(_Result):
    """The dead letters of one ended outage that are safe to re-drive (redrive_advice ``safe``)."""

    incident_id: str
    consumer_group: str
    cause_label: str | None
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    safe: int  # dead letters of the range marked safe
    picks: list[tuple[str, str, str]]  # (date, group, msg_id) of those whose ledger state can be re-driven
    more: bool  # more re-drivable rows than one form takes
