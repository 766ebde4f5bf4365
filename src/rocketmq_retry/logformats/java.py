"""How RocketMQ's Java objects render themselves in log lines (§6.2, §2.5; tests/data/rocketmq-4.9.4).

``MessageExt.toString()``, ``Message.toString()``, ``MessageQueue.toString()``, ``Arrays.toString(byte[])`` and the
iteration order of a ``java.util.HashMap`` (the ``properties={…}`` order in every dumped message), plus the two
message-id layouts (offset msgId and ``UNIQ_KEY``) so simulated ids decode like real ones.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping

# --- java.util.HashMap iteration order -------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit value (UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


_SPREAD_CACHE: dict[str, int] = {}


def _spread(key: str) -> int:
    value = _SPREAD_CACHE.get(key)
    if value is None:
        h = java_string_hash(key)
        value = h ^ (h >> 16)  # HashMap.hash()
        _SPREAD_CACHE[key] = value
    return value


def hashmap_capacity(size: int, initial: int = 16) -> int:
    """Table size of a ``new HashMap<>()`` holding ``size`` entries: doubles once size exceeds 0.75 × capacity."""
    capacity = initial
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hashmap_order(keys: Iterable[str], initial_capacity: int = 16) -> list[str]:
    """Keys in the order a ``HashMap`` filled in ``keys`` order iterates them.

    Buckets in index order, insertion order inside a bucket (resizes keep it; no bucket here gets long enough to
    be treeified). Checked against every ``properties={…}`` in tests/data/rocketmq-4.9.4/client, e.g.
    ``{MIN_OFFSET=0, MAX_OFFSET=1, KEYS=…, CONSUME_START_TIME=…, UNIQ_KEY=…, CLUSTER=…, TAGS=…}``.
    """
    keys = list(keys)
    mask = hashmap_capacity(len(keys), initial_capacity) - 1
    indexed = [(_spread(k) & mask, n, k) for n, k in enumerate(keys)]
    indexed.sort()
    return [k for _, _, k in indexed]


# The order RocketMQ puts properties into a message's map over its life: producer (KEYS, TAGS, then UNIQ_KEY and
# WAIT at send), broker (CLUSTER, MSG_REGION, TRACE_ON), send-back (RETRY_TOPIC, ORIGIN_MESSAGE_ID, DELAY), schedule
# (REAL_TOPIC, REAL_QID), pull (MIN_OFFSET, MAX_OFFSET), consume (CONSUME_START_TIME). Only keys sharing a bucket
# depend on it: UNIQ_KEY before CLUSTER, as in every sample line.
PROPERTY_INSERTION_ORDER = (
    "KEYS",
    "TAGS",
    "UNIQ_KEY",
    "WAIT",
    "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES",
    "CLUSTER",
    "MSG_REGION",
    "TRACE_ON",
    "RETRY_TOPIC",
    "ORIGIN_MESSAGE_ID",
    "DELAY",
    "REAL_TOPIC",
    "REAL_QID",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "CONSUME_START_TIME",
)
_INSERTION_RANK = {k: n for n, k in enumerate(PROPERTY_INSERTION_ORDER)}


def property_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a message property map holding ``keys`` (inserted in RocketMQ's order, see above)."""
    ranked = sorted(keys, key=lambda k: _INSERTION_RANK.get(k, len(_INSERTION_RANK)))
    return hashmap_order(ranked)


def render_properties(properties: Mapping[str, str]) -> str:
    """``AbstractMap.toString()`` of a message's property map: ``{K=V, K=V}`` in HashMap order."""
    return "{" + ", ".join(f"{k}={properties[k]}" for k in property_order(properties)) + "}"


# --- byte arrays --------------------------------------------------------------------------------------------------

_BYTE_TEXT = [str(b if b < 128 else b - 256) for b in range(256)]


def render_body(body: bytes) -> str:
    """``Arrays.toString(byte[])``: signed decimal bytes, e.g. ``[123, 34, 111]`` (``[]`` when empty)."""
    return "[" + ", ".join([_BYTE_TEXT[b] for b in body]) + "]"


def store_size(topic: str, body: bytes, stored_properties: Mapping[str, str]) -> int:
    """``storeSize`` of a message in the commit log (``CommitLog.calMsgLength``, IPv4 hosts): 91 fixed bytes + body
    + topic + the properties string (``K\u0001V\u0002…`` without its last separator). Checked against every
    ``MessageExt`` in tests/data/rocketmq-4.9.4/client (client-added
    MIN_OFFSET/MAX_OFFSET/CONSUME_START_TIME excluded)."""
    props = sum(len(k.encode()) + len(v.encode()) + 2 for k, v in stored_properties.items())
    return 91 + len(body) + len(topic.encode()) + max(0, props - 1)


