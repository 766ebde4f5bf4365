"""A ``message-dump`` line of the revive log topic ``rmq_sys_REVIVE_LOG_<cluster>`` (§2.6): its body is the broker's
``PopCheckPoint`` (tag ``ck``), ``AckMsg`` (``ack``) or ``BatchAckMsg`` (``bAck``) as JSON, and it becomes one
``POP_CHECKPOINT`` event per message offset the checkpoint covers, or one ``POP_ACK`` per acked offset
(docs/ingest.md "POP checkpoints"). Spark SQL text over the dump line's parsed JSON ``j`` and the body parsed
with ``BODY_SCHEMA`` into ``rv``; built-ins only.

RocketMQ 5.2.0 (``store/.../pop/PopCheckPoint.java``, ``AckMsg.java``, ``BatchAckMsg.java``; the JSON names are
their ``@JSONField`` names):

* ck: ``c`` group, ``t`` topic (the business topic, or the pop retry topic for a pop of a revived copy), ``q``
  queue, ``so`` the pop's start offset, ``n`` how many messages the pop returned from that queue, ``d`` each one's
  offset minus ``so`` (``PopMessageProcessor#appendCheckPoint``: ``ck.addDiff(msgQueueOffset - offset)``; a
  checkpoint without ``d`` is the old form, offsets ``so .. so + n - 1``: ``PopCheckPoint#ackOffsetByIndex``),
  ``pt`` pop time, ``it`` invisible time, ``reviveTime`` = pt + it (``getReviveTime``, serialised by fastjson),
  ``bm`` the ack bitmap (always written 0: the broker keeps acks as separate records), ``ro`` revive offset,
  ``bn`` broker name. ``ChangeInvisibleTimeProcessor#appendCheckPoint`` writes a ck of one offset (n = 1,
  d = [0]) with pt = the time of the change and it = the new invisible time, and ``#ackOrigin`` acks the old one.
* ack: ``ao`` the acked offset, ``so``, ``c``, ``t``, ``q``, ``pt`` (the pop time of the checkpoint it answers:
  ``PopReviveService`` pairs them by topic, group, queue, start offset, pop time and broker); bAck: ``aol`` the
  acked offsets. The record's ``bornTimestamp`` is when the broker wrote it (``AckMessageProcessor``,
  ``ChangeInvisibleTimeProcessor#ackOrigin``: ``setBornTimestamp(System.currentTimeMillis())``): the ack's own
  time (later, when ``enablePopBufferMerge`` holds acks in memory first); its store time is the timer's, later.

Event columns: ``consumer_group`` = c, ``topic`` = t, ``queue_id`` = q, ``queue_offset``, ``broker`` = bn, ``tags`` =
the record's tag; a ck's ``event_time`` is pt and its ``detail`` ``it=<ms>;reviveTime=<ms>;so=<so>``; an ack's
``event_time`` is its bornTimestamp and its ``detail`` ``pt=<ms>;so=<so>`` (the checkpoint it answers). ``msg_id``
stays null: the reconstruction resolves it by (topic, queue_id, queue_offset) against the dumped stored copies.
"""

from __future__ import annotations

from rocketmq_retry.contract import EventType
from rocketmq_retry.engine.model import REVIVE_ACK_TAG, REVIVE_BATCH_ACK_TAG, REVIVE_CK_TAG
from rocketmq_retry.jobs.ingest.sql import epoch_ms, event_struct, nz, sql_str, when

# the body's fields (all of PopCheckPoint, AckMsg and BatchAckMsg); a field of another type reads as null
BODY_SCHEMA = (
    "c string, t string, q int, so bigint, d array<bigint>, n int, pt bigint, it bigint, reviveTime bigint, "
    "ao bigint, aol array<bigint>, bn string"
)
TAG = "coalesce(" + nz("j.tags") + ", " + nz("j.properties.TAGS") + ")"
_CK, _ACK, _BACK = (sql_str(t) for t in (REVIVE_CK_TAG, REVIVE_ACK_TAG, REVIVE_BATCH_ACK_TAG))


