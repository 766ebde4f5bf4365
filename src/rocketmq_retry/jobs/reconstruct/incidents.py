"""Outages, poison messages and retry used as flow control (docs/causes.md): the rules that give every failure, and
every lifecycle, its kind. Pure ``DataFrame -> DataFrame`` over the failures (``reconstruct.causes.failures_of``)
and the attempt plan; each threshold is a ``causes.*`` key, each kind names the rule that set it (``KIND_RULES``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rocketmq_retry import contract as C
from rocketmq_retry.config import CausesConfig
from rocketmq_retry.contract import HopState
from rocketmq_retry.jobs.reconstruct.causes import MINUTE_MS, minute_of
from rocketmq_retry.jobs.reconstruct.facts import KEY

# the code of a cause the evidence did not establish: never part of an incident or a poison verdict
_UNKNOWN_CAUSE = C.CauseCode.UNKNOWN


@dataclass(frozen=True)
class Kinds:
    """What the rules found: each failure's kind and incident, each lifecycle's, and the incidents."""

    failures: DataFrame  # failures + failure_kind, incident_id, kind_rule
    lifecycles: DataFrame  # KEY, failure_kind, incident_id, kind_rule
    incidents: DataFrame  # the incidents table's columns (every incident, of D or not) + started_ms, last_ms


def attempt_times(plan: DataFrame, failures: DataFrame, fates: DataFrame) -> DataFrame:
    """Every delivery with a known outcome: ``at`` (the failure's time, else the consumption's, else when it was
    due; a first delivery of a silent consumption, when it was published) and ``failed``. A lifecycle consumed
    silently after its last failure (its retry's success is logged nowhere, docs/reconstruction.md "Final
    states") gets that consumption at the time its redelivery was due."""
    done = plan.where(F.col("outcome").isNotNull()).select(
        *KEY,
        "attempt",
        (F.col("outcome") == HopState.FAILED).alias("failed"),
        F.coalesce("ok_at", "seen_at", "prev_next_expected_ms").cast("long").alias("_at"),
    )
    first = fates.select(*KEY, F.col("first_ms").alias("_first"))
    done = (
        done.join(failures.select(*KEY, "attempt", "failed_ms"), [*KEY, "attempt"], "left")
        .join(first, KEY, "left")
        .withColumn("at", F.coalesce("failed_ms", "_at", F.when(F.col("attempt") == 0, F.col("_first"))))
        .select(*KEY, "attempt", "failed", "at")
    )
    silent = (
        fates.where((F.col("final_state") == C.CONSUMED) & F.col("last_next_expected_ms").isNotNull())
        .join(done.where(~F.col("failed")), KEY, "left_anti")
        .select(
            *KEY,
            (F.col("last_attempt") + 1).cast("int").alias("attempt"),
            F.lit(False).alias("failed"),
            F.col("last_next_expected_ms").cast("long").alias("at"),
        )
    )
    return done.unionByName(silent).where(F.col("at").isNotNull())


def minute_stats(times: DataFrame) -> DataFrame:
    """Per (group, minute_ms): deliveries and failed deliveries."""
    return times.groupBy("consumer_group", minute_of(F.col("at")).alias("minute_ms")).agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("failed").cast("int")).alias("n_failed")
    )


def _minutes_between(start: Column, end: Column) -> Column:
    return F.explode(F.sequence(minute_of(start), minute_of(end), F.lit(MINUTE_MS).cast("long")))


def _sessions(df: DataFrame, by: tuple[str, ...], t: str, gap_ms: int) -> DataFrame:
    """``df`` + ``session``: rows of one ``by`` closer in ``t`` than ``gap_ms`` to the previous share a session."""
    w = Window.partitionBy(*by).orderBy(t, *(c for c in df.columns if c in ("msg_id", "attempt")))
    starts = F.coalesce(F.col(t) - F.lag(t).over(w) > gap_ms, F.lit(True)).cast("int")
    return df.withColumn("session", F.sum(starts).over(w.rowsBetween(Window.unboundedPreceding, 0)))


