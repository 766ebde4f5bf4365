"""One stored message of a ``message-dump`` line (DESIGN §6) as an event, in Spark SQL text over its parsed
JSON column ``j`` and its topic column ``topic_`` (see ``ingest.records.classify_dump_lines``; docs/ingest.md
has the event types)."""

from __future__ import annotations

from rocketmq_retry.contract import EventType
from rocketmq_retry.engine.message_const import PROPERTY_FIRST_POP_TIME
from rocketmq_retry.engine.model import (
    DLQ_TOPIC_PREFIX,
    POP_RETRY_TOPIC_V2_RX,
    RETRY_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
)
from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.sql import epoch_ms, event_struct, nz, sql_str, when

RETRY_OR_DLQ = "'^%(RETRY|DLQ)%'"


def dump_event_sql(event_fields: tuple[tuple[str, str], ...]) -> str:
    topic = "topic_"
    real_topic = nz("j.properties.REAL_TOPIC")
    is_dlq = f"startswith({topic}, {sql_str(DLQ_TOPIC_PREFIX)})"
    is_retry = f"startswith({topic}, {sql_str(RETRY_TOPIC_PREFIX)})"
    is_sched = f"({topic} = {sql_str(SCHEDULE_TOPIC)})"
    # %RETRY%<group>+<topic> (V2, KeyBuilder#buildPopRetryTopicV2): '+' is in no group or topic name, so the split
    # is exact (KeyBuilder#parseGroup / #parseNormalTopic, §5.9)
    v2 = f"nullif(regexp_extract({topic}, {sql_str(POP_RETRY_TOPIC_V2_RX)}, {{}}), '')"
    # 1ST_POP_TIME, which PopReviveService#reviveRetry (and PopConsumerService#reviveRetry) sets on a revived POP
    # copy, tells a POP retry topic's copy from a remoting send-back's %RETRY%<group> copy (§2.6, §5.9): kept in detail
    first_pop = nz(f"j.properties.`{PROPERTY_FIRST_POP_TIME}`")
    queue_id = "try_cast(j.queueId AS INT)"
    dead_lettered, retry_enqueued, send_back, published = (
        sql_str(t)
        for t in (EventType.DEAD_LETTERED, EventType.RETRY_ENQUEUED, EventType.SEND_BACK, EventType.PUBLISHED)
    )
    return event_struct(
        {
            "rec": "0",
            "source": "'message-dump'",
            "event_time": epoch_ms("j.storeTimestamp"),
            "event_type": f"CASE WHEN {is_dlq} THEN {dead_lettered} WHEN {is_retry} THEN {retry_enqueued} "
            f"WHEN {is_sched} THEN {send_back} ELSE {published} END",
            "consumer_group": when(
                (is_dlq, f"substring({topic}, 6)"),
                (is_retry, f"coalesce({v2.format(1)}, substring({topic}, 8))"),
                (
                    f"{is_sched} AND {real_topic} RLIKE {RETRY_OR_DLQ}",
                    f"regexp_replace({real_topic}, {RETRY_OR_DLQ}, '')",
                ),
            ),
            "msg_id": f"coalesce({nz('j.properties.UNIQ_KEY')}, {nz('j.uniqKey')}, {nz('j.msgId')})",
            "offset_msg_id": nz("j.offsetMsgId"),
            "origin_msg_id": nz("j.properties.ORIGIN_MESSAGE_ID"),
            "topic": topic,
            "original_topic": f"coalesce({nz('j.properties.RETRY_TOPIC')}, {v2.format(2)}, "
            f"CASE WHEN NOT ({is_dlq} OR {is_retry} OR {is_sched}) THEN {topic} END)",
            "queue_id": queue_id,
            # what a revive-log checkpoint names the stored copy by (docs/ingest.md "POP checkpoints")
            "queue_offset": "try_cast(j.queueOffset AS BIGINT)",
            "reconsume_times": "try_cast(j.reconsumeTimes AS INT)",
            # the schedule topic's queue is level - 1 (§3.2); DELAY is the level the broker used
            "delay_level": f"coalesce(try_cast({nz('j.properties.DELAY')} AS INT), "
            f"CASE WHEN {is_sched} THEN {queue_id} + 1 END)",
            "keys": nz("j.properties.KEYS"),
            "tags": nz("j.properties.TAGS"),
            "body": f"substring(j.body, 1, {P.RAW_CAP})",
            "broker": nz("j.storeHost"),
            "client_host": "regexp_replace(j.bornHost, '^/', '')",
            "detail": f"nullif(concat_ws(', ', concat('REAL_TOPIC=', {real_topic}), "
            f"concat('{PROPERTY_FIRST_POP_TIME}=', {first_pop})), '')",
        },
        event_fields,
    )
