"""The cause of every failed delivery (docs/causes.md "Causes"): the exception the client logged with it, else what
the client line, the message trace's status, the client's failure counter or the consume mode says, else
``UNKNOWN`` with what is missing. Pure ``DataFrame -> DataFrame`` over the observations and the attempt plan.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry.contract import CauseCode, EventType, HopState
from rocketmq_retry.jobs.ingest.parse import LOG_FORMATS
from rocketmq_retry.jobs.ingest.patterns import CONTEXT_CODES
from rocketmq_retry.jobs.reconstruct.facts import KEY
from rocketmq_retry.jobs.reconstruct.reconciliation import counted_minute, stat_count
from rocketmq_retry.logformats import CLIENT_4X, CLIENT_5X

# The statuses the failure lines and the trace's SubAfter carry: statements.py ``status`` and the trace's
# contextCode, a ConsumeReturnType (ConsumeMessageConcurrentlyService.ConsumeRequest#run sets it).
_, _TIME_OUT, _EXCEPTION, _RETURNNULL, _FAILED = CONTEXT_CODES
MINUTE_MS = 60_000
# the client formats that print ConsumerStatsManager's [CONSUME_FAILED_TPS] minute line (L-C16)
_COUNTER_CLIENTS = (CLIENT_4X, CLIENT_5X)

# the cause columns of one failure, in the order ``failures`` and the tables built from it carry them
CAUSE_DETAIL = ("exception_class", "root_cause_class", "root_cause_message", "app_frame")


def _first(value: Column, cond: Column) -> Column:
    """``value`` of the earliest row (by time, then event_id) where ``cond`` holds."""
    return F.min_by(value, F.when(cond, F.struct("t_ms", "event_id")))


def cause_facts(obs: DataFrame) -> DataFrame:
    """Per (group, msg_id, attempt) with a consumer outcome or counter evidence: what each kind of evidence says
    about why the delivery failed."""
    kind, status, source = F.col("kind"), F.col("status_code"), F.col("source")
    fail = kind.isin("FAIL", "TIMEOUT", "SUSPEND", "DROP")
    line = fail & source.isin(*LOG_FORMATS)
    read = fail & F.col("fingerprint").isNotNull()
    exc_status = fail & (status == _EXCEPTION)
    return (
        obs.where(F.col("attempt").isNotNull() & F.col("consumer_group").isNotNull() & F.col("msg_id").isNotNull())
        .where(fail)
        .groupBy(*KEY, "attempt")
        .agg(
            _first(F.col("fingerprint"), read).alias("c_fingerprint"),
            *[_first(F.col(c), read).alias(f"c_{c}") for c in CAUSE_DETAIL],
            _first(F.col("event_id"), read).alias("c_event_id"),
            _first(source, read).alias("c_source"),
            # a line whose statement prints the exception (status EXCEPTION) but no exception was read from it
            _first(F.col("event_id"), exc_status & line).alias("x_line_event"),
            _first(source, exc_status & line).alias("x_line_source"),
            F.max(exc_status & ~line).alias("x_trace"),
            _first(F.col("event_id"), line & (status == _RETURNNULL)).alias("null_line_event"),
            _first(source, line & (status == _RETURNNULL)).alias("null_line_source"),
            # orderly: "consumeMessage Orderly return not OK" (L-C3), the listener returned
            # SUSPEND_CURRENT_QUEUE_A_MOMENT without throwing (an exception adds the L-C1 line)
            _first(F.col("event_id"), line & (kind == "SUSPEND")).alias("suspend_line_event"),
            _first(source, line & (kind == "SUSPEND")).alias("suspend_line_source"),
            _first(F.col("event_id"), line & (kind == "TIMEOUT")).alias("timeout_line_event"),
            _first(source, line & (kind == "TIMEOUT")).alias("timeout_line_source"),
            _first(F.struct(F.col("event_id"), status), ~line & status.isin(_RETURNNULL, _TIME_OUT, _FAILED)).alias(
                "trace_status"
            ),
            _first(source, ~line & status.isin(_RETURNNULL, _TIME_OUT, _FAILED)).alias("trace_source"),
            F.max(line).alias("any_line"),
        )
    )


def counter_minutes(obs: DataFrame) -> DataFrame:
    """(group, minute_ms): minutes in which a client's own failure counter (L-C16, [CONSUME_FAILED_TPS]) counted
    failures of the group: the only client-side evidence of a plain RECONSUME_LATER (§12)."""
    return (
        obs.where(
            (F.col("event_type") == EventType.CONSUME_FAILED_COUNT)
            & F.col("source").isin(*_COUNTER_CLIENTS)
            & F.col("consumer_group").isNotNull()
            & (F.coalesce(stat_count(), F.lit(0)) > 0)
        )
        .select("consumer_group", F.unix_millis(counted_minute()).alias("minute_ms"))
        .distinct()
    )


def minute_of(t: Column) -> Column:
    """The start (epoch ms) of the minute of ``t`` (epoch ms)."""
    return (F.floor(t / MINUTE_MS) * MINUTE_MS).cast("long")


def failed_at() -> Column:
    """When a failed attempt failed: its failure's own evidence, else the broker's copy of it, else when the
    delivery was due (an inferred failure).

    From the copy alone the failure is the copy's time less the engine's wait (for a SimpleConsumer, the configured
    invisible duration); a changed invisible time (``change_invisible_duration``, §5.5) makes that too early, so it
    is never put before the copy the failed delivery was made from (``prev_ready_at``): a failure cannot precede
    its delivery."""
    copy_arrival = F.greatest(F.col("ready_at") - F.coalesce(F.col("wait_ms"), F.lit(0)), F.col("prev_ready_at"))
    return F.coalesce(
        "failed_ms", "sendback_at", "sbf_at", "local_at", "sched_at", copy_arrival, "prev_next_expected_ms"
    ).cast("long")


def _code(name: CauseCode, evidence: str, event: Column | None = None, source: Column | None = None) -> Column:
    none = F.lit(None).cast("string")
    return F.struct(
        F.lit(name).alias("cause"),
        F.lit(evidence).alias("cause_evidence"),
        (source if source is not None else none).alias("source"),
        (event if event is not None else none).alias("event_id"),
    )


def failures_of(plan: DataFrame, facts: DataFrame, counters: DataFrame, simple_groups: tuple[str, ...]) -> DataFrame:
    """One row per failed attempt of the plan: ``failed_ms``, ``cause``, ``cause_evidence``, ``source``,
    ``event_id`` and the CAUSE_DETAIL columns (null for a code), by the precedence of docs/causes.md."""
    f = plan.where(F.col("outcome") == HopState.FAILED).select(*KEY, "attempt", failed_at().alias("failed_ms"))
    f = f.join(facts, [*KEY, "attempt"], "left")
    f = f.withColumn("minute_ms", minute_of(F.col("failed_ms"))).join(
        counters.withColumn("counted", F.lit(True)), ["consumer_group", "minute_ms"], "left"
    )
    simple = F.col("consumer_group").isin(*simple_groups) if simple_groups else F.lit(False)
    trace_code = F.col("trace_status.status_code")
    exception = F.struct(
        F.col("c_fingerprint").alias("cause"),
        # the Python SDK prints only str(e) in its line (§5.7): a message, no class, no trace
        F.when(F.col("c_exception_class").isNull(), F.lit("exception-message"))
        .otherwise(F.lit("stack-trace"))
        .alias("cause_evidence"),
        F.col("c_source").alias("source"),
        F.col("c_event_id").alias("event_id"),
    )
    trace_event = F.col("trace_status.event_id")
    trace_source = F.col("trace_source")
    chosen = (
        F.when(F.col("c_fingerprint").isNotNull(), exception)
        # an exception was thrown (a line or the trace says EXCEPTION) but not read: unknown, never a guess
        .when(
            F.col("x_line_event").isNotNull(),
            _code(CauseCode.UNKNOWN, "trace-cut", F.col("x_line_event"), F.col("x_line_source")),
        )
        .when(F.coalesce(F.col("x_trace"), F.lit(False)), _code(CauseCode.UNKNOWN, "exception-not-logged"))
        .when(
            F.col("null_line_event").isNotNull(),
            _code(CauseCode.RETURNED_NULL, "client-line", F.col("null_line_event"), F.col("null_line_source")),
        )
        .when(
            F.col("timeout_line_event").isNotNull(),
            _code(CauseCode.CONSUME_TIMEOUT, "client-line", F.col("timeout_line_event"), F.col("timeout_line_source")),
        )
        .when(
            F.col("suspend_line_event").isNotNull(),
            _code(CauseCode.RECONSUME_LATER, "client-line", F.col("suspend_line_event"), F.col("suspend_line_source")),
        )
        .when(trace_code == _RETURNNULL, _code(CauseCode.RETURNED_NULL, "trace-status", trace_event, trace_source))
        .when(trace_code == _TIME_OUT, _code(CauseCode.CONSUME_TIMEOUT, "trace-status", trace_event, trace_source))
        .when(trace_code == _FAILED, _code(CauseCode.RECONSUME_LATER, "trace-status", trace_event, trace_source))
        .when(
            ~F.coalesce(F.col("any_line"), F.lit(False)) & F.coalesce(F.col("counted"), F.lit(False)),
            _code(CauseCode.RECONSUME_LATER, "client-counter"),
        )
        # a SimpleConsumer logs nothing per message: a redelivery without a failure line is its invisible time
        # running out (SimpleConsumer#receive/ack, the broker's PopReviveService revives the unacked message)
        .when(
            simple & ~F.coalesce(F.col("any_line"), F.lit(False)),
            _code(CauseCode.INVISIBLE_TIME_EXPIRED, "invisible-expiry"),
        )
        .otherwise(_code(CauseCode.UNKNOWN, "no-client-evidence"))
    )
    is_exc = F.col("c_fingerprint").isNotNull()
    return f.select(
        *KEY,
        "attempt",
        "failed_ms",
        chosen.alias("_c"),
        *[F.when(is_exc, F.col(f"c_{c}")).alias(c) for c in CAUSE_DETAIL],
    ).select(*KEY, "attempt", "failed_ms", "_c.*", *CAUSE_DETAIL)
