"""The whole reconstruction transform for one day: events (D plus look-back) -> transitions, lifecycles,
dead_letters, reconciliation and unattributed (DESIGN §4), wiring the steps of the ``jobs/reconstruct/`` modules.

1. ``reconstruct.events.observations``: events conformed, identities linked, each row classified as evidence;
   stored in two parts, the publications no group is named on apart (``events.observation_parts``).
2. ``reconstruct.facts``: one aggregation per (group, msg_id, attempt), per message and per lifecycle.
3. ``reconstruct.tables.engine_tables``: the engine's answers, asked once per (group, reconsume_times, variant)
   on the driver and broadcast; ``reconstruct.attempts.attempt_plan`` joins them to every attempt.
4. ``reconstruct.transitions``, ``reconstruct.lifecycles``, ``reconstruct.dead_letters``, ``reconciliation``.
5. ``reconstruct.causes``: the cause of every failed attempt; ``reconstruct.incidents``: outages, poison messages
   and flow control (docs/causes.md); ``reconstruct.failure_tables``: failures, failure_causes, incidents.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_retry.config import Config
from rocketmq_retry.engine.model import ConsumeMode
from rocketmq_retry.jobs import lifecycle_schedule as sched
from rocketmq_retry.jobs.reconstruct import failure_tables as FT
from rocketmq_retry.jobs.reconstruct.attempts import attempt_plan
from rocketmq_retry.jobs.reconstruct.attribution import GrpcGroups, unattributed_of
from rocketmq_retry.jobs.reconstruct.causes import cause_facts, counter_minutes, failures_of
from rocketmq_retry.jobs.reconstruct.dead_letters import dead_letters_from
from rocketmq_retry.jobs.reconstruct.events import linked_events, observation_parts
from rocketmq_retry.jobs.reconstruct.facts import KEY, attempt_facts, lifecycle_rows, message_facts
from rocketmq_retry.jobs.reconstruct.incidents import kinds_of
from rocketmq_retry.jobs.reconstruct.lifecycles import Thresholds, lifecycles_from, lifecycles_table
from rocketmq_retry.jobs.reconstruct.pops import pop_facts, with_pop_facts
from rocketmq_retry.jobs.reconstruct.reconciliation import reconciliation
from rocketmq_retry.jobs.reconstruct.tables import engine_tables, subscriptions
from rocketmq_retry.jobs.reconstruct.transitions import TRANSITION_COLUMNS, transitions_from
from rocketmq_retry.logformats import timefmt


@dataclass
class Outputs:
    transitions: DataFrame
    lifecycles: DataFrame
    dead_letters: DataFrame
    reconciliation: DataFrame
    unattributed: DataFrame
    failures: DataFrame
    failure_causes: DataFrame
    incidents: DataFrame
    observations: DataFrame  # the linked, classified events that can be about a lifecycle, for the evidence report
    report: dict[str, object] = field(default_factory=dict)
    stored: list[DataFrame] = field(default_factory=list)  # the local checkpoints of this run's intermediates

    def release(self) -> None:
        """Release the stored intermediates: a session that outlives the run (tests, a notebook) keeps no
        checkpoint blocks per date it reconstructed."""
        from rocketmq_retry.spark_session import release_checkpoint

        # the later frames are built on the earlier ones: released first, while what they stand on still exists
        for frame in reversed(self.stored):
            release_checkpoint(frame)


def day_bounds(day: str, zone: str = "UTC") -> tuple[int, int]:
    """Epoch ms of D's start and end: dt=D is the calendar day D in the configuration's zone (as ingest writes it;
    the one day-bounds computation is ``logformats.timefmt.day_bounds_ms``, which the simulator uses too)."""
    return timefmt.day_bounds_ms(dt.date.fromisoformat(day), zone)


def _checkpoint(df: DataFrame) -> DataFrame:
    from pyspark import StorageLevel

    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def reconstruct(
    spark: SparkSession,
    events: DataFrame,
    config: Config,
    day: str,
    *,
    horizon_ms: int | None = None,
    thresholds: Thresholds | None = None,
    bindings: DataFrame | None = None,
) -> Outputs:
    """All outputs for ``day`` from ``events`` (D plus look-back rows; a ``dt`` column marks partitions,
    else the UTC date of event_time does). ``horizon_ms`` is the end of observation (default: the latest
    event_time read), after which expected hops are pending rather than missing. ``bindings``: what the
    instances' start-up and client-log lines say about their groups (``attribution.read_bindings``)."""
    th = thresholds or Thresholds()
    zone = config.timezone
    orderly = tuple(g for g in config.groups if sched.group_mode(config.group_policy(g)) == "ORDERLY")
    # A local checkpoint, not a cache: every later plan then starts from stored rows instead of carrying (and
    # matching against the cache, and printing for Spark's listeners) the linking and attribution plan; the linked
    # events are stored first, so that no plan sent to a Spark Connect server nests past its decoding limit
    linked = _checkpoint(linked_events(events, zone, tuple(config.groups)))
    # Two stored parts: the rows that can be about a lifecycle, which every aggregation per lifecycle and attempt
    # reads, and the publications no group is named on, which only the message facts, the silent consumptions and
    # the horizon read (``events.observation_parts``); ``obs`` is both.
    about, published = observation_parts(linked, day, orderly, bindings=bindings, grpc=GrpcGroups.of(config))
    about, published = _checkpoint(about), _checkpoint(published)
    obs = about.unionByName(published)
    bounds = day_bounds(day, zone)
    row = obs.agg(F.max("t_ms").alias("h"), F.max(F.when(~F.col("in_day"), F.col("t_ms"))).alias("before")).collect()[0]
    if horizon_ms is None:
        horizon_ms = int(row["h"] or bounds[1])
    # What the run before D saw: its end of observation is the latest event before D. A lifecycle not settled
    # by then is carried into D (and settled, or carried on, by D's evidence and D's horizon).
    carry_after_ms = min(int(row["before"]), bounds[0] - 1) if row["before"] is not None else bounds[0] - 1
    schedule, groups, summaries = engine_tables(spark, config, about)
    simple = tuple(g for g in config.groups if config.group_policy(g).consume_mode is ConsumeMode.SIMPLE)
    af = with_pop_facts(attempt_facts(about), pop_facts(about, simple))
    mf = message_facts(obs)
    # Stored as local checkpoints (rows), not cached (Spark's columnar in-memory copy, which encodes every column
    # of every row before the first read): 266.0 / 242.6 s on the 10 M-line day, the same tables (docs/scale.md,
    # "Checkpoints, not caches").
    lc = _checkpoint(lifecycle_rows(obs, mf, groups, subscriptions(spark, config, bindings), about=about))
    # checkpointed, not cached: the causes and kinds below join it several times, and analysing those joins over
    # the whole linking and engine plan each time costs minutes of planning
    plan = _checkpoint(attempt_plan(lc, af, schedule, horizon_ms))
    trans_full = _checkpoint(transitions_from(plan, lc))
    # checkpointed: every table below starts from its rows rather than from the whole plan behind them
    states = _checkpoint(lifecycles_from(lc, plan, trans_full, th, horizon_ms, carry_after_ms))
    failed = failures_of(plan, cause_facts(about), counter_minutes(about), simple)
    fates = states.select(*KEY, "final_state", "first_ms", "last_attempt", "last_next_expected_ms")
    kept: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        kept.append(_checkpoint(df))
        return kept[-1]

    kinds = kinds_of(failed, plan, fates, config.causes, horizon_ms, keep=keep)
    life = _checkpoint(FT.with_lifecycle_causes(states, FT.lifecycle_causes(kinds, kinds.incidents)))
    written = life.where(F.col("written"))
    keys = written.select(*KEY)
    transitions = trans_full.join(keys, KEY, "left_semi").select(*TRANSITION_COLUMNS)
    lifecycles = lifecycles_table(written, config)
    dead_letters = dead_letters_from(written, config, bounds, carry_after_ms)
    group_topics = written.select("consumer_group", F.col("original_topic").alias("topic")).distinct()
    plan_written = plan.join(keys, KEY, "left_semi")
    recon = reconciliation(spark, about, transitions, plan_written, groups, group_topics, bounds, horizon_ms)
    report = {"groups": [s.group for s in summaries], "horizon_ms": horizon_ms, "carry_after_ms": carry_after_ms}
    unattributed = unattributed_of(about.where(F.col("in_day")), config)
    day_failures = FT.on_day(kinds.failures, keys, bounds)
    return Outputs(
        transitions,
        lifecycles,
        dead_letters,
        recon,
        unattributed,
        FT.failures_table(day_failures),
        FT.failure_causes_table(day_failures, written, about),
        FT.incidents_table(kinds, day_failures, written),
        about,
        report,
        [linked, about, published, lc, plan, trans_full, states, *kept, life],
    )
