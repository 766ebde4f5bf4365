"""The data contract (DESIGN §4), spelled once: every table's columns and types, the values its enumerated
columns may hold, and where a table's partition lives.

Writers select their output through ``columns(table)`` and readers conform to ``struct_type(table)``, the
expectation suites check ``columns(table)`` and the enumerations below; a column renamed here fails every writer
that still builds the old name, and a writer that drifts fails ``tests/test_contract.py``. Pure Python:
``struct_type`` imports pyspark only when it is called, so the compensation and Airflow code that reads the
tables without Spark can import this module.
"""

from __future__ import annotations

import enum
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rocketmq_retry.dates import DateError, dates_between, optional_date, partition_date

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "ANOMALY_CODES",
    "ATTRIBUTIONS",
    "CAUSE_CODES",
    "CAUSE_EVIDENCE",
    "CONSUMED",
    "DEAD_LETTERED",
    "DROPPED",
    "EVENT_TYPES",
    "EVIDENCE_CLASSES",
    "FAILURE_KINDS",
    "FINAL_STATES",
    "HOP_STATES",
    "INCIDENT_STATES",
    "IN_RETRY",
    "KEY",
    "KIND_RULES",
    "REDRIVE_ADVICE",
    "SCHEMAS",
    "UNATTRIBUTED_REASONS",
    "UNKNOWN",
    "CauseCode",
    "DateError",
    "EventType",
    "HopState",
    "columns",
    "dates_between",
    "ddl",
    "final_state_of",
    "optional_date",
    "partition_date",
    "partition_dir",
    "select_columns",
    "struct_type",
]

# --------------------------------------------------------------------------------------------------------------
# schemas: (column, Spark DDL type) in the order the writers write them

