"""Attribution: the consumer group of every line that does not name its own, from evidence or not at all.

Several consumer lines name no group (rocketmq-spring's ``consume message failed…``, the gRPC SDK's listener
exception, the 4.x ``BROADCASTING … drop it`` line). Every group subscribed to a topic gets its own copy of each
message, so "the message's only group seen elsewhere" is a guess, and a wrong one sends compensation to the wrong
group. A group-less line of an application instance (``events.instance``) gets its group, in this order, from:

1. the source's ``consumer_group`` in the config (set by ingest, ``attribution = config``);
2. the instance's rocketmq-spring ``running container`` lines: topic -> group (``container``);
3. the consumer thread that wrote the line, ``ConsumeMessageThread_<group>_<n>`` (``thread``), full or cut to its
   last characters by Spring Boot's ``[%15.15t]``, matched against the instance's groups;
4. the instance's RocketMQ client log (``[persistAll]``, rebalance lines): topic -> group (``client-log``);
5. for the gRPC SDK, the one gRPC group the config declares (or the one that lists the topic, ``single-group``).

Each source that has something to say narrows the candidates; the group is established when one is left, and the
first source that left one names the attribution. No candidate left (the sources disagree), several, or no
evidence at all: the line keeps no group, is counted in ``unattributed`` with its reason and the config key that
would settle it, and never reaches a lifecycle. docs/reconstruction.md, "Attribution", is the operator's view.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.engine.model import Protocol
from rocketmq_retry.jobs.ingest.parse import ANY_TOPIC
from rocketmq_retry.logformats import GRPC_CLIENT, PYTHON_CLIENT
from rocketmq_retry.warehouse.partitions import committed

# the gRPC SDKs' client logs: the one gRPC group of the config may settle their group-less lines
GRPC_FORMATS = (GRPC_CLIENT, PYTHON_CLIENT)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rocketmq_retry.config import Config

ATTRIBUTIONS = contract.ATTRIBUTIONS  # how a row's group was established (the data contract)
# Threads of the remoting client's consume services: ThreadFactoryImpl names them prefix + counter, and the prefix
# carries "<group>_" from client 4.9.3 (ConsumeMessageConcurrentlyService / ConsumeMessageOrderlyService
# constructors; the scheduled pools from 5.1.1). Older clients and the POP services write the prefix alone.
THREAD_PREFIXES = ("ConsumeMessageThread_", "ConsumeMessageScheduledThread_", "CleanExpireMsgScheduledThread_")
REASONS = contract.UNATTRIBUTED_REASONS
UNATTRIBUTED_COLUMNS = contract.columns("unattributed")
_EMPTY = "array<string>"


@dataclass(frozen=True)
class GrpcGroups:
    """What the config declares about gRPC consumer groups (rule 5)."""

    only: str | None = None  # the one gRPC group, when there is exactly one
    by_topic: dict[str, str] = field(default_factory=dict)  # topic -> the one gRPC group that lists it
    declared: int = 0  # how many gRPC groups the config declares

    @classmethod
    def of(cls, config: Config) -> GrpcGroups:
        grpc = sorted(g for g, c in config.groups.items() if c.protocol is Protocol.GRPC)
        listing: dict[str, list[str]] = {}
        for group in grpc:
            for topic in config.groups[group].topics:
                listing.setdefault(topic, []).append(group)
        by_topic = {t: gs[0] for t, gs in listing.items() if len(gs) == 1}
        return cls(grpc[0] if len(grpc) == 1 else None, by_topic, len(grpc))


def read_bindings(spark: SparkSession, warehouse: str, day: str, lookback_days: int) -> DataFrame | None:
    """``instance, kind, consumer_group, topic`` from ``bindings/dt=`` D and the ``lookback_days`` before it:
    an application that started days ago still maps today's lines (its start-up lines are in an earlier day)."""
    target = dt.date.fromisoformat(day)
    paths = [
        str(p)
        for k in range(lookback_days, -1, -1)
        if (p := committed(warehouse, "bindings", (target - dt.timedelta(days=k)).isoformat())).is_dir()
    ]
    if not paths:
        return None
    return spark.read.parquet(*paths).select("instance", "kind", "consumer_group", "topic").distinct()


def _thread_group(thread: Column) -> Column:
    """The group a full consume-thread name carries (``ConsumeMessageThread_<group>_<n>``), else null."""
    alternatives = "|".join(re.escape(p) for p in THREAD_PREFIXES)
    g = F.regexp_extract(thread, f"^(?:{alternatives})(.+)_\\d+$", 1)
    return F.when(g != "", g)