def java_crc32(body: bytes) -> int:
    """``UtilAll.crc32`` as stored in ``bodyCRC``: CRC32 masked to a positive int (``& 0x7FFFFFFF``)."""
    import zlib

    return zlib.crc32(body) & 0x7FFFFFFF


# --- toString() renderings ----------------------------------------------------------------------------------------


def message_to_string(topic: str, properties: Mapping[str, str], body: bytes, flag: int = 0) -> str:
    """``Message.toString()`` (both versions).

    ``Message{topic='T', flag=0, properties={…}, body=[…], transactionId='null'}``.
    """
    return (
        f"Message{{topic='{topic}', flag={flag}, properties={render_properties(properties)}, "
        f"body={render_body(body)}, transactionId='null'}}"
    )


def message_queue_to_string(topic: str, broker_name: str, queue_id: int) -> str:
    """``MessageQueue.toString()``: ``MessageQueue [topic=T, brokerName=b, queueId=n]`` (§6.2 ``MQ: {}``)."""
    return f"MessageQueue [topic={topic}, brokerName={broker_name}, queueId={queue_id}]"


def message_ext_to_string(
    *,
    broker_name: str,
    queue_id: int,
    store_size: int,
    queue_offset: int,
    born_timestamp: int,
    born_host: str,
    store_timestamp: int,
    store_host: str,
    msg_id: str,
    commit_log_offset: int,
    body_crc: int,
    reconsume_times: int,
    topic: str,
    properties: Mapping[str, str],
    body: bytes,
    sys_flag: int = 0,
    prepared_transaction_offset: int = 0,
    flag: int = 0,
) -> str:
    """``MessageExt.toString()`` (§6.2). ``msg_id`` is the **offset** msgId; hosts are ``/ip:port``."""
    return (
        f"MessageExt [brokerName={broker_name}, queueId={queue_id}, storeSize={store_size}, "
        f"queueOffset={queue_offset}, sysFlag={sys_flag}, bornTimestamp={born_timestamp}, bornHost={born_host}, "
        f"storeTimestamp={store_timestamp}, storeHost={store_host}, msgId={msg_id}, "
        f"commitLogOffset={commit_log_offset}, bodyCRC={body_crc}, reconsumeTimes={reconsume_times}, "
        f"preparedTransactionOffset={prepared_transaction_offset}, "
        f"toString()={message_to_string(topic, properties, body, flag)}]"
    )


def message_list_to_string(renderings: Iterable[str]) -> str:
    """``List.toString()`` of ``MessageExt``s, as printed after ``Msgs: ``."""
    return "[" + ", ".join(renderings) + "]"


def topic_config_to_string(
    topic: str,
    read_queue_nums: int = 1,
    write_queue_nums: int = 1,
    perm: str = "RW-",
    order: bool = False,
    with_attributes: bool = True,
) -> str:
    """``TopicConfig.toString()`` as logged by L-B1 ``create new topic {}`` (§6.3). 4.x has no ``attributes``
    (tests/data/rocketmq-4.9.4/broker/broker.log);
    ``perm`` is ``PermName.perm2String`` (``RW-``, ``-W-`` for ≤ 4.9.1 DLQs)."""
    tail = ", attributes={}" if with_attributes else ""
    return (
        f"TopicConfig [topicName={topic}, readQueueNums={read_queue_nums}, writeQueueNums={write_queue_nums}, "
        f"perm={perm}, topicFilterType=SINGLE_TAG, topicSysFlag=0, order={'true' if order else 'false'}{tail}]"
    )


def message_queue_hash(topic: str, broker_name: str, queue_id: int) -> int:
    """``MessageQueue.hashCode()`` (31-based over brokerName, queueId, topic) as an unsigned 32-bit value."""
    h = 31 + java_string_hash(broker_name)
    h = (31 * h + queue_id) & 0xFFFFFFFF
    return (31 * h + java_string_hash(topic)) & 0xFFFFFFFF