def incidents_of(failures: DataFrame, times: DataFrame, cfg: CausesConfig, horizon_ms: int) -> DataFrame:
    """Rule ``outage-window``: per group and cause, windows of failures closer than ``incident_gap`` (and windows
    with no consumption of the group between them: a low-traffic group fails seldom, but recovers not at all until
    the dependency is back) in which at least ``outage_min_messages`` distinct messages failed while the group's
    failed share of deliveries was at least ``outage_failure_share``. Ended when the group consumed a message
    after the last failure and that failure is older than ``incident_gap`` at the end of observation."""
    gap = cfg.incident_gap_ms
    stats = minute_stats(times)
    known = failures.where(F.col("failed_ms").isNotNull() & (F.col("cause") != _UNKNOWN_CAUSE))
    by_cause = ("consumer_group", "cause")
    runs = (
        _sessions(known, by_cause, "failed_ms", gap)
        .groupBy(*by_cause, "session")
        .agg(
            F.min("failed_ms").alias("started_ms"),
            F.max("failed_ms").alias("last_ms"),
            F.count(F.lit(1)).alias("failures"),
            F.collect_set("msg_id").alias("msgs"),
        )
        .withColumn("next_ms", F.lead("started_ms").over(Window.partitionBy(*by_cause).orderBy("session")))
    )
    # the group's consumptions in the whole minutes between a run and the next
    between = (
        runs.where(F.col("next_ms").isNotNull())
        .select(
            *by_cause,
            "session",
            _minutes_between(F.col("last_ms") + MINUTE_MS, F.col("next_ms") - MINUTE_MS).alias("minute_ms"),
        )
        .where(F.col("minute_ms") > F.col("last_ms"))
        .join(stats, ["consumer_group", "minute_ms"])
        .groupBy(*by_cause, "session")
        .agg(F.sum(F.col("n") - F.col("n_failed")).alias("ok_between"))
    )
    order = Window.partitionBy(*by_cause).orderBy("session")
    joins_next = F.col("next_ms").isNotNull() & (F.coalesce(F.col("ok_between"), F.lit(0)) == 0)
    runs = runs.join(between, [*by_cause, "session"], "left").withColumn("_joins", joins_next)
    starts = F.coalesce(~F.lag("_joins").over(order), F.lit(True)).cast("int")
    runs = runs.withColumn("window", F.sum(starts).over(order.rowsBetween(Window.unboundedPreceding, 0)))
    windows = (
        runs.groupBy(*by_cause, F.col("window").alias("session"))
        .agg(
            F.min("started_ms").alias("started_ms"),
            F.max("last_ms").alias("last_ms"),
            F.sum("failures").alias("failures"),
            F.size(F.array_distinct(F.flatten(F.collect_list("msgs")))).alias("messages"),
        )
        .where(F.col("messages") >= cfg.outage_min_messages)
    )
    # the group's failed share of deliveries over the window's minutes
    share = (
        windows.select(
            "consumer_group",
            "cause",
            "session",
            _minutes_between(F.col("started_ms"), F.col("last_ms")).alias("minute_ms"),
        )
        .join(stats, ["consumer_group", "minute_ms"])
        .groupBy("consumer_group", "cause", "session")
        .agg((F.sum("n_failed") / F.sum("n")).alias("failure_share"))
    )
    found = windows.join(share, ["consumer_group", "cause", "session"]).where(
        F.col("failure_share") >= cfg.outage_failure_share
    )
    consumed = times.where(~F.col("failed")).select("consumer_group", F.col("at").alias("ok_ms"))
    settled = F.col("last_ms") + gap < horizon_ms
    ends = (
        F.broadcast(found.select("consumer_group", "cause", "session", "last_ms"))
        .join(consumed, "consumer_group")
        .where(settled & (F.col("ok_ms") > F.col("last_ms")))
        .groupBy("consumer_group", "cause", "session")
        .agg(F.min("ok_ms").alias("ended_ms"))
    )
    incident_id = F.substring(
        F.sha2(F.concat_ws("\u0000", "consumer_group", "cause", F.col("started_ms").cast("string")), 256), 1, 32
    )
    return found.join(ends, ["consumer_group", "cause", "session"], "left").select(
        "consumer_group",
        incident_id.alias("incident_id"),
        F.col("cause").alias("fingerprint"),
        "started_ms",
        "last_ms",
        "ended_ms",
        "failures",
        "messages",
        "failure_share",
    )


def _flow_cause(cfg: CausesConfig) -> Column:
    """RECONSUME_LATER, or an exception whose class or message the throttle pattern finds."""
    text = F.concat_ws(" ", "exception_class", "root_cause_class", "root_cause_message")
    return (F.col("cause") == C.CauseCode.RECONSUME_LATER) | F.coalesce(text.rlike(cfg.throttle_pattern), F.lit(False))