def _thread_candidates(thread: Column, groups: Column) -> Column:
    """The groups of ``groups`` whose consume-thread name ends with ``thread`` (Spring Boot's console pattern cuts
    the name to its last 15 characters), or null when the name says nothing about a group: no thread, no counter
    at the end, or a name without a group (``ConsumeMessageThread_18``, cut ``essageThread_18``, a gRPC
    ``RocketmqMessageConsumption-1-3``)."""
    n = F.regexp_extract(thread, r"_(\d+)$", 1)
    groupless = F.lit(False)
    for prefix in THREAD_PREFIXES:
        groupless = groupless | F.concat(F.lit(prefix), n).endswith(thread)
    full = _thread_group(thread)
    fits = F.filter(
        groups,
        lambda g: F.exists(
            F.array(*[F.lit(p) for p in THREAD_PREFIXES]), lambda p: F.concat(p, g, F.lit("_"), n).endswith(thread)
        ),
    )
    return (
        F.when(thread.isNull() | (n == "") | groupless, F.lit(None).cast(_EMPTY))
        .when(full.isNotNull(), F.array(full))
        .otherwise(fits)
    )


def _narrow(df: DataFrame, sets: list[tuple[str, str]]) -> DataFrame:
    """Add ``_cand`` and ``_how``: intersect the set columns that say something (not null) in order; ``_how``
    names the first that left exactly one group. An empty set says something too: none of the known groups fits.
    One column per step, so each expression refers to the previous step's value instead of repeating it."""
    df = df.withColumn("_cand", F.lit(None).cast(_EMPTY)).withColumn("_how", F.lit(None).cast("string"))
    cand, how = F.col("_cand"), F.col("_how")
    for values, name in sets:
        v = F.col(values)
        df = df.withColumn(
            "_cand", F.when(v.isNull(), cand).when(cand.isNull(), v).otherwise(F.array_intersect(cand, v))
        ).withColumn("_how", F.when(how.isNull() & (F.size(cand) == 1), F.lit(name)).otherwise(how))
    return df


def _known(values: Column) -> Column:
    """A binding set, or null when the bindings say nothing (no line of the instance names the topic)."""
    return F.when(F.size(values) > 0, values)


def attribute(ev: DataFrame, bindings: DataFrame | None, grpc: GrpcGroups, need: Column) -> DataFrame:
    """Fill ``consumer_group`` and ``attribution`` of the rows selected by ``need`` (no group of their own) where
    the evidence establishes one; every other such row gets ``unattributed`` (reason code) and ``candidates``.

    ``ev`` has ``consumer_group`` (null where unknown), ``attribution`` (``config`` or null), ``instance``,
    ``source``, ``thread``, ``topic``, ``original_topic``. Rows with a group keep it (``attribution`` defaults to
    ``line``: the line, its topic or its trace record named the group). One pass: the small binding tables are
    joined to every row and read only where ``need`` holds (splitting the rows and uniting them again would plan
    and compute everything upstream twice).
    """
    cols = ev.columns
    empty = F.array().cast(_EMPTY)
    ev = ev.withColumn("_need", F.coalesce(need, F.lit(False))).withColumn(
        "_topic", F.coalesce(F.col("original_topic"), F.col("topic"))
    )
    if bindings is not None:
        per_topic = bindings.groupBy("instance", "topic").agg(
            F.array_sort(F.collect_set(F.when(F.col("kind") == "container", F.col("consumer_group")))).alias("_c"),
            F.array_sort(F.collect_set(F.when(F.col("kind") == "client-log", F.col("consumer_group")))).alias("_l"),
        )
        per_instance = bindings.groupBy("instance").agg(
            F.array_sort(F.collect_set("consumer_group")).alias("_u"),
            # the groups a line names for every topic of the instance (ANY_TOPIC: the gRPC consume-service line)
            F.array_sort(F.collect_set(F.when(F.col("topic") == ANY_TOPIC, F.col("consumer_group")))).alias("_a"),
        )
        ev = ev.join(F.broadcast(per_topic.withColumnRenamed("topic", "_topic")), ["instance", "_topic"], "left").join(
            F.broadcast(per_instance), "instance", "left"
        )
    else:
        ev = ev.select("*", empty.alias("_c"), empty.alias("_l"), empty.alias("_u"), empty.alias("_a"))
    thread = F.nullif(F.trim(F.col("thread")), F.lit(""))
    ev = ev.select(
        *[c for c in ev.columns if c not in ("_c", "_l", "_u", "_a")],
        F.when(F.col("_need"), _known(F.col("_c"))).alias("_c"),
        F.when(
            F.col("_need"), _known(F.array_union(F.coalesce(F.col("_l"), empty), F.coalesce(F.col("_a"), empty)))
        ).alias("_l"),
        F.when(F.col("_need"), _thread_candidates(thread, F.coalesce(F.col("_u"), empty))).alias("_th"),
    )
    ev = _narrow(ev, [("_c", "container"), ("_th", "thread"), ("_l", "client-log")])
    by_topic = F.create_map(*[F.lit(x) for kv in sorted(grpc.by_topic.items()) for x in kv]) if grpc.by_topic else None
    single = F.coalesce(
        F.element_at(by_topic, F.col("_topic")) if by_topic is not None else F.lit(None).cast("string"),
        F.lit(grpc.only).cast("string"),
    )
    need_ = F.col("_need")
    is_grpc = F.col("source").isin(*GRPC_FORMATS)
    established = need_ & (F.size(F.col("_cand")) == 1)
    grpc_single = need_ & F.col("_cand").isNull() & is_grpc & single.isNotNull()
    bound = F.col("_c").isNotNull() | F.col("_l").isNotNull()
    unplaced = (
        F.when(~need_ | established | grpc_single, F.lit(None))
        .when(F.col("_cand").isNull() & is_grpc & F.lit(grpc.declared > 1), F.lit("grpc-groups"))
        .when(F.col("_cand").isNull(), F.lit("no-evidence"))
        # a thread name that fits none of the instance's groups, with no binding for the topic: nothing to go on
        .when((F.size(F.col("_cand")) == 0) & ~bound, F.lit("no-evidence"))
        .when(F.size(F.col("_cand")) == 0, F.lit("conflict"))
        .otherwise(F.lit("ambiguous"))
    )
    own = F.col("consumer_group").isNotNull()
    return ev.select(
        *[c for c in cols if c not in ("consumer_group", "attribution")],
        F.when(established, F.col("_cand")[0])
        .when(grpc_single, single)
        .otherwise(F.col("consumer_group"))
        .alias("consumer_group"),
        F.when(own, F.coalesce(F.col("attribution"), F.lit("line")))
        .when(established, F.col("_how"))
        .when(grpc_single, F.lit("single-group"))
        .alias("attribution"),
        unplaced.alias("unattributed"),
        F.when(need_, F.coalesce(F.col("_cand"), empty)).otherwise(empty).alias("candidates"),
    )