def message_queue_set_order(topic: str, broker_name: str, queue_ids: Iterable[int]) -> list[int]:
    """Queue ids in the order a ``HashSet<MessageQueue>`` filled in ``queue_ids`` order iterates them (the
    ``rebalanceResultSet`` / ``mqSet`` renderings and the order of the ``doRebalance, …`` lines)."""
    ids = list(queue_ids)
    mask = hashmap_capacity(len(ids)) - 1
    keyed = []
    for n, q in enumerate(ids):
        h = message_queue_hash(topic, broker_name, q)
        keyed.append(((h ^ (h >> 16)) & mask, n, q))
    return [q for _, _, q in sorted(keyed)]


def pull_request_to_string(consumer_group: str, mq: str, next_offset: int) -> str:
    """4.x ``PullRequest.toString()``, logged by ``doRebalance, {}, add a new pull request {}``."""
    return f"PullRequest [consumerGroup={consumer_group}, messageQueue={mq}, nextOffset={next_offset}]"


def grpc_message_queue_to_string(broker_name: str, topic: str, queue_id: int) -> str:
    """gRPC SDK ``MessageQueueImpl.toString()``: ``brokerName + "." + topic + "." + queueId``."""
    return f"{broker_name}.{topic}.{queue_id}"


# --- versions and thread names ------------------------------------------------------------------------------------

ClientVersion = tuple[int, int, int]


def parse_version(text: str) -> ClientVersion:
    """``"4.9.4"`` → ``(4, 9, 4)`` (``"5.3"`` means ``5.3.0``); ``ValueError`` for anything else."""
    parts = str(text).strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a version (write MAJOR.MINOR.PATCH, e.g. '4.9.4')")
    major, minor, patch = (int(p) for p in (*parts, "0")[:3])
    return major, minor, patch


def version_text(version: ClientVersion) -> str:
    return ".".join(str(p) for p in version)


# Consume threads carry the group from rocketmq-all-4.9.3 (commit d5be91fa00, ISSUE #3789); the scheduled and
# clean-expire pools from 5.1.1 (commit fe0a0a0789, ISSUE #6440). POP consume services never do.
GROUP_IN_CONSUME_THREAD_SINCE: ClientVersion = (4, 9, 3)
GROUP_IN_SCHEDULED_THREAD_SINCE: ClientVersion = (5, 1, 1)


def consume_thread_name(group: str, n: int, client_version: ClientVersion, pop: bool = False) -> str:
    """The remoting client's consume thread: ``ConsumeMessageThread_<group>_<n>`` (4.9.3+; the group cut to 100
    characters) or ``ConsumeMessageThread_<n>`` (older clients, and every POP consume service). ``n`` counts from 1
    per pool (``ThreadFactoryImpl``)."""
    if pop or client_version < GROUP_IN_CONSUME_THREAD_SINCE:
        return f"ConsumeMessageThread_{n}"
    return f"ConsumeMessageThread_{group[:100]}_{n}"


def scheduled_thread_name(prefix: str, group: str, n: int, client_version: ClientVersion) -> str:
    """``ConsumeMessageScheduledThread_`` / ``CleanExpireMsgScheduledThread_`` + (5.1.1+: ``<group>_``) + n."""
    if client_version < GROUP_IN_SCHEDULED_THREAD_SINCE:
        return f"{prefix}{n}"
    return f"{prefix}{group[:100]}_{n}"


# rocketmq-spring releases and the rocketmq-client each bundles (rocketmq-spring-boot-parent/pom.xml).
SPRING_BUNDLED_CLIENT: dict[str, ClientVersion] = {
    "2.2.0": (4, 8, 0),
    "2.2.1": (4, 9, 1),
    "2.2.2": (4, 9, 3),
    "2.2.3": (5, 0, 0),
    "2.3.0": (5, 2, 0),
    "2.3.1": (5, 3, 0),
    "2.3.2": (5, 3, 1),
    "2.3.3": (5, 3, 1),
    "2.3.4": (5, 3, 2),
    "2.3.5": (5, 3, 2),
}


def spring_version_for_client(client_version: ClientVersion) -> str:
    """The newest rocketmq-spring release whose bundled client is not newer than ``client_version`` (an
    application runs its release's client or overrides it with a newer one); 2.2.0 for anything older."""
    best = "2.2.0"
    for spring, bundled in SPRING_BUNDLED_CLIENT.items():
        if bundled <= client_version and parse_version(spring) >= parse_version(best):
            best = spring
    return best