def flow_control_lifecycles(failures: DataFrame, times: DataFrame, cfg: CausesConfig) -> DataFrame:
    """Rule ``flow-control-first-retry``: the lifecycles that failed once with a flow cause and were consumed on
    the first retry, first delivered in a period of at least ``flow_control_min_minutes`` of minutes in which at
    least ``flow_control_share`` of the group's first deliveries did so. Returns KEY."""
    per_life = failures.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("n_fail"),
        F.max("attempt").alias("max_fail"),
        F.max(_flow_cause(cfg)).alias("flow"),
    )
    ok_first_retry = times.where((F.col("attempt") == 1) & ~F.col("failed")).select(*KEY)
    once = (
        per_life.where((F.col("n_fail") == 1) & (F.col("max_fail") == 0) & F.col("flow"))
        .join(ok_first_retry, KEY, "left_semi")
        .withColumn("once", F.lit(True))
        .select(*KEY, "once")
    )
    first = times.where(F.col("attempt") == 0).select(*KEY, minute_of(F.col("at")).alias("minute_ms"))
    first = first.join(once, KEY, "left")
    minutes = (
        first.groupBy("consumer_group", "minute_ms")
        .agg((F.count(F.col("once")) / F.count(F.lit(1))).alias("share"), F.count(F.col("once")).alias("n"))
        .where((F.col("share") >= cfg.flow_control_share) & (F.col("n") > 0))
    )
    periods = (
        _sessions(minutes, ("consumer_group",), "minute_ms", cfg.incident_gap_ms)
        .withColumn(
            "span",
            (
                F.max("minute_ms").over(Window.partitionBy("consumer_group", "session"))
                - F.min("minute_ms").over(Window.partitionBy("consumer_group", "session"))
            )
            / MINUTE_MS
            + 1,
        )
        .where(F.col("span") >= cfg.flow_control_min_minutes)
        .select("consumer_group", "minute_ms")
    )
    return (
        first.where(F.col("once").isNotNull()).join(periods, ["consumer_group", "minute_ms"], "left_semi").select(*KEY)
    )


def poison_lifecycles(
    failures: DataFrame, times: DataFrame, fates: DataFrame, incidents: DataFrame, cfg: CausesConfig
) -> DataFrame:
    """Rule ``poison-every-delivery`` (docs/causes.md "Poison messages"): every delivery with a known outcome failed,
    at least ``poison_min_deliveries`` times, all with one exception (a code such as RECONSUME_LATER says nothing
    of the message), the message was not consumed (``fates``: KEY, final_state), and

    - the cause is the message's own: none of its failures is in, or within ``incident_gap`` of, an incident of
      that cause (``incidents``), and no message of the group that failed with it was consumed later (a cause
      messages recover from is transient);
    - the group otherwise succeeded: within ``incident_gap`` of its failures, the group's other deliveries include
      a consumption and fail less often than ``outage_failure_share`` (a dependency that is down fails every
      message; bad data fails one).

    Returns KEY."""
    outcomes = times.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("n_known"), F.max((~F.col("failed")).cast("int")).alias("any_ok")
    )
    per_life = failures.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("n_fail"),
        F.size(F.collect_set("cause")).alias("n_causes"),
        F.max("cause").alias("cause"),
        F.max(F.col("incident_id").isNotNull().cast("int")).alias("in_incident"),
    )
    candidates = (
        per_life.join(outcomes, KEY)
        .join(fates.where(F.col("final_state") == C.CONSUMED), KEY, "left_anti")
        .where(
            (F.col("n_fail") >= cfg.poison_min_deliveries)
            & (F.col("n_fail") == F.col("n_known"))
            & (F.col("any_ok") == 0)
            & (F.col("n_causes") == 1)
            & ~F.col("cause").isin(*C.CauseCode)
            & (F.col("in_incident") == 0)
        )
        .select(*KEY, "cause")
    )
    gap = cfg.incident_gap_ms
    consumed = fates.where(F.col("final_state") == C.CONSUMED).select(*KEY)
    transient = failures.join(consumed, KEY, "left_semi").select("consumer_group", "cause").distinct()
    windows = F.broadcast(
        incidents.select("consumer_group", F.col("fingerprint").alias("cause"), "started_ms", "last_ms")
    )
    near_incident = (
        failures.join(candidates, [*KEY, "cause"], "left_semi")
        .join(windows, ["consumer_group", "cause"])
        .where(F.col("failed_ms").between(F.col("started_ms") - gap, F.col("last_ms") + gap))
        .select(*KEY)
    )
    candidates = (
        candidates.join(transient, ["consumer_group", "cause"], "left_anti")
        .join(near_incident, KEY, "left_anti")
        .select(*KEY)
    )
    # the minutes around each candidate's failures, and what the group's other lifecycles did in them
    around = (
        failures.join(candidates, KEY, "left_semi")
        .select(*KEY, _minutes_between(F.col("failed_ms") - gap, F.col("failed_ms") + gap).alias("minute_ms"))
        .distinct()
    )
    others = minute_stats(times.join(candidates, KEY, "left_anti"))
    quiet = (
        around.join(others, ["consumer_group", "minute_ms"])
        .groupBy(*KEY)
        .agg((F.sum("n_failed") / F.sum("n")).alias("share"), (F.sum("n") - F.sum("n_failed")).alias("n_ok"))
        .where((F.col("share") < cfg.outage_failure_share) & (F.col("n_ok") > 0))
    )
    return candidates.join(quiet, KEY, "left_semi")


