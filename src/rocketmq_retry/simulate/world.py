"""The simulated deployment: hosts, the broker's store (commit log, queues, ids, dumps) and the log sinks.

Everything a process writes goes through :class:`Sinks`, which applies the writer's clock skew and its format's
time zone, and through :mod:`rocketmq_retry.logformats` for the bytes themselves.
"""

from __future__ import annotations

import gzip
import io
import pathlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

from rocketmq_retry.engine.model import DLQ_TOPIC_PREFIX, RETRY_TOPIC_PREFIX, SCHEDULE_TOPIC, TRACE_TOPIC
from rocketmq_retry.logformats import java, timefmt
from rocketmq_retry.logformats.dump import (
    DUMP_FILE_BUSINESS,
    DUMP_FILE_DLQ,
    DUMP_FILE_RETRY,
    DUMP_FILE_SCHEDULE,
    DUMP_FILE_TRACE,
    dump_line,
)
from rocketmq_retry.simulate.output import FileSpec, LogFile, logback_window, spring_window, suffix_window

BROKER_PORT = 10911
BUSINESS_QUEUES = 4
CLUSTER = "DefaultCluster"


@dataclass
class Host:
    name: str
    ip: str
    pid: int
    skew_ms: int
    uniq_prefix: str
    counter: int = 0
    zone: str = "UTC"  # JVM default zone (UNIQ_KEY's month start)

    def next_uniq_key(self, now_ms: int) -> str:
        """``MessageClientIDSetter.createUniqID`` on this host at (skewed) ``now_ms``."""
        self.counter = (self.counter + 1) & 0xFFFF
        local = now_ms + self.skew_ms
        return java.uniq_key(self.uniq_prefix, local - timefmt.month_start_ms(local, self.zone), self.counter)

    def next_grpc_message_id(self, now_ms: int) -> str:
        """The gRPC SDK's own message id (``MessageIdCodec``), built from this host's MAC address and pid."""
        self.counter += 1
        mac = "0242" + "".join(f"{int(part):02X}" for part in self.ip.split(".")[2:]) + "0001"
        return java.grpc_message_id(mac[:12], self.pid, now_ms + self.skew_ms, self.counter)

    @property
    def addr(self) -> str:
        return f"/{self.ip}:{50000 + self.pid % 10000}"


def make_host(rng: random.Random, name: str, ip: str, skew_max: int, zone: str) -> Host:
    pid = rng.randint(1200, 32000)
    skew = rng.randint(-skew_max, skew_max) if skew_max > 0 else 0
    return Host(name, ip, pid, skew, java.uniq_key_prefix(ip, pid, rng.getrandbits(31)), zone=zone)


