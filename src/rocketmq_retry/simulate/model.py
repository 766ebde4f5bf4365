"""The simulator's runtime objects: applications, client instances, consumer groups, producers, published messages
and message lifecycles (one per delivery target), plus the client families they are written for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketmq_retry.contract import IN_RETRY
from rocketmq_retry.engine import ConsumeMode, GroupPolicy, MessageModel
from rocketmq_retry.logformats import java, layouts
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.scenario import GroupScenario

CLIENT_4X, CLIENT_5X, GRPC = "4x", "5x", "grpc"
NAME_SERVER = "10.0.0.5:9876"


@dataclass
class AppRun:
    """One application: the JVMs (one per host) that run one or more consumer groups (scenario ``application``)."""

    name: str  # host stem and Spring Boot application name, e.g. "invoice-mailer"
    app: str  # plain | spring
    kind: str  # 4x | 5x | grpc
    broker_key: str
    client_version: java.ClientVersion
    spring_version: str | None
    pattern: layouts.SpringPattern
    started_days_before: int | None
    hosts: list[world.Host] = field(default_factory=list)
    groups: list[GroupRun] = field(default_factory=list)

    @property
    def package(self) -> str:
        return "com.example." + "".join(w for w in self.name.split("-") if w)

    @property
    def main_class(self) -> str:
        return "".join(w.capitalize() for w in self.name.split("-") if w) + "Application"


@dataclass
class Instance:
    """One client process of a consumer group (or a producer)."""

    host: world.Host
    kind: str  # 4x | 5x | grpc
    app: str  # plain | spring
    client_id: str
    index: int
    client_version: java.ClientVersion = (4, 9, 4)
    run: AppRun | None = None  # the application (None for producers)
    grpc_index: int = 0  # the gRPC SDK's per-JVM client index (ClientId), also in its thread names
    ready_at: int = 0  # the consumer has started and rebalanced: deliveries wait for it
    trace_buf: list[str] = field(default_factory=list)
    trace_keys: list[str] = field(default_factory=list)
    trace_flush_at: int | None = None
    trace_group: str = ""
    broker: Any = None
    logfile: Any = None  # the client log file, opened on first write
    persist_lines: list[tuple[str, str, int]] = field(default_factory=list)
    sweep_base: int | None = None
    minute: dict[str, list[int]] = field(default_factory=dict)  # "[KIND] [topic@group]" -> [sum, rt_sum]


@dataclass
class GroupRun:
    name: str
    policy: GroupPolicy
    scenario: GroupScenario
    kind: str
    instances: list[Instance]
    max_reconsume: int
    run: AppRun | None = None

    @property
    def broadcasting(self) -> bool:
        return self.policy.message_model is MessageModel.BROADCASTING

    @property
    def orderly(self) -> bool:
        return self.policy.consume_mode is ConsumeMode.ORDERLY


@dataclass
class Producer:
    topic: str
    group: str
    instance: Instance
    kind: str
    broker: world.Broker


@dataclass
class Message:
    uniq_key: str
    topic: str
    tags: str
    keys: str
    order_id: str
    body: bytes
    queue_id: int
    producer: Producer
    born_ts: int
    stored: world.StoredCopy | None = None
    poison: str = ""  # the poison cause the body was published with (scenario ``poison_cause``), else ""


@dataclass
class Lifecycle:
    lid: int
    group: GroupRun
    inst: Instance
    msg: Message
    behaviour: str
    kind: str  # later | exception | null
    until: int
    copy: world.StoredCopy
    pulled_topic: str
    client_r: int = 0
    deliveries: list[tuple[int, int, str]] = field(default_factory=list)  # (at, reconsumeTimes, outcome)
    hops: list[dict[str, Any]] = field(default_factory=list)
    final_state: str = IN_RETRY
    final_at: int | None = None
    dlq: world.StoredCopy | None = None
    send_back_faults: int = 0
    timeouts: int = 0
    # per delivery, aligned with ``deliveries``: (true kind, cause name, incident id, exception class and root cause
    # class the client logged, "" when it logged none) of a failure; kind "other" for a failure of the behaviour mix
    # or a timeout, "" for a success or a pending delivery
    failures: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    throttled: bool = False  # its first delivery was refused by a throttling listener: the next one succeeds


def owned_queues(g: GroupRun, inst: Instance) -> list[int]:
    """The business queues ``inst`` consumes: all of them when broadcasting, else its share (AVG allocation)."""
    if g.broadcasting:
        return list(range(world.BUSINESS_QUEUES))
    return [q for q in range(world.BUSINESS_QUEUES) if q % len(g.instances) == inst.index]
