"""The ``failures``, ``failure_causes`` and ``incidents`` tables of D and the cause columns of ``lifecycles`` and
``dead_letters`` (DESIGN §4, docs/causes.md), from the failures with their kinds (``reconstruct.incidents``)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry import contract as C
from rocketmq_retry.jobs.ingest.causes import normalised_sql
from rocketmq_retry.jobs.reconstruct.causes import CAUSE_DETAIL
from rocketmq_retry.jobs.reconstruct.facts import KEY
from rocketmq_retry.jobs.reconstruct.incidents import Kinds, rule_of

# the columns lifecycles_from's rows gain here, which the lifecycles and dead_letters writers select
LIFECYCLE_CAUSE_COLUMNS = (
    "causes", "last_cause", "failure_kind", "incident_id", "kind_rule", "cause_fingerprint", "cause", "app_frame",
    "redrive_advice",
)  # fmt: skip


def _ts(ms: str) -> Column:
    return F.timestamp_millis(F.col(ms))


def on_day(failures: DataFrame, written_keys: DataFrame, day_bounds: tuple[int, int]) -> DataFrame:
    """D's failures: failed on D, of a lifecycle D writes."""
    d0, d1 = day_bounds
    return failures.where((F.col("failed_ms") >= d0) & (F.col("failed_ms") < d1)).join(written_keys, KEY, "left_semi")


def failures_table(day_failures: DataFrame) -> DataFrame:
    return day_failures.select(
        *C.select_columns("failures", {"reconsume_times": F.col("attempt"), "failed_at": _ts("failed_ms")})
    )


def cause_text() -> Column:
    """ "RootCauseClass: message" as logged (the exception itself without a Caused by), else the code."""
    root = F.coalesce("root_cause_class", "exception_class")
    with_message = F.when(
        F.col("root_cause_message").isNotNull(), F.concat(root, F.lit(": "), F.col("root_cause_message"))
    ).otherwise(root)
    return F.coalesce(with_message, F.col("cause"))


def lifecycle_causes(kinds: Kinds, incidents: DataFrame) -> DataFrame:
    """Per lifecycle that failed: its causes in order of first failure, the last failure's cause (and what a dead
    letter shows of it), its kind and the re-drive advice (docs/causes.md "Kinds")."""
    f = kinds.failures
    ordered = F.array_sort(F.collect_list(F.struct("attempt", "cause")))
    last = F.struct(F.col("cause"), cause_text().alias("text"), F.col("app_frame"))
    per = f.groupBy(*KEY).agg(
        F.array_distinct(F.transform(ordered, lambda x: x["cause"])).alias("causes"),
        F.max_by(last, F.col("attempt")).alias("_last"),
    )
    ended = incidents.select("incident_id", F.col("ended_ms").isNotNull().alias("_ended"))
    out = per.join(kinds.lifecycles, KEY).join(ended, "incident_id", "left")
    kind = F.col("failure_kind")
    advice = (
        F.when((kind == C.OUTAGE) & F.coalesce(F.col("_ended"), F.lit(False)), F.lit(C.SAFE))
        .when(kind == C.OUTAGE, F.lit(C.OUTAGE_OPEN))
        .when(kind == C.POISON, F.lit(C.WILL_FAIL_AGAIN))
        .otherwise(F.lit(C.REVIEW))
    )
    return out.select(
        *KEY,
        "causes",
        F.col("_last.cause").alias("last_cause"),
        "failure_kind",
        "incident_id",
        "kind_rule",
        F.col("_last.cause").alias("cause_fingerprint"),
        F.col("_last.text").alias("cause"),
        F.col("_last.app_frame").alias("app_frame"),
        advice.alias("redrive_advice"),
    )


def with_lifecycle_causes(life: DataFrame, causes: DataFrame) -> DataFrame:
    """``life`` + LIFECYCLE_CAUSE_COLUMNS (null, and ``causes`` empty, for a lifecycle that never failed)."""
    out = life.drop(*(c for c in LIFECYCLE_CAUSE_COLUMNS if c in life.columns)).join(causes, KEY, "left")
    return out.withColumn("causes", F.coalesce(F.col("causes"), F.array().cast("array<string>")))