@dataclass
class StoredCopy:
    """One message as stored in the commit log."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    offset_msg_id: str
    born_ts: int
    born_host: str
    store_ts: int
    reconsume_times: int
    properties: dict[str, str]
    body: bytes
    store_size: int
    body_crc: int


@dataclass
class Broker:
    name: str
    host: Host
    major: int
    version: str
    commit_offset: int = 0
    queue_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    dumps: dict[str, list[StoredCopy]] = field(default_factory=dict)
    created_topics: set[str] = field(default_factory=set)

    @property
    def store_addr(self) -> str:
        return f"/{self.host.ip}:{BROKER_PORT}"

    @property
    def addr(self) -> str:
        return f"{self.host.ip}:{BROKER_PORT}"

    def store(
        self,
        topic: str,
        queue_id: int,
        properties: dict[str, str],
        body: bytes,
        born_ts: int,
        born_host: str,
        reconsume_times: int,
        store_ts: int,
    ) -> StoredCopy:
        props = dict(properties)
        props.setdefault("CLUSTER", CLUSTER)  # the broker adds the cluster name to every message it stores
        size = java.store_size(topic, body, props)
        key = (topic, queue_id)
        offset = self.queue_offsets.get(key, 0)
        self.queue_offsets[key] = offset + 1
        copy = StoredCopy(
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            commit_log_offset=self.commit_offset,
            offset_msg_id=java.offset_msg_id(self.host.ip, BROKER_PORT, self.commit_offset),
            born_ts=born_ts,
            born_host=born_host,
            store_ts=store_ts,
            reconsume_times=reconsume_times,
            properties=props,
            body=body,
            store_size=size,
            body_crc=java.java_crc32(body),
        )
        self.commit_offset += size
        self.dumps.setdefault(dump_file_for(topic), []).append(copy)
        return copy

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self.queue_offsets.get((topic, queue_id), 0)


def dump_file_for(topic: str) -> str:
    if topic.startswith(DLQ_TOPIC_PREFIX):
        return DUMP_FILE_DLQ
    if topic.startswith(RETRY_TOPIC_PREFIX):
        return DUMP_FILE_RETRY
    if topic == SCHEDULE_TOPIC:
        return DUMP_FILE_SCHEDULE
    if topic == TRACE_TOPIC:
        return DUMP_FILE_TRACE
    return DUMP_FILE_BUSINESS


def client_view(copy: StoredCopy, broker: Broker, consume_start_ms: int | None) -> dict[str, str]:
    """Properties as a pulling client sees them: + MIN_OFFSET/MAX_OFFSET (pull), + CONSUME_START_TIME (§1.2)."""
    props = dict(copy.properties)
    props["MIN_OFFSET"] = "0"
    props["MAX_OFFSET"] = str(broker.max_offset(copy.topic, copy.queue_id))
    if consume_start_ms is not None:
        props["CONSUME_START_TIME"] = str(consume_start_ms)
    return props


def render_message_ext(copy: StoredCopy, broker: Broker, shown_topic: str, props: dict[str, str]) -> str:
    return java.message_ext_to_string(
        broker_name=broker.name,
        queue_id=copy.queue_id,
        store_size=copy.store_size,
        queue_offset=copy.queue_offset,
        born_timestamp=copy.born_ts,
        born_host=copy.born_host,
        store_timestamp=copy.store_ts,
        store_host=broker.store_addr,
        msg_id=copy.offset_msg_id,
        commit_log_offset=copy.commit_log_offset,
        body_crc=copy.body_crc,
        reconsume_times=copy.reconsume_times,
        topic=shown_topic,
        properties=props,
        body=copy.body,
    )


# --- sinks -----------------------------------------------------------------------------------------------------------


class Sinks:
    """Every log file of the landing, keyed by path, with one clock per (layout, zone)."""

    def __init__(self, root: pathlib.Path, rotate_bytes: int, compress: bool) -> None:
        self.root = root
        self.rotate = rotate_bytes
        self.compress = compress
        self.files: dict[str, LogFile] = {}
        self._clocks: dict[tuple[str, str], timefmt.Clock] = {}
        self.lines = 0

    def clock(self, layout: timefmt.TimestampLayout, zone: str) -> timefmt.Clock:
        key = (layout.name, zone)
        clock = self._clocks.get(key)
        if clock is None:
            clock = self._clocks[key] = timefmt.Clock(layout, zone)
        return clock

    def file(self, spec: FileSpec) -> LogFile:
        f = self.files.get(spec.rel_path)
        if f is None:
            f = self.files[spec.rel_path] = LogFile(self.root, spec, self.rotate, self.compress)
        return f

    def put(self, f: LogFile, text: str, ts: str) -> None:
        """Append ``text``; ``ts`` is its rendered timestamp, whose first 10 chars are the file's local date."""
        n = text.count("\n")
        self.lines += n
        f.write(text, n, ts[:10])

    def close(self) -> list[pathlib.Path]:
        out: list[pathlib.Path] = []
        for key in sorted(self.files):
            out.extend(self.files[key].close())
        return out

    def copy_as_now(self, dest: pathlib.Path) -> list[pathlib.Path]:
        """Every file opened so far, with its rolled siblings under their current names, copied under ``dest``."""
        out: list[pathlib.Path] = []
        for key in sorted(self.files):
            out.extend(self.files[key].copy_as_now(self.root, dest))
        return out


def broker_spec(host: str, name: str) -> FileSpec:
    """``<host>/logs/rocketmqlogs/<name>.log`` rolled to ``otherdays/<name>.<i>.log.gz`` (logback_broker.xml)."""
    return FileSpec(f"{host}/logs/rocketmqlogs/{name}.log", "otherdays", logback_window(name))