_EVENTS = (
    # sha2 of the file's instance and content fingerprint, line_no, the record's index in the line and the line's
    # text (32 hex): a line of a file's content, not a path (docs/ingest.md "event_id")
    ("event_id", "string"),
    ("event_time", "timestamp"),  # UTC
    ("source", "string"),
    ("source_file", "string"),
    ("line_no", "bigint"),
    ("event_type", "string"),  # EVENT_TYPES
    ("consumer_group", "string"),
    ("producer_group", "string"),
    ("msg_id", "string"),  # UNIQ_KEY
    ("offset_msg_id", "string"),
    ("origin_msg_id", "string"),
    ("topic", "string"),
    ("original_topic", "string"),
    ("queue_id", "int"),
    # the stored copy's offset in its queue (message dumps, POP checkpoints): what a revive-log record names a
    # message by (docs/ingest.md "POP checkpoints")
    ("queue_offset", "bigint"),
    ("reconsume_times", "int"),
    ("delay_level", "int"),
    ("keys", "string"),
    ("tags", "string"),
    ("body", "string"),
    ("status_code", "string"),
    ("cost_ms", "bigint"),
    ("broker", "string"),
    ("client_host", "string"),
    ("thread", "string"),
    ("detail", "string"),
    ("attribution", "string"),  # "config" when the group came from the source's consumer_group, else null
    ("instance", "string"),
    # why a consume failed, read from the stack trace printed after its line (docs/ingest.md "Causes"); null on
    # every other event and on a failure that printed no exception
    ("exception_class", "string"),
    ("exception_message", "string"),  # as logged (wrapped lines joined by \n), capped
    ("root_cause_class", "string"),  # the last top-level "Caused by:", else the exception itself
    ("root_cause_message", "string"),
    ("app_frame", "string"),  # the first frame outside causes.framework_packages: pkg.Class.method(File.java:N)
    ("fingerprint", "string"),  # 32 hex: root cause class, its normalised message and the app frame
)
_TRANSITIONS = (
    ("consumer_group", "string"),
    ("msg_id", "string"),
    ("hop", "int"),
    ("from_state", "string"),
    ("to_state", "string"),
    ("observed_at", "timestamp"),
    ("expected_at", "timestamp"),
    ("drift_ms", "bigint"),
    ("delay_level", "int"),
    ("reconsume_times", "int"),
    ("physical_topic", "string"),
    ("queue_id", "int"),
    ("inferred", "boolean"),
    ("evidence", "array<string>"),
)
_LIFECYCLES = (
    ("consumer_group", "string"),
    ("msg_id", "string"),
    ("original_topic", "string"),
    ("keys", "string"),
    ("tags", "string"),
    ("business_key", "string"),
    ("first_seen", "timestamp"),
    ("last_seen", "timestamp"),
    ("deliveries", "int"),
    ("final_state", "string"),  # FINAL_STATES
    ("expected_final_state", "string"),  # FINAL_STATES
    ("max_reconsume_times", "int"),
    ("anomalies", "array<string>"),  # ANOMALY_CODES
    ("evidence_class", "string"),  # EVIDENCE_CLASSES
    ("evidence_sources", "array<string>"),
    ("linked_by", "array<string>"),
    ("attribution", "array<string>"),  # ATTRIBUTIONS
    ("instances", "array<string>"),
    # why it failed (docs/causes.md): its failures' causes (fingerprints or CAUSE_CODES) in order of first failure,
    # the last failure's, and what kind of failure it was; null/empty for a lifecycle that never failed
    ("causes", "array<string>"),
    ("last_cause", "string"),
    ("failure_kind", "string"),  # FAILURE_KINDS
    ("incident_id", "string"),  # the outage its last failure belongs to (incidents.incident_id)
    ("kind_rule", "string"),  # KIND_RULES: the rule that set failure_kind
)
_DEAD_LETTERS = (
    ("consumer_group", "string"),
    ("msg_id", "string"),
    ("original_topic", "string"),
    ("dlq_at", "timestamp"),
    ("reconsume_times", "int"),
    ("keys", "string"),
    ("tags", "string"),
    ("business_key", "string"),
    ("body", "string"),
    ("compensation_handler", "string"),
    ("dlq_inferred", "boolean"),
    ("evidence", "array<string>"),
    ("attribution", "array<string>"),  # ATTRIBUTIONS
    ("compensable", "boolean"),
    ("review_reason", "string"),
    # the cause of the failure that dead-lettered it (docs/causes.md)
    ("cause_fingerprint", "string"),  # a fingerprint (32 hex) or one of CAUSE_CODES
    ("cause", "string"),  # "RootCauseClass: message" as logged, or the code
    ("app_frame", "string"),
    ("failure_kind", "string"),  # FAILURE_KINDS
    ("incident_id", "string"),
    ("kind_rule", "string"),  # KIND_RULES
    ("redrive_advice", "string"),  # REDRIVE_ADVICE
)
_UNATTRIBUTED = (
    ("source", "string"),
    ("source_file", "string"),
    ("instance", "string"),
    ("event_type", "string"),
    ("topic", "string"),
    ("reason", "string"),  # UNATTRIBUTED_REASONS
    ("candidates", "array<string>"),
    ("fix", "string"),
    ("lines", "bigint"),
    ("example_line_no", "bigint"),
)
_RECONCILIATION = (
    ("consumer_group", "string"),
    ("minute", "timestamp"),
    ("reconstructed_send_backs", "bigint"),
    ("broker_send_backs", "bigint"),
    ("send_back_diff", "bigint"),
    ("reconstructed_dlq", "bigint"),
    ("broker_dlq", "bigint"),
    ("dlq_diff", "bigint"),
    ("reconstructed_failures", "bigint"),
    ("client_failures", "bigint"),
    ("failure_diff", "bigint"),
    ("cause", "string"),
)
# one row per failed delivery of D (docs/causes.md): what the evidence says made it fail
_FAILURES = (
    ("consumer_group", "string"),
    ("msg_id", "string"),
    ("reconsume_times", "int"),  # the failed delivery's
    ("failed_at", "timestamp"),
    ("cause", "string"),  # a fingerprint (32 hex, events.fingerprint) or one of CAUSE_CODES
    ("cause_evidence", "string"),  # CAUSE_EVIDENCE: what established the cause (for UNKNOWN: why it is unknown)
    ("source", "string"),  # the format of the line or record that gave the cause
    ("event_id", "string"),  # that line's event (null when no line gave it)
    ("failure_kind", "string"),  # FAILURE_KINDS
    ("incident_id", "string"),
    ("kind_rule", "string"),  # KIND_RULES
)
# per (consumer_group, fingerprint) of D's failures (docs/causes.md)
_FAILURE_CAUSES = (
    ("consumer_group", "string"),
    ("fingerprint", "string"),  # a fingerprint or one of CAUSE_CODES
    ("exception_class", "string"),
    ("root_cause_class", "string"),
    ("normalised_message", "string"),  # the root cause's message with its values masked
    ("app_frame", "string"),
    ("example_message", "string"),  # one failure's root cause message, as logged
    ("example_event_id", "string"),  # that failure's line (events.event_id) and where it is
    ("example_source_file", "string"),
    ("example_line_no", "bigint"),
    ("failures", "bigint"),
    ("messages", "bigint"),  # distinct messages that failed with it
    ("dead_letters", "bigint"),  # of those, dead-lettered with it as their last cause
    ("recovered", "bigint"),  # of those, consumed later
    ("first_failure", "timestamp"),
    ("last_failure", "timestamp"),
    ("failure_kind", "string"),  # FAILURE_KINDS: the kind most of its failures have
    ("kind_rule", "string"),  # KIND_RULES
    ("incidents", "array<string>"),  # incidents.incident_id
)
# outages (docs/causes.md "Incidents"): a window in which many distinct messages of a group failed with one cause
# while the group otherwise failed too; one row per incident with failures on D
_INCIDENTS = (
    ("consumer_group", "string"),
    ("incident_id", "string"),  # 32 hex: group, cause and start
    ("fingerprint", "string"),
    ("started_at", "timestamp"),  # its first failure
    ("last_failure_at", "timestamp"),
    ("ended_at", "timestamp"),  # the group's first consumption after its last failure; null while open
    ("state", "string"),  # INCIDENT_STATES
    ("failures", "bigint"),
    ("messages", "bigint"),
    ("dead_letters", "bigint"),
    ("recovered", "bigint"),
    ("failure_share", "double"),  # the group's failed deliveries / deliveries in the window
    ("rule", "string"),  # KIND_RULES
)
_BINDINGS = (
    ("instance", "string"),
    ("source", "string"),
    ("source_file", "string"),
    ("kind", "string"),
    ("consumer_group", "string"),
    ("topic", "string"),
    ("lines", "bigint"),
)
_INGEST_REPORT = (
    ("source_file", "string"),
    ("source", "string"),
    ("lines_read", "bigint"),
    ("events", "bigint"),
    ("ignored", "bigint"),
    ("continuation", "bigint"),
    ("quarantined", "bigint"),
    ("other_date", "bigint"),
    ("event_rows", "bigint"),
    ("unattributed_events", "bigint"),
    ("bad_records", "bigint"),
    ("other_date_records", "bigint"),
    ("ignored_by_kind", "map<string,bigint>"),
    ("quarantined_by_reason", "map<string,bigint>"),
    # "read", or "quarantined" (a damaged .gz, not read) / "refused" (its real path leaves the landing root)
    ("file_status", "string"),
    ("file_reason", "string"),
    # event rows of this file not written because an earlier file (by source_file) of the day gave the same
    # event_id (the same content collected twice), and those files: event_rows counts the rows written
    ("duplicate_events", "bigint"),
    ("duplicate_of", "array<string>"),
)
_QUARANTINE = (
    ("source", "string"),
    ("source_file", "string"),
    ("line_no", "bigint"),
    ("raw", "string"),
    ("reason", "string"),
    ("byte_offset", "bigint"),
)