def listener_container_to_string(
    consumer_group: str,
    name_server: str,
    topic: str,
    consume_mode: str = "CONCURRENTLY",
    message_model: str = "CLUSTERING",
    selector_expression: str = "*",
    namespace: str = "",
    instance_name: str = "DEFAULT",
    spring_version: str = "2.3.0",
) -> str:
    """rocketmq-spring ``DefaultRocketMQListenerContainer.toString()``, logged as ``running container: {}``.

    - 2.2.0–2.2.1: consumerGroup, nameServer, topic, consumeMode, selectorType, selectorExpression, messageModel;
    - 2.2.2: + namespace, + tlsEnable, and a stray quote after messageModel (``", messageModel=" + messageModel +
      '\\''``);
    - 2.2.3–2.3.0: + instanceName;
    - 2.3.1+: + namespaceV2 after namespace.
    """
    v = parse_version(spring_version)
    head = f"DefaultRocketMQListenerContainer{{consumerGroup='{consumer_group}', "
    if v >= (2, 2, 2):
        head += f"namespace='{namespace}', "
    if v >= (2, 3, 1):
        head += "namespaceV2='', "
    body = (
        f"nameServer='{name_server}', topic='{topic}', consumeMode={consume_mode}, selectorType=TAG, "
        f"selectorExpression='{selector_expression}', messageModel={message_model}"
    )
    if v < (2, 2, 2):
        return head + body + "}"
    tail = "', tlsEnable=false"
    if v >= (2, 2, 3):
        tail += f", instanceName={instance_name}"
    return head + body + tail + "}"


# --- message ids --------------------------------------------------------------------------------------------------


def _ip_hex(ip: str) -> str:
    return "".join(f"{int(part):02X}" for part in ip.split("."))


def offset_msg_id(store_ip: str, store_port: int, commit_log_offset: int) -> str:
    """``MessageDecoder.createMessageId``: store IP (4 bytes) + port (4 bytes) + commit-log offset (8 bytes), hex."""
    return f"{_ip_hex(store_ip)}{store_port:08X}{commit_log_offset:016X}"


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Inverse of :func:`offset_msg_id`: ``(ip, port, commitLogOffset)``."""
    raw = bytes.fromhex(msg_id)
    ip = ".".join(str(b) for b in raw[:4])
    (port,) = struct.unpack(">i", raw[4:8])
    (offset,) = struct.unpack(">q", raw[8:16])
    return ip, port, offset


def uniq_key_prefix(client_ip: str, pid: int, class_loader_hash: int) -> str:
    """Fixed first 20 hex chars of ``MessageClientIDSetter.createUniqID``: IP, pid (short), class-loader hash."""
    return f"{_ip_hex(client_ip)}{pid & 0xFFFF:04X}{class_loader_hash & 0xFFFFFFFF:08X}"


def uniq_key(prefix: str, ms_since_month_start: int, counter: int) -> str:
    """``createUniqID``: prefix + (now − start of the current month, ms, as int) + counter (short)."""
    return f"{prefix}{ms_since_month_start & 0xFFFFFFFF:08X}{counter & 0xFFFF:04X}"


GRPC_ID_EPOCH_MS = 1_609_459_200_000  # 2021-01-01T00:00:00Z, the base of MessageIdCodec's seconds


def grpc_message_id(mac_hex: str, pid: int, epoch_ms: int, sequence: int) -> str:
    """rocketmq-clients ``MessageIdCodec`` V1 (34 hex chars): ``01`` + MAC (6 bytes) + pid (low 2 bytes) +
    seconds since 2021-01-01 UTC (4 bytes) + sequence (4 bytes), e.g. ``0156F7E71C361B21BC024CCDBE00000000``."""
    seconds = (epoch_ms - GRPC_ID_EPOCH_MS) // 1000
    return f"01{mac_hex.upper()}{pid & 0xFFFF:04X}{seconds & 0xFFFFFFFF:08X}{sequence & 0xFFFFFFFF:08X}"


# --- logback logger-name abbreviation -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def abbreviate_logger(name: str, target: int) -> str:
    """logback ``TargetLengthBasedClassNameAbbreviator``: shorten leading packages to one letter until it fits.

    ``%logger{12}`` of ``org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService`` gives
    ``o.a.r.c.i.c.ConsumeMessageConcurrentlyService`` (§6.1); the class name itself is never shortened.
    """
    if len(name) <= target:
        return name
    parts = name.split(".")
    length = len(name)
    for i in range(len(parts) - 1):
        if length <= target:
            break
        length -= len(parts[i]) - 1
        parts[i] = parts[i][:1]
    return ".".join(parts)


def pad_truncate_left(text: str, width: int) -> str:
    """logback ``%-W.W``: truncate from the left to ``width``, then pad on the right."""
    if len(text) > width:
        text = text[len(text) - width :]
    return text.ljust(width)