def kinds_of(
    failures: DataFrame,
    plan: DataFrame,
    fates: DataFrame,
    cfg: CausesConfig,
    horizon_ms: int,
    keep: Callable[[DataFrame], DataFrame] = lambda df: df,
) -> Kinds:
    """Every failure's and lifecycle's kind (docs/causes.md "Kinds") and the incidents; ``fates``: per lifecycle
    its final_state, first_ms, last_attempt and last_next_expected_ms. ``keep`` materialises the frames each rule
    reads several times (the job checkpoints them: planning the rules over their whole lineage, repeated in every
    join, costs more than the rules)."""
    failures = keep(failures)
    times = keep(attempt_times(plan, failures, fates))
    incidents = keep(incidents_of(failures, times, cfg, horizon_ms))
    windows = F.broadcast(incidents.select("consumer_group", "fingerprint", "incident_id", "started_ms", "last_ms"))
    in_incident = (
        failures.alias("f")
        .join(
            windows.alias("i"),
            (F.col("f.consumer_group") == F.col("i.consumer_group"))
            & (F.col("f.cause") == F.col("i.fingerprint"))
            & F.col("f.failed_ms").between(F.col("i.started_ms"), F.col("i.last_ms")),
        )
        .select(*(F.col(f"f.{k}") for k in KEY), F.col("f.attempt"), F.col("i.incident_id"))
    )
    f = keep(failures.join(in_incident, [*KEY, "attempt"], "left"))
    flow = flow_control_lifecycles(f, times, cfg).withColumn("_flow", F.lit(True))
    poison = poison_lifecycles(f, times, fates, incidents, cfg).withColumn("_poison", F.lit(True))
    kind = (
        F.when(F.col("incident_id").isNotNull(), C.OUTAGE)
        .when(F.col("_flow").isNotNull(), C.FLOW_CONTROL)
        .when(F.col("_poison").isNotNull(), C.POISON)
        .otherwise(C.UNKNOWN_KIND)
    )
    f = f.join(flow, KEY, "left").join(poison, KEY, "left").withColumn("failure_kind", kind).drop("_flow", "_poison")
    f = keep(f.withColumn("kind_rule", rule_of(F.col("failure_kind"))))
    return Kinds(f, lifecycle_kinds(f), incidents)


def lifecycle_kinds(failures: DataFrame) -> DataFrame:
    """Per lifecycle that failed: its failures' kind when they all have one, else ``mixed``; its last failure's
    incident."""
    lives = failures.groupBy(*KEY).agg(
        F.array_sort(F.collect_set("failure_kind")).alias("_kinds"),
        F.max_by(F.col("incident_id"), F.col("attempt")).alias("incident_id"),
    )
    life_kind = F.when(F.size("_kinds") == 1, F.col("_kinds")[0]).otherwise(F.lit(C.MIXED))
    return lives.select(*KEY, life_kind.alias("failure_kind"), "incident_id").withColumn(
        "kind_rule", rule_of(F.col("failure_kind"))
    )


def rule_of(kind: Column) -> Column:
    """The KIND_RULES name of the rule that sets ``kind``."""
    out: Column = F.lit(None).cast("string")
    for k, rule in C.RULE_OF_KIND.items():
        out = F.when(kind == k, F.lit(rule)).otherwise(out)
    return out