# the key of a lifecycle and of its dead letter: one row per key in lifecycles/ and dead_letters/
KEY = ("consumer_group", "msg_id")

SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "events": _EVENTS,
    "quarantine": _QUARANTINE,
    "ingest_report": _INGEST_REPORT,
    "bindings": _BINDINGS,
    "transitions": _TRANSITIONS,
    "lifecycles": _LIFECYCLES,
    "dead_letters": _DEAD_LETTERS,
    "reconciliation": _RECONCILIATION,
    "unattributed": _UNATTRIBUTED,
    "failures": _FAILURES,
    "failure_causes": _FAILURE_CAUSES,
    "incidents": _INCIDENTS,
}


def _schema(table: str) -> tuple[tuple[str, str], ...]:
    try:
        return SCHEMAS[table]
    except KeyError:
        raise KeyError(f"no table {table!r} in the data contract (tables: {', '.join(SCHEMAS)})") from None


def columns(table: str) -> tuple[str, ...]:
    """The table's column names in written order."""
    return tuple(name for name, _ in _schema(table))


def ddl(table: str) -> str:
    """``name type, ...``: what ``spark.createDataFrame(rows, ddl(table))`` and ``StructType.fromDDL`` take."""
    return ", ".join(f"{name} {dtype}" for name, dtype in _schema(table))


