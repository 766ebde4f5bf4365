"""The revive log's checkpoints and acks as evidence (docs/reconstruction.md "POP checkpoints", §2.6, §5.4, §5.5).

A ``POP_CHECKPOINT`` event (ingest: one per offset of a broker ``PopCheckPoint``) names its message by topic, queue
and queue offset only; ``resolve_pops`` gives it (and each ``POP_ACK``) the UNIQ_KEY, reconsume_times and business
topic of the dumped stored copy at that place. ``pop_facts`` then says, per (group, msg_id, attempt), when the
message was popped and how that delivery ended, by RocketMQ 5.2.0's rules:

* every pop writes a checkpoint (``PopMessageProcessor#appendCheckPoint``: pt = pop time, it = invisible time,
  reviveTime = pt + it); one (topic, queue, offset) is popped once (a revived message is a new copy at a new
  offset of the pop retry topic, ``PopReviveService#reviveRetry``), so all checkpoints of one stored copy are one
  delivery: the first is the pop, each later one a ``ChangeInvisibleTime`` (``ChangeInvisibleTimeProcessor``: a
  new checkpoint with pt = the change's time and the new it, then ``#ackOrigin`` acks the old checkpoint);
* an ack record answers the checkpoint with the same group, topic, queue, offset and pop time
  (``AckMessageProcessor``; ``PopReviveService`` merges them by that key), so a checkpoint without one was
  revived at its reviveTime: the message became visible again, the delivery failed.

How the last checkpoint of a delivery ended: acked, a consumption (``pop_ok_ms`` = the ack record's own time);
not acked, a failure at ``pop_fail_ms``: for a SimpleConsumer the invisible time ran out at its reviveTime (§5.5,
INVISIBLE_TIME_EXPIRED; after a ``changeInvisibleDuration`` the changed time); for a push consumer the proxy turns
a nack into a ``ChangeInvisibleDuration`` with the retry policy's back-off (§5.4, the 5.x ``ConsumeService``'s
nack), so the failure is the replacing checkpoint's pt, the nack's time; a push delivery with a single
checkpoint that no ack answers was never acked nor nacked (a consume timeout, a crash): its invisible time ran out
at reviveTime. A pop whose copy's reconsume_times is past the group's last attempt is the proxy's dead-letter
forward (§5.4: popped, sent to the DLQ, acked), not a delivery: ``attempts.last_attempt`` caps it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.contract import EventType
from rocketmq_retry.logformats import MESSAGE_DUMP

KEY = list(contract.KEY)
POP_EVENTS = (EventType.POP_CHECKPOINT, EventType.POP_ACK)
_PLACE = ["topic", "queue_id", "queue_offset"]


def resolve_pops(ev: DataFrame) -> DataFrame:
    """POP_CHECKPOINT / POP_ACK rows with ``msg_id``, ``reconsume_times`` and ``original_topic`` of the stored copy
    at their (topic, queue_id, queue_offset): a business-topic or pop-retry-topic copy of a message dump, among
    the events read (D and its look-back). A place two messages claim (two brokers' queues of one topic: a
    checkpoint names its broker by name, a dump by address) resolves nothing; such rows keep no msg_id and are
    counted as unlinked, as every row without one is."""
    is_pop = F.col("event_type").isin(*POP_EVENTS)
    copies = (
        ev.where(
            ~is_pop
            & (F.col("source") == MESSAGE_DUMP)
            & F.col("msg_id").isNotNull()
            & F.col("queue_offset").isNotNull()
            & F.col("event_type").isin(EventType.PUBLISHED, EventType.RETRY_ENQUEUED)
        )
        .groupBy(*_PLACE)
        .agg(
            F.min("msg_id").alias("_mid"),
            F.size(F.collect_set("msg_id")).alias("_n"),
            F.min("reconsume_times").alias("_r"),
            F.min("original_topic").alias("_ot"),
        )
        .where(F.col("_n") == 1)
        .drop("_n")
    )
    pops = ev.where(is_pop).join(copies, _PLACE, "left")
    pops = pops.select(
        *[c for c in ev.columns if c not in ("msg_id", "reconsume_times", "original_topic")],
        F.col("_mid").alias("msg_id"),
        F.col("_r").alias("reconsume_times"),
        F.coalesce(F.col("original_topic"), F.col("_ot")).alias("original_topic"),
    )
    return ev.where(~is_pop).unionByName(pops.select(*ev.columns))


def _detail_ms(name: str) -> Column:
    return F.regexp_extract(F.coalesce(F.col("detail"), F.lit("")), rf"(?:^|;){name}=(\d+)", 1).try_cast("long")


def pop_facts(obs: DataFrame, simple_groups: tuple[str, ...] = ()) -> DataFrame:
    """Per (group, msg_id, attempt) popped: ``pop_at`` (the first checkpoint's pt), ``pop_fail_ms`` and
    ``pop_ok_ms`` (see the module's docstring), ``n_checkpoints`` and ``ev_pop`` (the checkpoints' and acks'
    event ids)."""
    ok = F.col("attempt").isNotNull() & F.col("consumer_group").isNotNull() & F.col("msg_id").isNotNull()
    place = [*KEY, "attempt", *_PLACE]
    cks = obs.where(ok & (F.col("kind") == "POP")).select(
        *place,
        F.col("t_ms").alias("pt"),
        _detail_ms("reviveTime").alias("revive_ms"),
        "event_id",
    )
    acks = (
        obs.where(ok & (F.col("kind") == "POPACK"))
        .select(*place, _detail_ms("pt").alias("pt"), F.col("t_ms").alias("ack_ms"), F.col("event_id").alias("ack_id"))
        .groupBy(*place, "pt")
        .agg(F.min("ack_ms").alias("ack_ms"), F.array_sort(F.collect_set("ack_id")).alias("ack_ids"))
    )
    simple = F.col("consumer_group").isin(*simple_groups) if simple_groups else F.lit(False)
    per = (
        cks.join(acks, [*place, "pt"], "left")
        .groupBy(*KEY, "attempt")
        .agg(
            F.min("pt").alias("pop_at"),
            F.size(F.collect_set("pt")).alias("n_checkpoints"),
            F.max_by(F.struct("pt", "revive_ms", "ack_ms"), F.struct("pt", "event_id")).alias("last"),
            F.array_sort(
                F.array_distinct(F.concat(F.collect_list("event_id"), F.flatten(F.collect_list("ack_ids"))))
            ).alias("ev_pop"),
        )
    )
    open_fail = (
        F.when(simple, F.col("last.revive_ms"))
        .when(F.col("n_checkpoints") > 1, F.col("last.pt"))
        .otherwise(F.col("last.revive_ms"))
    )
    return per.select(
        *KEY,
        "attempt",
        "pop_at",
        "n_checkpoints",
        F.when(F.col("last.ack_ms").isNull(), open_fail).alias("pop_fail_ms"),
        F.col("last.ack_ms").alias("pop_ok_ms"),
        "ev_pop",
    )


def with_pop_facts(af: DataFrame, pops: DataFrame) -> DataFrame:
    """``reconstruct.facts.attempt_facts`` with the pop facts of each attempt (an attempt only a pop shows too)."""
    return af.join(pops, [*KEY, "attempt"], "full_outer")