def incidents_table(kinds: Kinds, day_failures: DataFrame, life: DataFrame) -> DataFrame:
    """The incidents with failures on D, with the dead letters and recoveries among their messages."""
    of_day = day_failures.where(F.col("incident_id").isNotNull()).select("incident_id").distinct()
    members = kinds.failures.where(F.col("incident_id").isNotNull()).select("incident_id", *KEY).distinct()
    fate = life.select(*KEY, "final_state", F.col("incident_id").alias("_last_incident"))
    counts = (
        members.join(fate, KEY, "left")
        .groupBy("incident_id")
        .agg(
            F.count(
                F.when((F.col("final_state") == C.DEAD_LETTERED) & (F.col("_last_incident") == F.col("incident_id")), 1)
            ).alias("dead_letters"),
            F.count(F.when(F.col("final_state") == C.CONSUMED, 1)).alias("recovered"),
        )
    )
    return (
        kinds.incidents.join(of_day, "incident_id", "left_semi")
        .join(counts, "incident_id", "left")
        .select(
            *C.select_columns(
                "incidents",
                {
                    "started_at": _ts("started_ms"),
                    "last_failure_at": _ts("last_ms"),
                    "ended_at": _ts("ended_ms"),
                    "state": F.when(F.col("ended_ms").isNotNull(), F.lit(C.ENDED)).otherwise(F.lit(C.OPEN)),
                    "failures": F.col("failures").cast("long"),
                    "messages": F.col("messages").cast("long"),
                    "dead_letters": F.coalesce(F.col("dead_letters"), F.lit(0)).cast("long"),
                    "recovered": F.coalesce(F.col("recovered"), F.lit(0)).cast("long"),
                    "rule": F.lit(C.RULE_OF_KIND[C.OUTAGE]),
                },
            )
        )
    )


def failure_causes_table(day_failures: DataFrame, life: DataFrame, obs: DataFrame) -> DataFrame:
    """Per (group, cause) of D's failures: what it is, one example, how many failures, messages, dead letters
    (dead-lettered with it as their last cause) and recoveries (consumed after failing with it)."""
    fate = life.select(*KEY, "final_state", F.col("last_cause").alias("_last_cause"))
    f = day_failures.join(fate, KEY, "left")
    example = F.min_by(
        F.struct("event_id", *CAUSE_DETAIL),
        F.when(F.col("event_id").isNotNull(), F.struct("failed_ms", "msg_id", "attempt")),
    )
    dead = (F.col("final_state") == C.DEAD_LETTERED) & (F.col("_last_cause") == F.col("cause"))
    per = f.groupBy("consumer_group", F.col("cause").alias("fingerprint")).agg(
        example.alias("_x"),
        *[F.min_by(F.col(c), F.struct("failed_ms", "msg_id", "attempt")).alias(f"_first_{c}") for c in CAUSE_DETAIL],
        F.count(F.lit(1)).alias("failures"),
        F.size(F.collect_set("msg_id")).alias("messages"),
        F.size(F.collect_set(F.when(dead, F.col("msg_id")))).alias("dead_letters"),
        F.size(F.collect_set(F.when(F.col("final_state") == C.CONSUMED, F.col("msg_id")))).alias("recovered"),
        F.min("failed_ms").alias("first_ms"),
        F.max("failed_ms").alias("last_ms"),
        F.mode("failure_kind", deterministic=True).alias("failure_kind"),
        F.array_sort(F.collect_set("incident_id")).alias("incidents"),
    )
    where = obs.select(
        F.col("event_id").alias("_xid"), F.col("source_file").alias("_xfile"), F.col("line_no").alias("_xline")
    )
    per = per.join(where, F.col("_x.event_id") == F.col("_xid"), "left")

    def detail(c: str) -> Column:
        return F.coalesce(F.col(f"_x.{c}"), F.col(f"_first_{c}"))

    per = per.withColumn("_root_message", detail("root_cause_message"))
    return per.select(
        *C.select_columns(
            "failure_causes",
            {
                "exception_class": detail("exception_class"),
                "root_cause_class": detail("root_cause_class"),
                "normalised_message": F.expr(normalised_sql("_root_message")),
                "app_frame": detail("app_frame"),
                "example_message": F.col("_root_message"),
                "example_event_id": F.col("_x.event_id"),
                "example_source_file": F.col("_xfile"),
                "example_line_no": F.col("_xline"),
                "failures": F.col("failures").cast("long"),
                "messages": F.col("messages").cast("long"),
                "dead_letters": F.col("dead_letters").cast("long"),
                "recovered": F.col("recovered").cast("long"),
                "first_failure": _ts("first_ms"),
                "last_failure": _ts("last_ms"),
                "kind_rule": rule_of(F.col("failure_kind")),
            },
        )
    )