def client_4x_spec(host: str) -> FileSpec:
    """4.x ClientLogger: ``rocketmq_client.log`` rolled in place to ``rocketmq_client.log.<i>``."""
    return FileSpec(f"{host}/logs/rocketmqlogs/rocketmq_client.log", ".", suffix_window("rocketmq_client.log"))


def client_5x_spec(host: str) -> FileSpec:
    """5.x rmq.client.logback.xml: rolled to ``other_days/rocketmq_client-<i>.log.gz``."""
    return FileSpec(
        f"{host}/logs/rocketmqlogs/rocketmq_client.log", "other_days", logback_window("rocketmq_client", "-")
    )


def grpc_spec(host: str) -> FileSpec:
    """gRPC Java SDK: ``${user.home}/logs/rocketmq/rocketmq-client.log``, rolled beside it."""
    return FileSpec(f"{host}/logs/rocketmq/rocketmq-client.log", ".", logback_window("rocketmq-client"))


def spring_spec(host: str) -> FileSpec:
    """Spring Boot ``logging.file.name=logs/app.log``: rolled to ``app.log.<date>.<i>.gz``."""
    return FileSpec(f"{host}/logs/app.log", ".", spring_window("app.log"), dated=True)


def spring_console_spec(host: str) -> FileSpec:
    """A Spring Boot console pattern captured from standard output (``java -jar app.jar > logs/stdout.log``),
    rotated by size with logrotate's numbering: ``stdout.log.1`` (newest) …, in place."""
    return FileSpec(f"{host}/logs/stdout.log", ".", suffix_window("stdout.log"))


# Raw trace bodies, one RMQ_SYS_TRACE_TOPIC message per line (an export, rolled like ClientLogger files).
TRACE_SPEC = FileSpec("trace/RMQ_SYS_TRACE_TOPIC.trace", ".", suffix_window("RMQ_SYS_TRACE_TOPIC.trace"))


def write_dumps(
    root: pathlib.Path,
    brokers: Sequence[Broker],
    names: Sequence[str],
    window: tuple[int, int] | None = None,
    compress: bool = False,
) -> list[pathlib.Path]:
    """The pull consumer's JSON Lines dumps, one file per kind of topic (samples dumps/*.jsonl), all brokers: every
    copy stored so far, or those whose store time falls in ``window`` (``[start, end)``, a date's export);
    ``compress`` writes ``<name>.gz``."""
    out = []
    folder = root / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        copies = [(b, c) for b in brokers for c in b.dumps.get(name, [])]
        if window is not None:
            copies = [(b, c) for b, c in copies if window[0] <= c.store_ts < window[1]]
        path = folder / (name + ".gz" if compress else name)
        with _open_text(path, compress) as fh:
            for broker, c in copies:
                fh.write(_dump_line(broker, c))
        out.append(path)
    return out


def _open_text(path: pathlib.Path, compress: bool) -> IO[str]:
    if compress:
        # no timestamp in the gzip header: the same copies give the same bytes
        return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8", newline="")
    return path.open("w", encoding="utf-8", newline="")


def _dump_line(broker: Broker, c: StoredCopy) -> str:
    props = dict(c.properties)
    props["MIN_OFFSET"] = "0"
    props["MAX_OFFSET"] = str(broker.max_offset(c.topic, c.queue_id))
    return dump_line(
        dump_topic=c.topic,
        topic=c.topic,
        queue_id=c.queue_id,
        queue_offset=c.queue_offset,
        msg_id=c.properties.get("UNIQ_KEY", c.offset_msg_id),
        offset_msg_id=c.offset_msg_id,
        born_timestamp=c.born_ts,
        born_host=c.born_host,
        store_timestamp=c.store_ts,
        store_host=broker.store_addr,
        commit_log_offset=c.commit_log_offset,
        reconsume_times=c.reconsume_times,
        properties=props,
        body=c.body.decode("utf-8", errors="replace"),
    )


ALL_DUMPS = (DUMP_FILE_BUSINESS, DUMP_FILE_RETRY, DUMP_FILE_SCHEDULE, DUMP_FILE_DLQ, DUMP_FILE_TRACE)