def glob_regex(pattern: str) -> str:
    """A Java/Python regex for a source's path glob as ``glob.glob(recursive=True)`` reads it (``**`` any
    folders, ``*``/``?`` within one name, ``[...]`` a set, ``{ds}`` a date)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern.startswith("{ds}", i):
            out.append(r"\d{4}-\d{2}-\d{2}")
            i += 4
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "^" + "".join(out) + "$"


def _fix(config: Config) -> Column:
    """The config key that would settle a row's group: its source entry's ``consumer_group`` (the first entry of
    its format whose glob matches the file, as ingest reads it); for gRPC also ``groups.<g>.topics``."""
    grpc_hint = " (or groups.<group>.topics for the gRPC groups)"
    fix: Column = F.lit("sources[].consumer_group of the entry that reads this file")
    for index in reversed(range(len(config.sources))):  # the first match is the outermost `when`
        entry = config.sources[index]
        key = f"sources[{index}].consumer_group" + (grpc_hint if entry.format in GRPC_FORMATS else "")
        cond = (F.col("source") == entry.format) & F.col("source_file").rlike(glob_regex(entry.path))
        fix = F.when(cond, F.lit(key)).otherwise(fix)
    return fix


def unattributed_of(obs: DataFrame, config: Config) -> DataFrame:
    """``unattributed/dt=D``: the rows no evidence gave a group, counted per file, event type, topic and reason,
    with the candidates that were left and the config key that would settle them."""
    rows = obs.where(F.col("unattributed").isNotNull())
    return (
        rows.groupBy(
            "source",
            "source_file",
            "instance",
            "event_type",
            F.coalesce(F.col("original_topic"), F.col("topic")).alias("topic"),
            F.col("unattributed").alias("reason"),
            "candidates",
        )
        .agg(F.count(F.lit(1)).alias("lines"), F.min("line_no").alias("example_line_no"))
        .withColumn(
            "fix",
            F.when(
                F.col("reason") == "ambiguous",
                # one instance runs several of the candidates: a key on the source settles it only when the
                # groups' lines are in files of their own
                F.concat(_fix(config), F.lit(" (if this file holds one candidate group's lines only)")),
            ).otherwise(_fix(config)),
        )
        .select(*UNATTRIBUTED_COLUMNS)
    )