def revive_body_sql() -> str:
    """The body parsed (null when the line is not a JSON object)."""
    return f"from_json(j.body, {sql_str(BODY_SCHEMA)})"


def _offsets(rv: str) -> str:
    ck = (
        f"CASE WHEN size({rv}.d) > 0 THEN transform({rv}.d, x -> {rv}.so + x) "
        f"ELSE transform(sequence(0, {rv}.n - 1), i -> {rv}.so + i) END"
    )
    return when(
        (f"{TAG} = {_CK}", ck),
        (f"{TAG} = {_ACK}", f"array({rv}.ao)"),
        (f"{TAG} = {_BACK}", f"{rv}.aol"),
    )


def revive_reason_sql(rv: str = "rv") -> str:
    """Why a revive-log line is not a normal record (null when it is): a quarantine reason."""
    head = f"{rv}.c IS NULL OR {rv}.t IS NULL OR {rv}.q IS NULL OR {epoch_ms(rv + '.pt')} IS NULL"
    return when(
        # from_json gives a struct of nulls, not null, for text that is no JSON object
        (
            f"{rv} IS NULL OR NOT coalesce(ltrim(j.body) LIKE '{{%', false)",
            "'revive-log record: body is not a JSON object'",
        ),
        (
            f"{TAG} IS NULL OR {TAG} NOT IN ({_CK}, {_ACK}, {_BACK})",
            f"concat('revive-log record with tag ', coalesce({TAG}, 'none'), ' (not ck, ack or bAck)')",
        ),
        (head, f"concat('revive-log ', {TAG}, ' record without c, t, q or a valid pt')"),
        (
            f"{TAG} = {_CK} AND ({rv}.so IS NULL OR {rv}.it IS NULL OR coalesce({rv}.n, 0) < 1)",
            "'revive-log ck record without so, it or n >= 1'",
        ),
        (
            f"{TAG} = {_CK} AND size({rv}.d) > 0 AND size({rv}.d) != {rv}.n",
            "'revive-log ck record whose d does not hold n offsets'",
        ),
        (f"{TAG} = {_ACK} AND {rv}.ao IS NULL", "'revive-log ack record without ao'"),
        (f"{TAG} = {_BACK} AND coalesce(size({rv}.aol), 0) < 1", "'revive-log bAck record without aol'"),
        (
            f"exists({_offsets(rv)}, o -> o IS NULL) OR {rv}.so IS NULL",
            f"concat('revive-log ', {TAG}, ' record without so or with a null offset')",
        ),
    )


def revive_events_sql(event_fields: tuple[tuple[str, str], ...], rv: str = "rv") -> str:
    """The events of a normal revive-log record (see the module's docstring): an array of event structs."""
    is_ck = f"({TAG} = {_CK})"
    revive_time = f"coalesce({rv}.reviveTime, {rv}.pt + {rv}.it)"
    fields = {
        "rec": "i",
        "source": "'message-dump'",
        "event_time": f"CASE WHEN {is_ck} THEN {epoch_ms(rv + '.pt')} "
        f"ELSE coalesce({epoch_ms('j.bornTimestamp')}, {epoch_ms('j.storeTimestamp')}) END",
        "event_type": f"CASE WHEN {is_ck} THEN {sql_str(EventType.POP_CHECKPOINT)} "
        f"ELSE {sql_str(EventType.POP_ACK)} END",
        "consumer_group": f"{rv}.c",
        "topic": f"{rv}.t",
        "queue_id": f"{rv}.q",
        "queue_offset": "o",
        "tags": TAG,
        "broker": nz(f"{rv}.bn"),
        "detail": f"CASE WHEN {is_ck} THEN concat('it=', {rv}.it, ';reviveTime=', {revive_time}, ';so=', {rv}.so) "
        f"ELSE concat('pt=', {rv}.pt, ';so=', {rv}.so) END",
    }
    return f"transform({_offsets(rv)}, (o, i) -> {event_struct(fields, event_fields)})"