def _spark_type(dtype: str) -> DataType:
    # Built here rather than by StructType.fromDDL, which needs a running Spark session: the types the contract
    # uses are few, and an unknown one is an error in this module, not a surprise in a job.
    from pyspark.sql import types as T

    atoms: dict[str, DataType] = {
        "string": T.StringType(),
        "timestamp": T.TimestampType(),
        "bigint": T.LongType(),
        "int": T.IntegerType(),
        "boolean": T.BooleanType(),
        "double": T.DoubleType(),
    }
    if dtype in atoms:
        return atoms[dtype]
    if dtype.startswith("array<") and dtype.endswith(">"):
        return T.ArrayType(_spark_type(dtype[6:-1]))
    if dtype.startswith("map<") and dtype.endswith(">"):
        key, value = dtype[4:-1].split(",", 1)
        return T.MapType(_spark_type(key), _spark_type(value))
    raise ValueError(f"data contract: no Spark type for {dtype!r}")


def struct_type(table: str) -> StructType:
    """The table's Spark schema, every field nullable (pyspark is imported here, not by the module)."""
    return struct_of(_schema(table))


def struct_of(fields: Iterable[tuple[str, str]]) -> StructType:
    """A Spark schema of ``(name, type)`` pairs in the contract's type names, every field nullable: for a job's
    own small tables that are not the contract's, built without a Spark session as the contract's are."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(name, _spark_type(dtype)) for name, dtype in fields])


def select_columns(table: str, derived: Mapping[str, Column] | None = None) -> list[Column]:
    """The ``select`` list of a writer: the table's columns in contract order, each ``derived[name]`` or the input
    column of that name. A derived name the table does not have is an error (a rename not carried through)."""
    from pyspark.sql import functions as F

    derived = dict(derived or {})
    names = columns(table)
    stray = sorted(set(derived) - set(names))
    if stray:
        raise KeyError(f"data contract: {table} has no column {', '.join(stray)}")
    return [(derived[n] if n in derived else F.col(n)).alias(n) for n in names]


def partition_dir(warehouse: str | os.PathLike[str], table: str, ds: object) -> pathlib.Path:
    """``<warehouse>/<table>/dt=<ds>`` with ``ds`` checked by the one date parser (a ``DateError`` otherwise).

    The path only: a reader of a committed table goes through ``warehouse.partitions.committed``, which also waits for
    or recovers an interrupted commit."""
    return pathlib.Path(warehouse) / table / f"dt={partition_date(ds, what=f'{table} partition date')}"


# --------------------------------------------------------------------------------------------------------------
# enumerations


class EventType(enum.StrEnum):
    """events.event_type: the DESIGN §4 list, then what the ingest job added for what the formats show. The one
    spelling: code names a type as ``EventType.X`` (a ``str``, so Spark literals and SQL text take it as is);
    tests/test_house.py finds a type spelled as a bare literal anywhere else in the package."""

    PUBLISHED = "PUBLISHED"
    PUBLISH_RETRY = "PUBLISH_RETRY"
    PUBLISH_FAILED = "PUBLISH_FAILED"
    DELIVERED = "DELIVERED"
    CONSUME_OK = "CONSUME_OK"
    CONSUME_FAILED = "CONSUME_FAILED"
    CONSUME_TIMEOUT = "CONSUME_TIMEOUT"
    SEND_BACK = "SEND_BACK"
    SEND_BACK_FAILED = "SEND_BACK_FAILED"
    LOCAL_RETRY = "LOCAL_RETRY"
    ORDERLY_SUSPENDED = "ORDERLY_SUSPENDED"
    BROADCAST_DROPPED = "BROADCAST_DROPPED"
    POP_NACK = "POP_NACK"
    POP_DROPPED = "POP_DROPPED"
    DEAD_LETTERED = "DEAD_LETTERED"
    SEND_BACK_COUNT = "SEND_BACK_COUNT"
    DLQ_COUNT = "DLQ_COUNT"
    DIRECT_CONSUME = "DIRECT_CONSUME"
    RETRY_ENQUEUED = "RETRY_ENQUEUED"
    TOPIC_CREATED = "TOPIC_CREATED"
    SCHEDULE_ERROR = "SCHEDULE_ERROR"
    DLQ_PUT_COUNT = "DLQ_PUT_COUNT"
    CONSUME_FAILED_COUNT = "CONSUME_FAILED_COUNT"
    # the revive log topic's records (rmq_sys_REVIVE_LOG_<cluster>, §2.6): a pop of a message (its checkpoint: pop
    # time, invisible time) and the ack of that pop
    POP_CHECKPOINT = "POP_CHECKPOINT"
    POP_ACK = "POP_ACK"


EVENT_TYPES = tuple(t.value for t in EventType)


class HopState(enum.StrEnum):
    """transitions.from_state / to_state: where one hop of a lifecycle leaves the message (docs/reconstruction.md
    "Transitions"), spelled once as ``EventType`` is."""

    PUBLISHED = "PUBLISHED"  # the first hop's from_state
    DELIVERED = "DELIVERED"
    CONSUMED = "CONSUMED"
    FAILED = "FAILED"
    SENT_BACK = "SENT_BACK"  # consumerSendMsgBack accepted by the broker
    REPUBLISHED = "REPUBLISHED"  # the client sent a copy itself (orderly fallback, send-back RPC failed)
    SCHEDULED = "SCHEDULED"  # waiting in SCHEDULE_TOPIC_XXXX
    READY = "READY"  # in the retry topic, due
    SUSPENDED = "SUSPENDED"  # orderly: the queue is suspended locally
    LOCAL_RETRY = "LOCAL_RETRY"  # re-submitted in the client
    INVISIBLE = "INVISIBLE"  # POP / gRPC: invisible until the revive
    DEAD_LETTERED = "DEAD_LETTERED"
    DROPPED = "DROPPED"


HOP_STATES = tuple(s.value for s in HopState)

# lifecycles.final_state / expected_final_state. The tables say IN_RETRY where the engine says RETRYING_FOREVER,
# and UNKNOWN when the evidence cannot tell (the engine always knows): ``final_state_of`` maps the two.
CONSUMED = "CONSUMED"
DEAD_LETTERED = "DEAD_LETTERED"
IN_RETRY = "IN_RETRY"
DROPPED = "DROPPED"
UNKNOWN = "UNKNOWN"
FINAL_STATES = (CONSUMED, DEAD_LETTERED, IN_RETRY, DROPPED, UNKNOWN)
_FROM_ENGINE = {
    "CONSUMED": CONSUMED,
    "DEAD_LETTERED": DEAD_LETTERED,
    "DROPPED": DROPPED,
    "RETRYING_FOREVER": IN_RETRY,
}


def final_state_of(engine_final: object) -> str:
    """The table value of an ``engine.FinalState`` (or its name); a state the map does not know is an error,
    so a new engine state cannot reach a table unnoticed."""
    name = str(getattr(engine_final, "value", engine_final))
    try:
        return _FROM_ENGINE[name]
    except KeyError:
        raise ValueError(f"engine final state {name!r} has no table value in the data contract") from None


# lifecycles.anomalies (docs/reconstruction.md, "Anomalies")
EARLY_DLQ = "EARLY_DLQ"
LATE_REDELIVERY = "LATE_REDELIVERY"
MISSING_HOP = "MISSING_HOP"
DELIVERY_AFTER_DLQ = "DELIVERY_AFTER_DLQ"
RETRY_IN_BROADCAST = "RETRY_IN_BROADCAST"
DUPLICATE_CONSUME = "DUPLICATE_CONSUME"
ORDERLY_QUEUE_BLOCKED = "ORDERLY_QUEUE_BLOCKED"
SILENT_LOSS = "SILENT_LOSS"
ANOMALY_CODES = (
    EARLY_DLQ, LATE_REDELIVERY, MISSING_HOP, DELIVERY_AFTER_DLQ, RETRY_IN_BROADCAST, DUPLICATE_CONSUME,
    ORDERLY_QUEUE_BLOCKED, SILENT_LOSS,
)  # fmt: skip
# lifecycles.evidence_class: every hop seen, some inferred, final state unknown
FULL = "FULL"
PARTIAL = "PARTIAL"
UNDETERMINABLE = "UNDETERMINABLE"
EVIDENCE_CLASSES = (FULL, PARTIAL, UNDETERMINABLE)
# lifecycles.attribution / dead_letters.attribution: how a row's group was established; "subscription" marks the
# silent consumptions the reconstruction infers from a group's other lifecycles on the topic
ATTRIBUTIONS = ("line", "config", "container", "thread", "client-log", "single-group", "subscription")
# unattributed.reason, with the words the run summary prints
UNATTRIBUTED_REASONS = {
    "no-evidence": "no group evidence for this instance and topic",
    "ambiguous": "several groups consume this topic in this instance",
    "conflict": "the instance's evidence disagrees",
    "grpc-groups": "the config declares several gRPC groups and none lists this topic",
}
# reconciliation.cause, with the words the run summary and the operator's pages print
RECONCILIATION_CAUSES = {
    "unattributed": "lines of this group's topic are not attributed (see unattributed/)",
    "no-counter": "no counter line for this minute although the collected sources show traffic",
    "not-collected": "the counter shows more than the collected sources: a source (client log, trace, dump) "
    "is not collected",
    "unexplained": "no known cause",
}


class CauseCode(enum.StrEnum):
    """failures.cause when no exception names it (docs/causes.md "Causes"), spelled once as ``EventType`` is."""

    RETURNED_NULL = "RETURNED_NULL"
    RECONSUME_LATER = "RECONSUME_LATER"
    CONSUME_TIMEOUT = "CONSUME_TIMEOUT"
    INVISIBLE_TIME_EXPIRED = "INVISIBLE_TIME_EXPIRED"
    UNKNOWN = "UNKNOWN"


# the codes with the words the pages and ``explain`` print
CAUSE_CODES = {
    CauseCode.RETURNED_NULL: "the listener returned null (4.x: consumeMessage return null; trace RETURNNULL)",
    CauseCode.RECONSUME_LATER: "the listener returned RECONSUME_LATER / FAILURE without an exception",
    CauseCode.CONSUME_TIMEOUT: "the listener ran longer than consumeTimeout",
    CauseCode.INVISIBLE_TIME_EXPIRED: "a POP / SimpleConsumer delivery was not acked before its invisible time ran out",
    CauseCode.UNKNOWN: "the evidence does not say why (failures.cause_evidence says what is missing)",
}
# failures.cause_evidence
CAUSE_EVIDENCE = {
    "stack-trace": "the exception and stack trace the client logged after the failure's line",
    "exception-message": "the exception's message printed in the failure's line, no class or stack trace (Python SDK)",
    "client-line": "the client's failure line (4.x consumeMessage return null, a timeout line)",
    "trace-status": "the message trace's SubAfter contextCode",
    "client-counter": "the client's failure counter for that minute with no failure line in the collected log",
    "invisible-expiry": "a POP / SimpleConsumer redelivery with no failure line: the invisible time ran out",
    "trace-cut": "the failure's line is there but its stack trace was cut (end of file, rotation)",
    "exception-not-logged": "the trace says EXCEPTION but the client's log with the stack trace is not collected",
    "no-client-evidence": "only the broker shows the failure (a retry copy, a send-back): no client line or trace",
}
# failures.failure_kind, lifecycles.failure_kind, dead_letters.failure_kind, failure_causes.failure_kind
OUTAGE = "outage"
POISON = "poison"
FLOW_CONTROL = "flow-control"
MIXED = "mixed"
UNKNOWN_KIND = "unknown"
FAILURE_KINDS = (OUTAGE, POISON, FLOW_CONTROL, MIXED, UNKNOWN_KIND)
# *.kind_rule / incidents.rule: which rule of docs/causes.md set the kind, with the words the pages print
# the rule that sets each kind
RULE_OF_KIND = {
    OUTAGE: "outage-window",
    POISON: "poison-every-delivery",
    FLOW_CONTROL: "flow-control-first-retry",
    MIXED: "mixed-kinds",
    UNKNOWN_KIND: "no-rule",
}
KIND_RULES = {
    RULE_OF_KIND[OUTAGE]: "many distinct messages of the group failed with this cause in one window, while the "
    "group's deliveries mostly failed",
    RULE_OF_KIND[POISON]: "every delivery of the message failed with a cause the group's other messages did not hit "
    "at that time",
    RULE_OF_KIND[FLOW_CONTROL]: "most of the group's messages failed once without an exception (or with a throttling "
    "cause) and were consumed on the first retry, for a sustained period",
    RULE_OF_KIND[MIXED]: "its failures are of more than one kind",
    RULE_OF_KIND[UNKNOWN_KIND]: "no rule fired",
}
# dead_letters.redrive_advice
SAFE = "safe"
OUTAGE_OPEN = "outage-open"
WILL_FAIL_AGAIN = "will-fail-again"
REVIEW = "review"
REDRIVE_ADVICE = {
    SAFE: "dead-lettered during an outage that has ended: re-driving it should succeed",
    OUTAGE_OPEN: "dead-lettered during an outage that is still open: re-drive after it ends",
    WILL_FAIL_AGAIN: "a poison message: it will fail again unless the consumer or the data changes",
    REVIEW: "the cause does not say whether a re-drive would succeed",
}
# incidents.state
OPEN = "open"
ENDED = "ended"
INCIDENT_STATES = (OPEN, ENDED)


# Event types about one consumer group: a row of these without a group is "unattributed" (DESIGN §6).
_E = EventType
GROUP_EVENT_TYPES = (
    _E.DELIVERED, _E.CONSUME_OK, _E.CONSUME_FAILED, _E.CONSUME_TIMEOUT, _E.SEND_BACK, _E.SEND_BACK_FAILED,
    _E.LOCAL_RETRY, _E.ORDERLY_SUSPENDED, _E.BROADCAST_DROPPED, _E.POP_DROPPED, _E.DEAD_LETTERED,
    _E.RETRY_ENQUEUED, _E.DIRECT_CONSUME,
)  # fmt: skip
# A group's per-minute counters (broker stats.log, 5.x broker_default.log, the client's own stats lines).
COUNTER_EVENT_TYPES = (_E.SEND_BACK_COUNT, _E.DLQ_COUNT, _E.DLQ_PUT_COUNT, _E.CONSUME_FAILED_COUNT)


# --------------------------------------------------------------------------------------------------------------
# the contract as DESIGN §4 shows it

DOC_BEGIN = "<!-- generated from contract.py: python -m rocketmq_retry.contract --write docs/DESIGN.md -->"
DOC_END = "<!-- end of generated contract -->"


def markdown() -> str:
    """DESIGN §4's tables: every table's columns in written order with their types, then the enumerated columns'
    values (tests/test_contract.py fails when the document's copy differs)."""
    code = ", ".join
    lines = ["| table | columns in written order (Spark SQL types) |", "|---|---|"]
    for table, schema in SCHEMAS.items():
        lines.append(f"| `{table}` | {code(f'`{name}` {dtype}' for name, dtype in schema)} |")
    enumerations = (
        ("`events.event_type`", EVENT_TYPES),
        ("`transitions.from_state`, `to_state`", HOP_STATES),
        ("`lifecycles.final_state`, `expected_final_state`", FINAL_STATES),
        ("`lifecycles.anomalies`", ANOMALY_CODES),
        ("`lifecycles.evidence_class`", EVIDENCE_CLASSES),
        ("`lifecycles.attribution`, `dead_letters.attribution`", ATTRIBUTIONS),
        ("`unattributed.reason`", tuple(UNATTRIBUTED_REASONS)),
        ("`reconciliation.cause`", tuple(RECONCILIATION_CAUSES)),
        ("`failures.cause` (besides a fingerprint)", tuple(CAUSE_CODES)),
        ("`failures.cause_evidence`", tuple(CAUSE_EVIDENCE)),
        ("`*.failure_kind`", FAILURE_KINDS),
        ("`*.kind_rule`, `incidents.rule`", tuple(KIND_RULES)),
        ("`dead_letters.redrive_advice`", tuple(REDRIVE_ADVICE)),
        ("`incidents.state`", INCIDENT_STATES),
    )
    lines += ["", "| column | values |", "|---|---|"]
    lines += [f"| {column} | {code(f'`{v}`' for v in values)} |" for column, values in enumerations]
    lines.append(f"\nThe key of `lifecycles` and `dead_letters` (one row each): {code(f'`{k}`' for k in KEY)}.")
    return "\n".join(lines)


def document_with_markdown(text: str) -> str:
    """``text`` (DESIGN.md) with what stands between DOC_BEGIN and DOC_END replaced by ``markdown()``."""
    start, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if start < 0 or end < start:
        raise ValueError(f"the document has no {DOC_BEGIN!r} … {DOC_END!r} block")
    return text[: start + len(DOC_BEGIN)] + "\n" + markdown() + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rocketmq_retry.contract", description=markdown.__doc__)
    parser.add_argument("--write", metavar="DESIGN_MD", help="replace the generated block of this file in place")
    args = parser.parse_args(argv)
    if not args.write:
        print(markdown())
        return 0
    path = pathlib.Path(args.write)
    path.write_text(document_with_markdown(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
