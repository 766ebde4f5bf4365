"""Message-trace records: bodies of ``RMQ_SYS_TRACE_TOPIC`` messages (docs/rocketmq-rules.md §7.1, §7.2, §12).

Fields are separated by U+0001 (``CONTENT_SPLITOR``) and every record ends with U+0002 (``FIELD_SPLITOR``).
Field indexes are those after ``split(CONTENT_SPLITOR)`` (§7.2).
"""

from __future__ import annotations

from dataclasses import dataclass

CONTENT_SPLITOR = "\u0001"
FIELD_SPLITOR = "\u0002"
DEFAULT_REGION = "DefaultRegion"
# 4.9.4 writes the literal "null" as the SubBefore region (§12, tests/data/rocketmq-4.9.4/dumps/trace-topic.jsonl).
REGION_NULL = "null"

PUB, SUB_BEFORE, SUB_AFTER, END_TRANSACTION, RECALL = "Pub", "SubBefore", "SubAfter", "EndTransaction", "Recall"

# Pub (14 fields; decoders also accept 13 and >= 15)
PUB_FIELDS = (
    "type", "timeStamp", "regionId", "groupName", "topic", "msgId", "tags", "keys", "storeHost", "bodyLength",
    "costTime", "msgType", "offsetMsgId", "isSuccess",
)  # fmt: skip
SUB_BEFORE_FIELDS = ("type", "timeStamp", "regionId", "groupName", "requestId", "msgId", "retryTimes", "keys")
SUB_AFTER_FIELDS = (
    "type", "requestId", "msgId", "costTime", "isSuccess", "keys", "contextCode", "timeStamp", "groupName",
)  # fmt: skip
END_TRANSACTION_FIELDS = (
    "type", "timeStamp", "regionId", "groupName", "topic", "msgId", "tags", "keys", "storeHost", "msgType",
    "transactionId", "transactionState", "fromTransactionCheck",
)  # fmt: skip
RECALL_FIELDS = ("type", "timeStamp", "regionId", "groupName", "topic", "msgId", "isSuccess")
FIELDS_BY_TYPE = {
    PUB: PUB_FIELDS,
    SUB_BEFORE: SUB_BEFORE_FIELDS,
    SUB_AFTER: SUB_AFTER_FIELDS,
    END_TRANSACTION: END_TRANSACTION_FIELDS,
    RECALL: RECALL_FIELDS,
}

# ConsumeReturnType ordinals written as SubAfter.contextCode (§1.2 step 6)
CONTEXT_SUCCESS, CONTEXT_TIME_OUT, CONTEXT_EXCEPTION, CONTEXT_RETURNNULL, CONTEXT_FAILED = 0, 1, 2, 3, 4
# MessageType ordinals written as Pub.msgType (§7.2)
MSG_TYPE_NORMAL, MSG_TYPE_TRANS_HALF, MSG_TYPE_TRANS_COMMIT, MSG_TYPE_DELAY, MSG_TYPE_ORDER = 0, 1, 2, 3, 4


def _b(value: bool) -> str:
    return "true" if value else "false"


def encode_record(*fields: object) -> str:
    """One record: fields joined by U+0001, terminated by U+0002 (``TraceDataEncoder.encoderFromContextBean``)."""
    return CONTENT_SPLITOR.join(_b(f) if isinstance(f, bool) else str(f) for f in fields) + FIELD_SPLITOR


def pub_record(
    time_stamp: int,
    region: str,
    producer_group: str,
    topic: str,
    msg_id: str,
    tags: str,
    keys: str,
    store_host: str,
    body_length: int,
    cost_ms: int,
    msg_type: int,
    offset_msg_id: str,
    success: bool,
) -> str:
    return encode_record(
        PUB, time_stamp, region, producer_group, topic, msg_id, tags, keys, store_host, body_length, cost_ms,
        msg_type, offset_msg_id, success,
    )  # fmt: skip


def sub_before_record(
    time_stamp: int, region: str, group: str, request_id: str, msg_id: str, retry_times: int, keys: str
) -> str:
    return encode_record(SUB_BEFORE, time_stamp, region, group, request_id, msg_id, retry_times, keys)


def sub_after_record(
    request_id: str, msg_id: str, cost_ms: int, success: bool, keys: str, context_code: int, time_stamp: int, group: str
) -> str:
    return encode_record(SUB_AFTER, request_id, msg_id, cost_ms, success, keys, context_code, time_stamp, group)


@dataclass(frozen=True)
class TraceRecord:
    type: str
    fields: tuple[str, ...]

    def get(self, name: str) -> str | None:
        names = FIELDS_BY_TYPE.get(self.type, ())
        if name in names:
            index = names.index(name)
            return self.fields[index] if index < len(self.fields) else None
        return None


def decode_body(body: str) -> list[TraceRecord]:
    """Split a trace body into records, as ``TraceDataEncoder.decoderFromTraceDataString`` (empty pieces dropped)."""
    out = []
    for piece in body.split(FIELD_SPLITOR):
        if not piece:
            continue
        fields = tuple(piece.split(CONTENT_SPLITOR))
        out.append(TraceRecord(fields[0], fields))
    return out
