"""The ``message-dump`` format: JSON Lines, one stored message per line (DESIGN §6; the sample dumps/*.jsonl).

Keys and their order follow tests/data/rocketmq-4.9.4/dumps (a superset of the keys DESIGN §6 requires).
``properties`` is a JSON object (sorted keys, as in the samples); ``body`` is the body as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

DUMP_KEYS = (
    "dumpTopic",
    "topic",
    "queueId",
    "queueOffset",
    "msgId",
    "offsetMsgId",
    "uniqKey",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "commitLogOffset",
    "reconsumeTimes",
    "sysFlag",
    "flag",
    "properties",
    "body",
)
# The keys DESIGN §6 names as the contract; the rest are extra evidence.
REQUIRED_DUMP_KEYS = (
    "topic",
    "queueId",
    "queueOffset",
    "msgId",
    "offsetMsgId",
    "bornTimestamp",
    "storeTimestamp",
    "reconsumeTimes",
    "properties",
    "body",
)

DUMP_FILE_DLQ = "dlq-topics.jsonl"
DUMP_FILE_RETRY = "retry-topics.jsonl"
DUMP_FILE_SCHEDULE = "schedule-topic.jsonl"
DUMP_FILE_TRACE = "trace-topic.jsonl"
DUMP_FILE_BUSINESS = "business-topics.jsonl"


def dump_line(
    *,
    dump_topic: str,
    topic: str,
    queue_id: int,
    queue_offset: int,
    msg_id: str,
    offset_msg_id: str,
    born_timestamp: int,
    born_host: str,
    store_timestamp: int,
    store_host: str,
    commit_log_offset: int,
    reconsume_times: int,
    properties: Mapping[str, str],
    body: str,
    sys_flag: int = 0,
    flag: int = 0,
) -> str:
    """One JSON line (with ``\\n``). ``uniqKey`` is ``properties['UNIQ_KEY']`` (``msgId`` equals it when present)."""
    record: dict[str, Any] = {
        "dumpTopic": dump_topic,
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": queue_offset,
        "msgId": msg_id,
        "offsetMsgId": offset_msg_id,
        "uniqKey": properties.get("UNIQ_KEY", ""),
        "bornTimestamp": born_timestamp,
        "bornHost": born_host,
        "storeTimestamp": store_timestamp,
        "storeHost": store_host,
        "commitLogOffset": commit_log_offset,
        "reconsumeTimes": reconsume_times,
        "sysFlag": sys_flag,
        "flag": flag,
        "properties": {k: properties[k] for k in sorted(properties)},
        "body": body,
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
