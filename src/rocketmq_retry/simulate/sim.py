"""The discrete-event simulator: producers publish a day of business messages, consumer groups receive them, the
listener succeeds or fails as the scenario says, and **the engine** decides every hop after a failure. Each event
writes what the real processes would write, through :mod:`rocketmq_retry.logformats`.

Time is true (broker) time in epoch ms; hosts write with their own clock skew.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import heapq
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_retry.config import Config
from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    FailedDelivery,
    GroupPolicy,
    HopAction,
    MessageModel,
    NextHop,
    Protocol,
    SendAttemptResult,
    SendBackFault,
    SendOutcome,
    SendPlan,
    consumer_retry_policy,
    effective_max_reconsume_times,
    next_hop,
    plan_grpc_send,
    plan_remoting_send,
    retry_topic,
)
from rocketmq_retry.errors import UserError
from rocketmq_retry.logformats import java, layouts, statements, stats, timefmt, trace
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.scenario import GroupScenario, Settings, default_scenario
from rocketmq_retry.simulate.truth import Truth

GMT8 = timefmt.GMT8
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
CLIENT_4X, CLIENT_5X, GRPC = "4x", "5x", "grpc"
NAME_SERVER = "10.0.0.5:9876"

# 5.x client logger classes (rendered with %logger{12})
C_CMCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService"
C_CMOS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService"
C_POP = "org.apache.rocketmq.client.impl.consumer.ConsumeMessagePopConcurrentlyService"
C_DMPCI = "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl"
C_PQ = "org.apache.rocketmq.client.impl.consumer.ProcessQueue"
C_OFFSET = "org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore"
C_FACTORY = "org.apache.rocketmq.client.impl.factory.MQClientInstance"
C_REBALANCE = "org.apache.rocketmq.client.impl.consumer.RebalanceImpl"
C_STATS = "org.apache.rocketmq.common.stats.StatsItemSet"
C_PRODUCER = "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl"
C_NETTY = "org.apache.rocketmq.remoting.netty.NettyRemotingClient"
G_PUSH = "org.apache.rocketmq.client.java.impl.consumer.PushConsumerImpl"
G_SIMPLE = "org.apache.rocketmq.client.java.impl.consumer.SimpleConsumerImpl"
G_PRODUCER = "org.apache.rocketmq.client.java.impl.producer.ProducerImpl"

FRAMES_CMCS_4X = [
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run("
    "ConsumeMessageConcurrentlyService.java:402)",
    "java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)",
    "java.base/java.util.concurrent.FutureTask.run(FutureTask.java:264)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    "java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
]
FRAMES_CMOS = [
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService$ConsumeRequest.run("
    "ConsumeMessageOrderlyService.java:482)",
    *FRAMES_CMCS_4X[1:],
]
FRAMES_SPRING = [
    "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer.handleMessage("
    "DefaultRocketMQListenerContainer.java:399)",
    "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer$DefaultMessageListenerConcurrently"
    ".consumeMessage(DefaultRocketMQListenerContainer.java:359)",
    *FRAMES_CMCS_4X,
]
FRAMES_GRPC = [
    "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:62)",
    "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:37)",
    "com.google.common.util.concurrent.TrustedListenableFutureTask$TrustedFutureInterruptibleTask"
    ".runInterruptibly(TrustedListenableFutureTask.java:131)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
]
FRAMES_SEND_BACK = [
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.consumerSendMessageBack(MQClientAPIImpl.java:1231)",
    "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl.sendMessageBack("
    "DefaultMQPushConsumerImpl.java:710)",
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService.sendMessageBack("
    "ConsumeMessageConcurrentlyService.java:290)",
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService.processConsumeResult("
    "ConsumeMessageConcurrentlyService.java:260)",
]
FRAMES_SEND = [
    "org.apache.rocketmq.remoting.netty.NettyRemotingClient.invokeSync(NettyRemotingClient.java:407)",
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessageSync(MQClientAPIImpl.java:521)",
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessage(MQClientAPIImpl.java:505)",
    "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendKernelImpl(DefaultMQProducerImpl.java:837)",
    "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendDefaultImpl(DefaultMQProducerImpl.java:575)",
    "org.apache.rocketmq.client.producer.DefaultMQProducer.send(DefaultMQProducer.java:333)",
]
BUSINESS_ERRORS = (
    ("java.lang.IllegalStateException", "{svc} unavailable for orderId={order}"),
    ("java.net.SocketTimeoutException", "Read timed out calling {svc} for orderId={order}"),
    ("org.springframework.dao.DataAccessResourceFailureException", "Unable to acquire JDBC Connection"),
    ("java.lang.NullPointerException", 'Cannot invoke "String.length()" because "sku" is null'),
)


# --- runtime objects -------------------------------------------------------------------------------------------------


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
    final_state: str = "IN_RETRY"
    final_at: int | None = None
    dlq: world.StoredCopy | None = None
    send_back_faults: int = 0
    timeouts: int = 0


class Simulator:
    def __init__(self, config: Config, settings: Settings, root: Any) -> None:
        self.config = config
        self.s = settings
        self.rng = random.Random(settings.seed)
        self.sinks = world.Sinks(root, settings.rotate_bytes, settings.gzip)
        self.truth = Truth()
        self.heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self.seq = 0
        self.zone = config.timezone
        self.zone4x = settings.client4x_timezone or config.timezone
        self.zone_app = settings.app_timezone or config.timezone
        self.day_start, self.day_end = timefmt.day_bounds_ms(settings.date, self.zone)
        self.horizon = self.day_start + int(settings.horizon_hours * 3_600_000)
        self.clock4x = self.sinks.clock(timefmt.CLIENT_4X_TS, self.zone4x)
        self.clock5x = self.sinks.clock(timefmt.CLIENT_5X_TS, GMT8)
        self.clock_broker = self.sinks.clock(timefmt.BROKER_TS, GMT8)
        self.lifecycles: list[Lifecycle] = []
        self.sndbck: dict[tuple[str, str], list[int]] = {}  # (broker, key) -> event times in the open windows
        self.dlq_stats: dict[tuple[str, str], list[int]] = {}
        self.topic_put: dict[tuple[str, str], list[int]] = {}
        self.group_get: dict[tuple[str, str], list[int]] = {}
        self.first_event: dict[tuple[str, str, str], int] = {}
        self.brokers: dict[str, world.Broker] = {}
        self.groups: list[GroupRun] = []
        self.producers: dict[str, Producer] = {}
        self.next_lid = 0
        self.events = 0
        self._progress_at = time.monotonic()
        self._build()

    # --- topology ---------------------------------------------------------------------------------------------------

    def _build(self) -> None:
        names = sorted(self.config.groups) or ["GID_order_consumer"]
        if self.s.groups:
            unknown = sorted(set(self.s.groups) - set(names))
            if unknown:
                raise UserError(f"simulate: --groups names groups the config does not define: {', '.join(unknown)}")
            names = [n for n in names if n in self.s.groups]
        self.ip = 20
        for bname in sorted(self.config.brokers):
            b = self.config.brokers[bname]
            letter = chr(ord("a") + len(self.brokers))
            host = world.make_host(self.rng, f"rmq-broker-{letter}", f"10.0.0.{11 + len(self.brokers)}", 0, GMT8)
            self.brokers[bname] = world.Broker(f"broker-{letter}", host, b.major, b.version)
        self.apps: dict[tuple[str, str], AppRun] = {}
        for name in names:
            policy = self.config.group_policy(name)
            scen = self.s.scenario.get(name) or default_scenario(name)
            bkey = self.config.group_config(name).broker
            broker = self.brokers[bkey]
            client_version = self._client_version(name, scen, broker)
            if scen.client_version is not None and hasattr(policy, "client_version"):
                # the engine's client-side rules follow the client the logs show
                policy = dataclasses.replace(policy, client_version=client_version)
            if policy.protocol is Protocol.GRPC or policy.consume_mode is ConsumeMode.SIMPLE:
                kind = GRPC
            else:
                kind = CLIENT_5X if client_version[0] >= 5 else CLIENT_4X
                if policy.consume_mode is ConsumeMode.POP and kind != CLIENT_5X:
                    raise UserError(f"simulate: group {name} consumes with POP, which needs a 5.x client")
            app = scen.app if kind != GRPC else "plain"
            count = (
                scen.instances
                if scen.instances > 1
                else (2 if policy.message_model is MessageModel.BROADCASTING else 1)
            )
            spring_version = None
            if app == "spring":
                spring_version = scen.spring_version or java.spring_version_for_client(client_version)
            run = self._application(name, scen, kind, app, bkey, client_version, spring_version, count)
            instances = []
            for i, host in enumerate(run.hosts):
                nano = self.rng.getrandbits(40)
                grpc_index = sum(1 for other in run.groups if other.kind == GRPC)
                cid = self._client_id(host, kind, policy.message_model, spring_version, grpc_index, nano)
                inst = Instance(host, kind, app, cid, i, trace_group=name, broker=broker)
                inst.client_version, inst.run, inst.grpc_index = client_version, run, grpc_index
                instances.append(inst)
            g = GroupRun(name, policy, scen, kind, instances, effective_max_reconsume_times(policy), run)
            run.groups.append(g)
            self.groups.append(g)
        hosts: dict[str, str] = {}
        for run in self.apps.values():
            for host in run.hosts:
                if hosts.setdefault(host.name, run.name) != run.name:
                    raise UserError(
                        f"simulate: applications {hosts[host.name]!r} and {run.name!r} would both run on host "
                        f"{host.name}; rename one (scenario groups.<g>.application)"
                    )
        for topic in dict.fromkeys(g.scenario.topic for g in self.groups):
            readers = [g for g in self.groups if g.scenario.topic == topic]
            first = readers[0]
            # a topic read by a gRPC group is published with the gRPC SDK (its message ids, its log lines)
            kind = GRPC if any(g.kind == GRPC for g in readers) else first.kind
            self.ip += 1
            stem = topic.lower().replace("_", "-") + "-svc"
            bkey = self.config.group_config(first.name).broker
            zone = GMT8 if kind != CLIENT_4X else self.zone4x
            host = world.make_host(self.rng, f"{_slug(bkey)}-{stem}-01", f"10.0.2.{self.ip}", self.s.max_skew_ms, zone)
            inst = Instance(
                host, kind, "plain", f"{host.ip}@{host.pid}#{self.rng.getrandbits(40)}", 0, broker=self.broker_of(first)
            )
            inst.client_version = first.instances[0].client_version
            pgroup = "PID_" + topic.lower()
            inst.trace_group = pgroup
            self.producers[topic] = Producer(topic, pgroup, inst, kind, self.broker_of(first))
        for g in self.groups:
            if self.broker_of(g) is not self.producers[g.scenario.topic].broker:
                raise UserError(
                    f"simulate: groups of topic {g.scenario.topic} sit on different brokers; "
                    f"give {g.name} its own topic"
                )
            if g.kind == GRPC and self.broker_of(g).major < 5:
                raise UserError(
                    f"simulate: group {g.name} uses gRPC, which needs a 5.x broker (config brokers.*.version)"
                )

    def _client_version(self, name: str, scen: GroupScenario, broker: world.Broker) -> java.ClientVersion:
        """The scenario's, else the config's ``groups.<g>.client_version``, else ``spring_version``'s bundled
        client, else the broker's version."""
        configured = getattr(self.config.group_config(name), "client_version", None)
        config_version: java.ClientVersion | None = None
        if isinstance(configured, tuple) and len(configured) == 3 and configured[0]:
            config_version = tuple(int(p) for p in configured)  # type: ignore[assignment]
        elif isinstance(configured, str) and configured.strip():
            config_version = java.parse_version(configured)
        if scen.client_version is not None:
            mine = java.parse_version(scen.client_version)
            if config_version is not None and config_version != mine:
                raise UserError(
                    f"simulate: group {name}: the scenario's client_version {scen.client_version} differs from the "
                    f"config's {java.version_text(config_version)}; set it in one place"
                )
            return mine
        if config_version is not None:
            return config_version
        if scen.spring_version is not None and scen.app == "spring":
            return java.SPRING_BUNDLED_CLIENT[scen.spring_version]
        return java.parse_version(broker.version)

    def _application(
        self,
        group: str,
        scen: GroupScenario,
        kind: str,
        app: str,
        bkey: str,
        client_version: java.ClientVersion,
        spring_version: str | None,
        count: int,
    ) -> AppRun:
        """The group's application: a new one (with its hosts), or the one it shares with earlier groups."""
        key = ("application", scen.application) if scen.application else ("group", group)
        pattern = layouts.SPRING_PATTERNS[scen.spring_pattern]
        run = self.apps.get(key)
        if run is not None:
            first = run.groups[0].name
            mine = {
                "app": app, "client kind": kind, "broker": bkey, "instances": count,
                "spring_pattern": pattern.name, "client_version": java.version_text(client_version),
                "spring_version": spring_version, "started_days_before": scen.started_days_before,
            }  # fmt: skip
            theirs = {
                "app": run.app, "client kind": run.kind, "broker": run.broker_key, "instances": len(run.hosts),
                "spring_pattern": run.pattern.name, "client_version": java.version_text(run.client_version),
                "spring_version": run.spring_version, "started_days_before": run.started_days_before,
            }  # fmt: skip
            for what, value in mine.items():
                if value != theirs[what]:
                    raise UserError(
                        f"simulate: groups {first} and {group} share application {run.name!r} (one JVM per host) "
                        f"but differ in {what}: {theirs[what]!r} vs {value!r}; make them agree in the scenario"
                    )
            return run
        name = _slug(scen.application) if scen.application else _host_stem(group)
        run = AppRun(name, app, kind, bkey, client_version, spring_version, pattern, scen.started_days_before)
        for i in range(count):
            self.ip += 1
            zone = self.zone_app if app == "spring" else (self.zone4x if kind == CLIENT_4X else GMT8)
            # hosts are named <broker key>-<application>-NN: one "cluster" of applications per broker, so a config
            # can tell 4.x from 5.x client files by directory (examples/rocketmq-retry.yaml does)
            run.hosts.append(
                world.make_host(
                    self.rng, f"{_slug(bkey)}-{name}-{i + 1:02d}", f"10.0.1.{self.ip}", self.s.max_skew_ms, zone
                )
            )
        self.apps[key] = run
        return run

    def _client_id(
        self,
        host: world.Host,
        kind: str,
        model: MessageModel,
        spring_version: str | None,
        grpc_index: int,
        nano: int,
    ) -> str:
        """``ClientConfig.buildMQClientId`` (``ip@instanceName``) as each client sets its instance name, or the gRPC
        SDK's ``ClientId`` (``hostName@pid@index@nanoTime base 36``)."""
        if kind == GRPC:
            return f"{host.name}@{host.pid}@{grpc_index}@{_base36(nano)}"
        if spring_version is not None and java.parse_version(spring_version) < (2, 2, 3):
            # rocketmq-spring 2.2.0-2.2.2: setInstanceName(RocketMQUtil.getInstanceName(nameServer))
            return f"{host.ip}@{NAME_SERVER}@{host.pid}@{nano}"
        if model is MessageModel.BROADCASTING:
            return f"{host.ip}@DEFAULT"  # changeInstanceNameToPID() runs for CLUSTERING only
        return f"{host.ip}@{host.pid}#{nano}"

    def broker_of(self, g: GroupRun) -> world.Broker:
        return self.brokers[self.config.group_config(g.name).broker]

    # --- event loop -------------------------------------------------------------------------------------------------

    def at(self, when: int, fn: Callable[..., None], *args: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, self.seq, fn, args))

    def run(self) -> None:
        self._schedule_startup()
        self._schedule_messages()
        minute = (self.day_start // 60_000) * 60_000
        self.at(minute, self._minute_tick)
        heap = self.heap
        while heap:
            when, _, fn, args = heapq.heappop(heap)
            if when > self.horizon:
                break
            self.now = when
            fn(*args)
            self.events += 1
            if self.s.progress and self.events % 20000 == 0:
                self._progress(when)
        self.now = self.horizon
        for inst in self._all_instances():
            if inst.trace_buf:
                self._flush_trace(inst)

    def _progress(self, when: int) -> None:
        now = time.monotonic()
        if now - self._progress_at >= 2:
            self._progress_at = now
            stamp = _dt.datetime.fromtimestamp(when / 1000, _dt.UTC).strftime("%Y-%m-%d %H:%M")
            print(f"simulate: {stamp}Z, {self.sinks.lines} lines written", file=sys.stderr, flush=True)

    def _all_instances(self) -> list[Instance]:
        out = [i for g in self.groups for i in g.instances]
        out.extend(p.instance for p in self.producers.values())
        return out

    # --- writing ----------------------------------------------------------------------------------------------------

    def client_line(
        self,
        inst: Instance,
        when: int,
        level: str,
        fqcn: str,
        thread: str,
        msg: str,
        throwable: list[str] | None = None,
        logger4x: str = "RocketmqClient",
    ) -> None:
        ms = when + inst.host.skew_ms
        if inst.kind == CLIENT_4X:
            ts = self.clock4x.format(ms)
            text = layouts.render_client_4x(ts, level, logger4x, msg, throwable or ())
        else:
            ts = self.clock5x.format(ms)
            text = layouts.render_client_5x(ts, level, inst.host.pid, thread, fqcn, msg, throwable or ())
        if inst.logfile is None:
            name = inst.host.name
            spec = {CLIENT_4X: world.client_4x_spec, CLIENT_5X: world.client_5x_spec}.get(inst.kind, world.grpc_spec)
            inst.logfile = self.sinks.file(spec(name))
        self.sinks.put(inst.logfile, text, ts)

    def spring_line(
        self, inst: Instance, when: int, level: str, logger: str, thread: str, msg: str, tb: list[str] | None = None
    ) -> None:
        """One entry of the Spring Boot application's log, in its pattern (file: logs/app.log, console: stdout)."""
        pattern = inst.run.pattern if inst.run is not None else layouts.SPRING_BOOT3_FILE
        ms = when + inst.host.skew_ms
        ts = self.sinks.clock(pattern.ts, self.zone_app).format(ms)
        app_name = inst.run.name if inst.run is not None else ""
        text = layouts.render_spring(ts, level, inst.host.pid, thread, logger, msg, tb or (), pattern, app_name)
        spec = world.spring_console_spec if pattern.console else world.spring_spec
        self.sinks.put(self.sinks.file(spec(inst.host.name)), text, ts)

    def broker_line(self, broker: world.Broker, when: int, file: str, level: str, thread: str, msg: str) -> None:
        ts = self.clock_broker.format(when)
        text = layouts.render_broker(ts, level, thread, msg)
        self.sinks.put(self.sinks.file(world.broker_spec(broker.host.name, file)), text, ts)

    def stats_line(self, broker: world.Broker, when: int, msg: str, file: str = "stats") -> None:
        ts = self.clock_broker.format(when)
        if file == "stats":
            text = layouts.render_stats(ts, msg)
        else:
            text = layouts.render_broker(ts, "INFO", "BrokerControllerScheduledThread1", msg)
        self.sinks.put(self.sinks.file(world.broker_spec(broker.host.name, file)), text, ts)

    # --- start-up and periodic noise --------------------------------------------------------------------------------

    def _schedule_startup(self) -> None:
        start = self.day_start - 90_000
        for run in self.apps.values():
            for i in range(len(run.hosts)):
                self._schedule_boot(run, i, self._boot_time(run, start))
        for p in self.producers.values():
            self.at(start + self.rng.randint(0, 20_000), self._producer_start, p)

    def _boot_time(self, run: AppRun, default_start: int) -> int:
        """When an instance's JVM starts: ``started_days_before`` k → D-k around 10:00 (k ≥ 1) or in the date's
        first minute (k = 0); unset → about 90 s before the date's start."""
        k = run.started_days_before
        if k is None:
            return default_start + self.rng.randint(0, 20_000)
        day_start, _ = timefmt.day_bounds_ms(self.s.date - _dt.timedelta(days=k), self.zone)
        if k == 0:
            return day_start + 20_000 + self.rng.randint(0, 20_000)
        return day_start + 10 * 3_600_000 + self.rng.randint(0, 300_000)

    def _schedule_boot(self, run: AppRun, index: int, t0: int) -> None:
        """One JVM of the application: Spring's ``Starting``, then each group's consumer in turn (a container per
        group, started one after another by the main thread), then Spring's ``Started``."""
        t = t0
        if run.app == "spring":
            self.at(t0, self._spring_starting, run, index)
            t = t0 + 2_600 + self.rng.randint(0, 1_500)  # the context refresh before the containers start
        for n, g in enumerate(run.groups):
            inst = g.instances[index]
            inst.ready_at = t + 900  # started and rebalanced (the gRPC SDK's start takes ~850 ms)
            self.at(t, self._instance_start, g, inst, self.broker_of(g))
            if n < len(run.groups) - 1:
                t += 1_000 + self.rng.randint(0, 200)
        if run.app == "spring":
            self.at(t + 360, self._spring_started, run, index, t0)

    def _periodic_from(self, first: int, period: int) -> tuple[int, int]:
        """The first run of a periodic task scheduled at ``first`` (then every ``period``) that falls on or after the
        simulated date's start, and how many runs were skipped (noise only runs from the date's start)."""
        if first >= self.day_start:
            return first, 0
        if period <= 0:
            return self.day_start, 0
        skipped = -(-(self.day_start - first) // period)
        return first + skipped * period, skipped

    def _startup_lines(self, inst: Instance, t: int, broker: world.Broker) -> int:
        if inst.kind == GRPC:
            return t
        self.client_line(inst, t, "INFO", C_NETTY, "main", f"user specified name server address: {NAME_SERVER}")
        self.client_line(
            inst, t + 40, "INFO", C_FACTORY, "main", f"Created new MQClientInstance for clientId:[{inst.client_id}]"
        )
        self.client_line(
            inst,
            t + 95,
            "INFO",
            C_NETTY,
            "NettyClientSelector_1",
            f"NETTY CLIENT PIPELINE: CONNECT  UNKNOWN => {NAME_SERVER}",
            logger4x="RocketmqRemoting",
        )
        self.client_line(
            inst,
            t + 180,
            "INFO",
            C_NETTY,
            "NettyClientSelector_1",
            f"NETTY CLIENT PIPELINE: CONNECT  UNKNOWN => {broker.addr}",
            logger4x="RocketmqRemoting",
        )
        self.client_line(inst, t + 230, "INFO", C_FACTORY, "main", f"the client factory [{inst.client_id}] start OK")
        return t + 300

    def _instance_start(self, g: GroupRun, inst: Instance, broker: world.Broker) -> None:
        t = self.now
        model = "BROADCASTING" if g.broadcasting else "CLUSTERING"
        if inst.kind == GRPC:
            kind = "simple" if g.policy.consume_mode is ConsumeMode.SIMPLE else "push"
            impl = G_SIMPLE if kind == "simple" else G_PUSH
            self.client_line(
                inst, t, "INFO", impl, "main", f"Begin to start the rocketmq {kind} consumer, clientId={inst.client_id}"
            )
            self.client_line(
                inst,
                t + 850,
                "INFO",
                impl,
                "main",
                f"The rocketmq {kind} consumer starts successfully, clientId={inst.client_id}",
            )
            if kind == "push":
                # PushConsumerImpl#createConsumeService (rocketmq-clients java 5.0.1+): the only start-up line that
                # names the group; a SimpleConsumer names it nowhere
                service = "FIFO" if g.orderly else "standard"
                self.client_line(
                    inst,
                    t + 852,
                    "INFO",
                    G_PUSH,
                    "main",
                    f"Create {service} consume service, consumerGroup={g.name}, clientId={inst.client_id}",
                )
        else:
            self.client_line(inst, t, "INFO", C_DMPCI, "main", fill(statements.C_CONSUMER_START, g.name, model, False))
            t = self._startup_lines(inst, t + 5, broker)
            self.client_line(inst, t + 5, "INFO", C_DMPCI, "main", fill(statements.C_CONSUMER_START_OK, g.name))
            if g.scenario.app == "spring":
                self._spring_container(g, inst, t + 10)
            self._rebalance_lines(g, inst, broker, t + 400)
        # broker side: the heartbeat registers the consumer and creates %RETRY%<group> (§2.4, the sample broker.log)
        hb = t + 500
        self.broker_line(
            broker,
            hb,
            "broker",
            "INFO",
            "HeartbeatThread_1",
            f"new consumer connected, group: {g.name} CONSUME_PASSIVELY {model} channel: ClientChannelInfo "
            f"[channel=[id: 0x{self.rng.getrandbits(32):08x}, L:/{broker.addr} - R:{inst.host.addr}], "
            f"clientId={inst.client_id}, language=JAVA, version={401 if inst.client_version[0] == 4 else 453}, "
            f"lastUpdateTimestamp={hb}]",
        )
        rt = retry_topic(g.name)
        if not g.broadcasting and inst.kind != GRPC and rt not in broker.created_topics:
            broker.created_topics.add(rt)
            self.broker_line(
                broker,
                hb,
                "broker",
                "INFO",
                "HeartbeatThread_1",
                fill(statements.L_B1.template, _topic_config(rt, broker)),
            )
        if inst.kind != GRPC and not g.broadcasting:
            # RemoteBrokerOffsetStore only: a broadcasting consumer's LocalFileOffsetStore persists silently (Q12)
            period = int(5_000 / self.s.noise) if self.s.noise > 0 else 0
            first, _ = self._periodic_from(t + 5_000, period)
            self.at(first, self._persist_tick, g, inst, broker)
        if inst.kind != GRPC:
            first, skipped = self._periodic_from(t + 30_000, 30_000)
            self.at(first, self._heartbeat_tick, inst, broker, 1 + skipped)
            # cleanExpireMsg is scheduled at a fixed rate from the consume service's start (§1.6)
            inst.sweep_base = t

    def _rebalance_lines(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> None:
        """RebalanceService's first pass after start-up (rocketmq-facts Q7, Q12): per subscribed topic, one
        ``doRebalance, G, add a new mq`` per new queue (4.x: then ``add a new pull request`` per queue), then
        ``rebalanced result changed`` (5.x: ``client rebalanced …``) or, broadcasting, ``messageQueueChanged``.
        Clustering groups also subscribe ``%RETRY%<group>`` (one queue, allocated to the first client)."""
        v4 = inst.client_version[0] < 5
        if g.policy.consume_mode is ConsumeMode.POP:
            self._pop_rebalance_lines(g, inst, broker, t)
            return
        topics = [(g.scenario.topic, self._queues_of(g, inst), world.BUSINESS_QUEUES)]
        if not g.broadcasting and inst.index == 0:
            topics.append((retry_topic(g.name), [0], 1))
        for topic, queues, total in topics:
            order = java.message_queue_set_order(topic, broker.name, queues)
            mqs = [java.message_queue_to_string(topic, broker.name, q) for q in order]
            for mq in mqs:
                add = fill(statements.C_ADD_MQ, g.name, mq)
                self.client_line(inst, t, "INFO", C_REBALANCE, "RebalanceService", add)
            if v4:
                for q, mq in zip(order, mqs, strict=True):
                    pull = java.pull_request_to_string(g.name, mq, broker.max_offset(topic, q))
                    self.client_line(
                        inst, t + 1, "INFO", C_REBALANCE, "RebalanceService",
                        fill(statements.C_ADD_PULL_REQUEST, g.name, pull),
                    )  # fmt: skip
            rendered = "[" + ", ".join(mqs) + "]"
            if g.broadcasting:
                msg = fill(statements.C_MQ_CHANGED, g.name, topic, rendered, rendered)
            else:
                msg = fill(
                    statements.C_REBALANCED_4X if v4 else statements.C_REBALANCED_5X,
                    "AVG", g.name, topic, inst.client_id, total, len(g.instances), len(queues), rendered,
                )  # fmt: skip
            self.client_line(inst, t + 1, "INFO", C_REBALANCE, "RebalanceService", msg)
            t += 2

    def _pop_rebalance_lines(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> None:
        """A 5.x POP consumer (``clientRebalance=false``) asks the broker for its queues
        (``RebalanceImpl#getRebalanceResultFromBroker``): the business topic comes back in POP mode as one queue per
        broker with queueId -1 (``QueryAssignmentProcessor#allocate4Pop``, popShareQueueNum 0), ``%RETRY%<group>`` in
        PULL mode ("retry topic must be pull mode"), its one queue to the first client."""
        topics = [(g.scenario.topic, -1, "POP", "add a new pop mq")]
        if inst.index == 0:
            topics.append((retry_topic(g.name), 0, "PULL", "add a new mq"))
        for topic, queue, mode, added in topics:
            mq = java.message_queue_to_string(topic, broker.name, queue)
            self.client_line(inst, t, "INFO", C_REBALANCE, "RebalanceService", f"doRebalance, {g.name}, {added}, {mq}")
            self.client_line(
                inst, t + 1, "INFO", C_REBALANCE, "RebalanceService",
                fill(statements.C_BROKER_REBALANCED, "AVG", g.name, topic, inst.client_id,
                     f"[MessageQueueAssignment [MessageQueue={mq}, Mode={mode}]]"),
            )  # fmt: skip
            t += 2

    def _spring_starting(self, run: AppRun, index: int) -> None:
        inst = run.groups[0].instances[index]
        cls = f"{run.package}.{run.main_class}"
        if run.pattern.boot_major == 2:
            text = (
                f"Starting {run.main_class} v1.4.2 using Java 11.0.22 on {inst.host.name} with PID {inst.host.pid} "
                "(/opt/app/app.jar started by app in /opt/app)"
            )
        else:
            text = (
                f"Starting {run.main_class} v1.4.2 using Java 17.0.11 with PID {inst.host.pid} "
                "(/opt/app/app.jar started by app in /opt/app)"
            )
        self.spring_line(inst, self.now, "INFO", cls, "main", text)

    def _spring_started(self, run: AppRun, index: int, t0: int) -> None:
        inst = run.groups[0].instances[index]
        took = (self.now - t0 + 1_700) / 1000
        running = "JVM running for" if run.pattern.boot_major == 2 else "process running for"
        self.spring_line(
            inst, self.now, "INFO", f"{run.package}.{run.main_class}", "main",
            f"Started {run.main_class} in {took:.3f} seconds ({running} {took + 0.71:.2f})",
        )  # fmt: skip

    def _spring_container(self, g: GroupRun, inst: Instance, t: int) -> None:
        """``DefaultRocketMQListenerContainer#start()`` after ``consumer.start()``: ``running container: {}``."""
        container = java.listener_container_to_string(
            g.name,
            NAME_SERVER,
            g.scenario.topic,
            consume_mode="ORDERLY" if g.orderly else "CONCURRENTLY",
            message_model="BROADCASTING" if g.broadcasting else "CLUSTERING",
            spring_version=inst.run.spring_version if inst.run and inst.run.spring_version else "2.3.0",
        )
        self.spring_line(
            inst, t, "INFO", layouts.SPRING_CONTAINER_LOGGER, "main",
            fill(statements.S_RUNNING_CONTAINER.template, container),
        )  # fmt: skip

    def _producer_start(self, p: Producer) -> None:
        inst = p.instance
        broker = p.broker
        if inst.kind == GRPC:
            self.client_line(
                inst,
                self.now,
                "INFO",
                G_PRODUCER,
                "main",
                f"Begin to start the rocketmq producer, clientId={inst.client_id}",
            )
            self.client_line(
                inst,
                self.now + 700,
                "INFO",
                G_PRODUCER,
                "main",
                f"The rocketmq producer starts successfully, clientId={inst.client_id}",
            )
            return
        t = self._startup_lines(inst, self.now, broker)
        self.client_line(
            inst, t, "INFO", C_PRODUCER, "main", f"the producer [{p.group}] start OK. sendMessageWithVIPChannel=false"
        )
        self.at(t + 30_000, self._heartbeat_tick, inst, broker, 1)

    def _queues_of(self, g: GroupRun, inst: Instance) -> list[int]:
        if g.broadcasting:
            return list(range(world.BUSINESS_QUEUES))
        return [q for q in range(world.BUSINESS_QUEUES) if q % len(g.instances) == inst.index]

    def _persist_tick(self, g: GroupRun, inst: Instance, broker: world.Broker) -> None:
        """``[persistAll]`` every persistConsumerOffsetInterval (5 s) per owned queue (the lines the sample trimmed)."""
        if not inst.persist_lines:
            # a POP consumer's business queues are popped, not pulled: only %RETRY%<group> has an offset to persist
            pop = g.policy.consume_mode is ConsumeMode.POP
            queues = [] if pop else [(g.scenario.topic, q) for q in self._queues_of(g, inst)]
            if inst.index == 0:
                queues.append((retry_topic(g.name), 0))
            if not queues:
                return
            for topic, q in queues:
                mq = java.message_queue_to_string(topic, broker.name, q)
                head = fill(statements.C_PERSIST_ALL, g.name, inst.client_id, mq, "")
                inst.persist_lines.append((head, topic, q))
        for n, (head, topic, q) in enumerate(inst.persist_lines):
            self.client_line(
                inst,
                self.now + n,
                "INFO",
                C_OFFSET,
                "MQClientFactoryScheduledThread",
                head + str(broker.max_offset(topic, q)),
            )
        period = int(5_000 / self.s.noise) if self.s.noise > 0 else 0
        if period:
            self.at(self.now + period, self._persist_tick, g, inst, broker)

    def _heartbeat_tick(self, inst: Instance, broker: world.Broker, times: int) -> None:
        # 4.9.x MQClientInstance logs the heartbeat only when times % 20 == 0 (every 10 minutes at 30 s).
        every = max(1, round(20 / self.s.noise)) if self.s.noise > 0 else 0
        if every and times % every == 0:
            self.client_line(
                inst,
                self.now,
                "INFO",
                C_FACTORY,
                "MQClientFactoryScheduledThread",
                f"send heart beat to broker[{broker.name} 0 {broker.addr}] success",
            )
        if every and times % (12 * every) == 0:
            self._reconnect(inst, broker)
        self.at(self.now + 30_000, self._heartbeat_tick, inst, broker, times + 1)

    def _reconnect(self, inst: Instance, broker: world.Broker) -> None:
        t = self.now
        seq = [
            f"closeChannel: begin close the channel[{broker.addr}] Found: true",
            f"NETTY CLIENT PIPELINE: CLOSE {broker.addr}",
            f"closeChannel: the channel[{broker.addr}] was removed from channel table",
            f"createChannel: begin to connect remote host[{broker.addr}] asynchronously",
            f"NETTY CLIENT PIPELINE: CONNECT  UNKNOWN => {broker.addr}",
            f"createChannel: connect remote host[{broker.addr}] success, "
            f"AbstractBootstrap$PendingRegistrationPromise@{self.rng.getrandbits(28):x}(success)",
        ]
        for n, line in enumerate(seq):
            self.client_line(
                inst, t + n * 3, "INFO", C_NETTY, "NettyClientSelector_1", line, logger4x="RocketmqRemoting"
            )

    def _minute_tick(self) -> None:
        """Per-minute stats: broker stats.log (§6.3 L-B9), 5.x broker_default.log L-B10, client stats lines."""
        now = self.now
        for (bname, key), times in list(self.sndbck.items()):
            self._emit_stat(
                self.brokers_by_name(bname), now, statements.SNDBCK_PUT_NUMS, key, times, ("sndbck", bname, key)
            )
        for (bname, key), times in list(self.topic_put.items()):
            self._emit_stat(self.brokers_by_name(bname), now, "TOPIC_PUT_NUMS", key, times, ("put", bname, key))
        for (bname, key), times in list(self.group_get.items()):
            self._emit_stat(self.brokers_by_name(bname), now, "GROUP_GET_NUMS", key, times, ("get", bname, key))
        for (bname, key), times in list(self.dlq_stats.items()):
            self._emit_stat(
                self.brokers_by_name(bname),
                now,
                statements.SNDBCK2DLQ_TIMES,
                key,
                times,
                ("dlq", bname, key),
                "broker_default",
            )
        for inst in self._all_instances():
            if inst.kind == GRPC:
                continue
            for key in sorted(inst.minute):
                total, rt = inst.minute[key]
                if not total:
                    continue
                kind, _, item = key.partition(" ")
                if kind == "CONSUME_RT":
                    msg = fill(statements.STATS_MINUTE_RT, kind, item, total, f"{rt / total:.2f}")
                else:
                    msg = stats.minute_line(kind, item, total, 60_000)
                self.client_line(inst, now + 5, "INFO", C_STATS, "MQClientFactoryScheduledThread", msg)
                inst.minute[key] = [0, 0]
        if now + 60_000 <= self.horizon:
            self.at(now + 60_000, self._minute_tick)
        if self.s.noise > 0 and (now // 60_000) % max(1, int(1 / self.s.noise)) == 0:
            for broker in self.brokers.values():
                self.broker_line(
                    broker,
                    now,
                    "store",
                    "INFO",
                    "StoreStatsService",
                    "[PAGECACHERT] TotalPut 0, PutMessageDistributeTime [<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 "
                    "[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0",
                )

    def brokers_by_name(self, name: str) -> world.Broker:
        return next(b for b in self.brokers.values() if b.name == name)

    def _emit_stat(
        self,
        broker: world.Broker,
        now: int,
        kind: str,
        key: str,
        times: list[int],
        fk: tuple[str, str, str],
        file: str = "stats",
    ) -> None:
        first = self.first_event.setdefault(fk, times[0] if times else now)
        start, end = stats.minute_window(now, first)
        inside = [t for t in times if start <= t < end]
        rest = [t for t in times if t >= end]
        table = {"sndbck": self.sndbck, "put": self.topic_put, "get": self.group_get, "dlq": self.dlq_stats}[fk[0]]
        table[(fk[1], fk[2])] = rest
        if not inside:
            if not rest:
                del table[(fk[1], fk[2])]
            return
        msg = stats.minute_line(kind, key, len(inside), end - start)
        self.stats_line(broker, now, msg, file)

    def _count(self, table: dict[tuple[str, str], list[int]], broker: world.Broker, key: str, when: int) -> None:
        table.setdefault((broker.name, key), []).append(when)

    def _client_stat(self, inst: Instance, kind: str, item: str, rt: int = 0) -> None:
        cell = inst.minute.setdefault(f"{kind} {item}", [0, 0])
        cell[0] += 1
        cell[1] += rt

    # --- producing ----------------------------------------------------------------------------------------------------

    def _schedule_messages(self) -> None:
        topics = sorted({g.scenario.topic for g in self.groups})
        span = self.day_end - self.day_start
        for n in range(self.s.messages):
            topic = topics[n % len(topics)]
            # A day shape: quiet night, busy daytime; 3 % land in the last 3 minutes, so their lifecycles (and any
            # retries) cross midnight.
            u = self.rng.random()
            late = self.rng.random() < 0.03
            frac = 0.998 + 0.002 * u if late else (u + 0.35 * _bump(self.rng.random())) / 1.35
            self.at(self.day_start + int(frac * span), self._publish, topic, n)

    def _publish(self, topic: str, n: int) -> None:
        p = self.producers[topic]
        scen = next(g.scenario for g in self.groups if g.scenario.topic == topic)
        inst = p.instance
        t0 = self.now
        order = f"ORD-{self.s.date:%y%m%d}{n:05d}"
        key = f"{scen.key_prefix}-{n + 100001}"
        payload = {
            "orderId": order,
            "userId": f"U-{self.rng.randint(100, 99999)}",
            "amount": round(self.rng.uniform(1, 999), 2),
            "currency": "CNY",
            "event": topic.lower(),
        }
        body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        # the order id travels in the body and in KEYS (a second key when the topic has its own business key)
        keys = order if scen.key_prefix == "ORD" else f"{key} {order}"
        # remoting producers set UNIQ_KEY with MessageClientIDSetter; the gRPC SDK uses its MessageIdCodec ids
        uniq = inst.host.next_grpc_message_id(t0) if p.kind == GRPC else inst.host.next_uniq_key(t0)
        queue = (
            (n % world.BUSINESS_QUEUES)
            if not any(g.orderly for g in self.groups if g.scenario.topic == topic)
            else int(order[-2:]) % world.BUSINESS_QUEUES
        )
        msg = Message(uniq, topic, scen.tags, keys, order, body, queue, p, t0 + inst.host.skew_ms)
        results = []
        for _ in range(3):
            if self.rng.random() < self.s.producer_fault_rate:
                results.append(SendAttemptResult(SendOutcome.REMOTING_ERROR, rt_ms=self.rng.randint(2, 12)))
            else:
                results.append(SendAttemptResult(SendOutcome.SEND_OK, rt_ms=self.rng.randint(1, 9)))
        broker = p.broker
        plan: SendPlan = (
            plan_grpc_send(results, start_ms=t0)
            if p.kind == GRPC
            else plan_remoting_send(results, client_major=broker.major, start_ms=t0)
        )
        self._log_send_attempts(p, msg, plan, broker)
        self.truth.publish(msg.uniq_key, topic, keys, scen.tags, order, p.group, t0, len(plan.attempts), plan.succeeded)
        if not plan.succeeded:
            return
        last = plan.attempts[-1]
        store_at = last.at_ms + max(1, last.result.rt_ms // 2)
        self.at(store_at, self._store_business, msg, broker, last.result.rt_ms)

    def _log_send_attempts(self, p: Producer, msg: Message, plan: SendPlan, broker: world.Broker) -> None:
        inst = p.instance
        for a in plan.attempts:
            if a.result.outcome is SendOutcome.SEND_OK:
                if p.kind == GRPC and a.attempt > 1:
                    self.client_line(
                        inst,
                        a.at_ms + a.result.rt_ms,
                        "INFO",
                        G_PRODUCER,
                        "rocketmq-client-callback-1",
                        fill(
                            statements.G_RESEND_OK.template,
                            msg.topic,
                            msg.uniq_key,
                            3,
                            a.attempt,
                            f"ipv4:{broker.host.ip}:8081",
                            inst.client_id,
                        ),
                    )
                continue
            end = a.at_ms + a.result.rt_ms
            mq = java.message_queue_to_string(
                msg.topic, broker.name, (msg.queue_id + a.attempt - 1) % world.BUSINESS_QUEUES
            )
            if p.kind == GRPC:
                template = statements.G_SEND_RETRY if a.retried else statements.G_SEND_FAILED
                args = (3, a.attempt, msg.topic, msg.uniq_key, f"ipv4:{broker.host.ip}:8081", inst.client_id)
                self.client_line(
                    inst, end, template.level, G_PRODUCER, "rocketmq-client-callback-1", fill(template.template, *args)
                )
                continue
            if not a.retried:
                continue  # the last failure is thrown to the application (L-P3), not logged by the client
            exc = f"org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to {broker.addr} failed"
            if inst.kind == CLIENT_5X:
                text = statements.L_P1_520_LITERAL  # 5.2.0 prints the placeholders literally (§12)
                self.client_line(inst, end, "WARN", C_PRODUCER, "main", text, layouts.java_stack(exc, FRAMES_SEND))
            else:
                text = fill(statements.L_P1.template, self.rng.getrandbits(62), a.result.rt_ms, mq)
                self.client_line(inst, end, "WARN", C_PRODUCER, "main", text, layouts.java_stack(exc, FRAMES_SEND))
                props = {"KEYS": msg.keys, "TAGS": msg.tags, "UNIQ_KEY": msg.uniq_key, "WAIT": "true"}
                self.client_line(
                    inst, end, "WARN", C_PRODUCER, "main", java.message_to_string(msg.topic, props, msg.body)
                )

    def _store_business(self, msg: Message, broker: world.Broker, cost: int) -> None:
        props = {"KEYS": msg.keys, "TAGS": msg.tags, "UNIQ_KEY": msg.uniq_key}
        if broker.major >= 5:
            # 5.x brokers stamp MSG_REGION and TRACE_ON on every sent message (§7.1); 4.9.4 stored neither (§12)
            props["MSG_REGION"] = trace.DEFAULT_REGION
            props["TRACE_ON"] = "true"
        copy = broker.store(
            msg.topic, msg.queue_id, props, msg.body, msg.born_ts, msg.producer.instance.host.addr, 0, self.now
        )
        msg.stored = copy
        self._count(self.topic_put, broker, msg.topic, self.now)
        p = msg.producer
        if self.s.trace and p.kind != GRPC:
            rec = trace.pub_record(
                msg.born_ts, trace.DEFAULT_REGION, p.group, msg.topic, msg.uniq_key, msg.tags, msg.keys, broker.addr,
                len(msg.body), cost, trace.MSG_TYPE_NORMAL, copy.offset_msg_id, True,
            )  # fmt: skip
            self._trace(p.instance, self.now + 1, rec, [msg.uniq_key, *msg.keys.split(" ")])
        for g in self.groups:
            if g.scenario.topic != msg.topic:
                continue
            if g.scenario.share < 1.0 and self.rng.random() >= g.scenario.share:
                continue
            targets = g.instances if g.broadcasting else [g.instances[msg.queue_id % len(g.instances)]]
            for inst in targets:
                self._start_lifecycle(g, inst, msg, copy)

    # --- consuming ----------------------------------------------------------------------------------------------------

    def _start_lifecycle(self, g: GroupRun, inst: Instance, msg: Message, copy: world.StoredCopy) -> None:
        mix = g.scenario.behaviour or self.s.behaviour
        kinds = g.scenario.failure_kinds or self.s.failure_kinds
        behaviour = _pick(self.rng, mix)
        kind = _pick(self.rng, kinds)
        if g.scenario.app == "spring" or (g.kind == GRPC and kind == "null"):
            kind = "exception"  # the container catches listener exceptions; no null in Spring/gRPC listeners
        until = self.rng.randint(1, max(1, self.s.until_max))
        lc = Lifecycle(self.next_lid, g, inst, msg, behaviour, kind, until, copy, msg.topic)
        self.next_lid += 1
        self.lifecycles.append(lc)
        # a consumer that has not started yet pulls the message once it has (started_days_before: 0)
        self.at(max(self.now, inst.ready_at) + self._pull_lag(), self._deliver, lc)

    def _pull_lag(self) -> int:
        return 1 + int(self.rng.expovariate(1 / 8))

    def _fails(self, lc: Lifecycle) -> bool:
        b = lc.behaviour
        if b == "ok":
            return False
        if b == "always":
            return True
        if b == "until":
            return lc.client_r < lc.until
        return self.rng.random() < self.s.sometimes_fail_rate

    def _deliver(self, lc: Lifecycle) -> None:
        g, inst = lc.group, lc.inst
        t = self.now
        broker = self.broker_of(g)
        lc.deliveries.append((t, lc.client_r, ""))
        self._count(self.group_get, broker, f"{lc.pulled_topic}@{g.name}", t)
        self._client_stat(inst, "PULL_TPS", f"{lc.msg.topic}@{g.name}")
        request_id = inst.host.next_uniq_key(t)
        if self._traced(g):
            rec = trace.sub_before_record(
                t + inst.host.skew_ms, trace.REGION_NULL if broker.major == 4 else trace.DEFAULT_REGION, g.name,
                request_id, lc.msg.uniq_key, lc.client_r, lc.msg.keys,
            )  # fmt: skip
            self._trace(inst, t, rec, [lc.msg.uniq_key, *lc.msg.keys.split(" ")])
        fails = self._fails(lc)
        timeout = (
            not fails
            and g.kind != GRPC
            and g.policy.consume_mode is ConsumeMode.CONCURRENTLY
            and not g.broadcasting
            and self.rng.random() < self.s.timeout_rate
        )
        cost = max(1, int(self.rng.lognormvariate(2.3, 0.9)))
        if timeout:
            lc.timeouts += 1
            limit = g.policy.consume_timeout_minutes * 60_000
            cost = limit + self.rng.randint(60_000, 10 * 60_000)
            base = inst.sweep_base if inst.sweep_base is not None else t
            # the first cleanExpireMsg run (every consumeTimeout since start, §1.6) that finds the message expired
            sweep = base + ((t + limit - base) // limit + 1) * limit
            self.at(sweep, self._expire_sweep, lc, t, len(lc.deliveries) - 1)
        self.at(t + cost, self._complete, lc, t, cost, fails, timeout, request_id, len(lc.deliveries) - 1)

    def _traced(self, g: GroupRun) -> bool:
        return self.s.trace and g.kind != GRPC and g.scenario.app != "spring"

    def _thread(self, lc: Lifecycle) -> str:
        """The listener's thread: the consume pool (20 threads, counted from 1 per pool) of the client version, or
        the gRPC SDK's ``RocketmqMessageConsumption-<clientIndex>-<n>`` (``n`` is process-wide in the SDK)."""
        n = 1 + lc.lid % 20
        inst = lc.inst
        if inst.kind == GRPC:
            return f"RocketmqMessageConsumption-{inst.grpc_index}-{n + 20 * inst.grpc_index}"
        pop = lc.group.policy.consume_mode is ConsumeMode.POP
        return java.consume_thread_name(lc.group.name, n, inst.client_version, pop=pop)

    def _rendered(self, lc: Lifecycle, start: int, with_start_time: bool = True) -> tuple[str, str]:
        broker = self.broker_of(lc.group)
        start_time = start + lc.inst.host.skew_ms if with_start_time and not lc.group.orderly else None
        props = world.client_view(lc.copy, broker, start_time)
        ext = world.render_message_ext(lc.copy, broker, lc.msg.topic, props)
        if lc.client_r != lc.copy.reconsume_times:
            ext = ext.replace(f", reconsumeTimes={lc.copy.reconsume_times},", f", reconsumeTimes={lc.client_r},", 1)
        mq = java.message_queue_to_string(lc.copy.topic, broker.name, lc.copy.queue_id)
        return ext, mq

    def _exception(self, lc: Lifecycle) -> tuple[str, list[str]]:
        cls, text = BUSINESS_ERRORS[lc.lid % len(BUSINESS_ERRORS)]
        svc = lc.group.scenario.topic.lower().split("_")[0] + "-service"
        exc = f"{cls}: {text.format(svc=svc, order=lc.msg.order_id)}"
        listener = _listener_class(lc.group)
        frames = [f"{listener}.onMessage({listener.rsplit('.', 1)[1]}.java:{40 + lc.lid % 50})"]
        if lc.inst.kind == GRPC:
            frames += FRAMES_GRPC
        elif lc.group.scenario.app == "spring":
            frames += FRAMES_SPRING
        else:
            frames += FRAMES_CMOS if lc.group.orderly else FRAMES_CMCS_4X
        return exc, frames

    def _complete(
        self, lc: Lifecycle, start: int, cost: int, fails: bool, timeout: bool, request_id: str, index: int
    ) -> None:
        g, inst = lc.group, lc.inst
        t = self.now
        self._client_stat(inst, "CONSUME_RT", f"{lc.msg.topic}@{g.name}", cost)
        if not fails:
            code = trace.CONTEXT_TIME_OUT if timeout else trace.CONTEXT_SUCCESS
            self._sub_after(lc, request_id, cost, True, code, t)
            self._client_stat(inst, "CONSUME_OK_TPS", f"{lc.msg.topic}@{g.name}")
            if not timeout:  # a timed-out delivery keeps its TIMEOUT outcome; the late return only shows in the trace
                lc.deliveries[index] = (start, lc.deliveries[index][1], "SUCCESS")
            if g.scenario.app == "spring":
                self.spring_line(
                    inst, t, "INFO", _listener_class(g),
                    self._thread(lc), f"handled {lc.msg.topic} orderId={lc.msg.order_id} in {cost} ms",
                )  # fmt: skip
            if not timeout and lc.final_state == "IN_RETRY":
                lc.final_state, lc.final_at = "CONSUMED", t
            return
        self._client_stat(inst, "CONSUME_FAILED_TPS", f"{lc.msg.topic}@{g.name}")
        # consume threads log independently of the other threads of the JVM: the real files are a few ms out of
        # timestamp order in places (§12), so the failure lines may carry a slightly earlier time than lines
        # already written
        outcome, code = self._failure_logs(lc, start, t - self.rng.randint(0, 4))
        lc.deliveries[index] = (start, lc.client_r, outcome.value)
        self._sub_after(lc, request_id, cost, False, code, t)
        fault = SendBackFault.NONE
        concurrent_remoting = (
            g.kind != GRPC and g.policy.consume_mode is ConsumeMode.CONCURRENTLY and not g.broadcasting
        )
        if concurrent_remoting and self.rng.random() < self.s.send_back_fault_rate:
            fault = (
                SendBackFault.RPC_AND_FALLBACK_FAILED
                if self.rng.random() < self.s.fallback_fault_share
                else SendBackFault.RPC_FAILED
            )
            lc.send_back_faults += 1
        self._fail(lc, t, start, outcome, fault)

    def _failure_logs(self, lc: Lifecycle, start: int, t: int) -> tuple[ConsumeOutcome, int]:
        """The listener's failure as each client writes it (§6.2, §6.4, §11, §12); returns the engine outcome."""
        g, inst = lc.group, lc.inst
        thread = self._thread(lc)
        if g.kind == GRPC and g.policy.consume_mode is ConsumeMode.SIMPLE:
            # SimpleConsumer has no listener: the application simply does not ack, and the SDK logs nothing (§5.5)
            return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED
        if g.kind == GRPC:
            if lc.kind == "exception":
                exc, frames = self._exception(lc)
                mq = java.grpc_message_queue_to_string(self.broker_of(g).name, lc.msg.topic, lc.msg.queue_id)
                self.client_line(
                    inst, t, "ERROR", "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask", thread,
                    fill(statements.G_LISTENER_EXCEPTION.template, inst.client_id, mq, lc.msg.uniq_key),
                    layouts.java_stack(exc, frames),
                )  # fmt: skip
                return ConsumeOutcome.EXCEPTION, trace.CONTEXT_EXCEPTION
            return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED
        if g.scenario.app == "spring":
            exc, frames = self._exception(lc)
            self.spring_line(
                inst, t, "WARN", layouts.SPRING_CONTAINER_LOGGER, thread,
                fill(statements.S_CONSUME_FAILED.template, lc.msg.uniq_key, lc.msg.topic, lc.client_r),
                layouts.java_stack(exc, frames),
            )  # fmt: skip
            return (ConsumeOutcome.SUSPEND if g.orderly else ConsumeOutcome.RECONSUME_LATER), trace.CONTEXT_FAILED
        ext, mq = self._rendered(lc, start)
        msgs = java.message_list_to_string([ext])
        fq = C_CMOS if g.orderly else (C_POP if g.policy.consume_mode is ConsumeMode.POP else C_CMCS)
        if lc.kind == "exception":
            exc, frames = self._exception(lc)
            desc = f"{exc}, {frames[0]}"
            self.client_line(
                inst,
                t,
                "WARN",
                fq,
                thread,
                fill(statements.L_C1.template, desc, g.name, msgs, mq),
                layouts.java_stack(exc, frames),
            )
        if g.orderly:
            self.client_line(inst, t, "WARN", C_CMOS, thread, fill(statements.L_C3.template, g.name, msgs, mq))
            code = {"exception": trace.CONTEXT_EXCEPTION, "null": trace.CONTEXT_RETURNNULL}.get(
                lc.kind, trace.CONTEXT_FAILED
            )
            return ConsumeOutcome.SUSPEND, code
        if lc.kind in ("exception", "null"):
            self.client_line(inst, t, "WARN", fq, thread, fill(statements.L_C2.template, g.name, msgs, mq))
        if lc.kind == "exception":
            return ConsumeOutcome.EXCEPTION, trace.CONTEXT_EXCEPTION
        if lc.kind == "null":
            return ConsumeOutcome.RETURN_NULL, trace.CONTEXT_RETURNNULL
        return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED

    def _sub_after(self, lc: Lifecycle, request_id: str, cost: int, ok: bool, code: int, t: int) -> None:
        if not self._traced(lc.group):
            return
        rec = trace.sub_after_record(
            request_id, lc.msg.uniq_key, cost, ok, lc.msg.keys, code, t + lc.inst.host.skew_ms, lc.group.name
        )
        self._trace(lc.inst, t, rec, [lc.msg.uniq_key])

    def _expire_sweep(self, lc: Lifecycle, start: int, index: int) -> None:
        """``ProcessQueue.cleanExpiredMsg`` found the slow message (§1.6): L-C8, then the engine's TIMEOUT hop."""
        g, inst = lc.group, lc.inst
        broker = self.broker_of(g)
        sweeper = java.scheduled_thread_name("CleanExpireMsgScheduledThread_", g.name, 1, inst.client_version)
        self.client_line(
            inst, self.now, "INFO", C_PQ, sweeper,
            fill(
                statements.L_C8.template, lc.msg.topic, lc.msg.uniq_key, broker.store_addr, lc.copy.queue_id,
                lc.copy.queue_offset,
            ),
        )  # fmt: skip
        lc.deliveries[index] = (start, lc.deliveries[index][1], ConsumeOutcome.TIMEOUT.value)
        self._fail(lc, self.now, start, ConsumeOutcome.TIMEOUT, SendBackFault.NONE)

    def _fail(self, lc: Lifecycle, t: int, start: int, outcome: ConsumeOutcome, fault: SendBackFault) -> None:
        g = lc.group
        failure = FailedDelivery(
            reconsume_times=lc.client_r,
            failed_at_ms=t,
            outcome=outcome,
            original_topic=lc.msg.topic,
            # the scenario's listener setting; unset (0) leaves the config's delay_level_when_next_consume to the engine
            delay_level_when_next_consume=g.scenario.delay_level or None,
            send_back_fault=fault,
            born_at_ms=lc.msg.born_ts,
            stored_reconsume_times=lc.copy.reconsume_times if lc.copy.reconsume_times != lc.client_r else None,
            offset_msg_id=lc.copy.offset_msg_id,
            uniq_key=lc.msg.uniq_key,
            origin_message_id=lc.copy.properties.get("ORIGIN_MESSAGE_ID"),
            delivered_at_ms=start,
        )
        hop = next_hop(g.policy, failure)
        self._apply(lc, hop, t, start, fault)

    # --- after a failure: the engine's hop ----------------------------------------------------------------------------

    def _apply(self, lc: Lifecycle, hop: NextHop, t: int, start: int, fault: SendBackFault) -> None:
        g, inst = lc.group, lc.inst
        broker = self.broker_of(g)
        lc.hops.append(
            {"at": t, "action": hop.action.value, "topic": hop.topic or "", "delay_level": hop.delay_level,
             "reconsume_times": hop.reconsume_times, "ready_at": hop.ready_at_ms, "rule": hop.rule}
        )  # fmt: skip
        rpc_ms = self.rng.randint(1, 6)
        if fault is not SendBackFault.NONE and g.kind != GRPC and not g.orderly:
            self._send_back_fault_logs(lc, t, start, fault)
            rpc_ms += 3
        action = hop.action
        if action is HopAction.DROPPED:
            if g.broadcasting and g.kind != GRPC:
                ext, _ = self._rendered(lc, start)
                self.client_line(inst, t, "WARN", C_CMCS, self._thread(lc), fill(statements.L_C4.template, ext))
            elif g.policy.consume_mode is ConsumeMode.POP and g.kind != GRPC:
                ext, _ = self._rendered(lc, start)
                self.client_line(inst, t, "WARN", C_POP, self._thread(lc), fill(statements.L_C12.template, ext))
            lc.final_state, lc.final_at = "DROPPED", hop.ready_at_ms
            return
        if action in (HopAction.LOCAL_RESUBMIT, HopAction.ORDERLY_SUSPEND, HopAction.FIFO_LOCAL_RETRY):
            lc.client_r = hop.reconsume_times
            self.at(max(hop.ready_at_ms, t) + self.rng.randint(0, 3), self._deliver, lc)
            return
        base = dict(lc.copy.properties)
        # the client re-published the message itself (the fallback after a failed send-back, the orderly send-back
        # past the max, §1.4, §4), also when the broker's handleRetryAndDLQ turns it into a DLQ put
        republished = action is HopAction.REPUBLISHED_RETRY or (
            action is HopAction.DEAD_LETTER and hop.properties.get("DELAY") != "0" and g.kind != GRPC
        )
        if republished:
            # the internal producer copies the client's property map (§1.4): pull-added keys travel along
            base = world.client_view(lc.copy, broker, None if g.orderly else start + inst.host.skew_ms)
        props = {**base, **hop.properties}
        # a re-published copy is a new message, born on the consumer's host (the broker's send-back keeps the
        # delivered copy's bornHost, §2.2 step 11)
        born_host = inst.host.addr if republished else lc.copy.born_host
        born_ts = t + inst.host.skew_ms if republished else lc.copy.born_ts
        store_at = t + rpc_ms
        if hop.via_schedule_topic:
            self.at(store_at, self._store_schedule, lc, hop, props, born_ts, born_host, t)
        elif action is HopAction.DEAD_LETTER:
            self.at(
                max(store_at, hop.ready_at_ms + rpc_ms),
                self._store_dlq,
                lc,
                hop,
                props,
                born_ts,
                born_host,
                hop.topic or "",
            )
        elif action is HopAction.INVISIBLE_RETRY:
            revive = hop.ready_at_ms + self.rng.randint(0, 1000)  # PopReviveService polls every reviveInterval (1 s)
            self.at(revive, self._store_redelivery, lc, hop, props, born_ts, born_host, hop.topic or "", 0)
        else:
            raise RuntimeError(f"simulator has no handling for engine action {action}")

    def _send_back_fault_logs(self, lc: Lifecycle, t: int, start: int, fault: SendBackFault) -> None:
        g, inst = lc.group, lc.inst
        broker = self.broker_of(g)
        ext, mq = self._rendered(lc, start)
        # a refused connection fails the CONSUMER_SEND_MSG_BACK RPC at once (a 5000 ms timeout would delay the hop)
        exc = f"org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to {broker.addr} failed"
        tb = layouts.java_stack(exc, FRAMES_SEND_BACK)
        thread = self._thread(lc)
        if inst.kind == CLIENT_5X:
            msg = fill(statements.L_C5_5X.template, g.name, broker.name, mq, ext)
        else:
            msg = fill(statements.L_C5_4X.template, g.name)
        self.client_line(inst, t + 5, "ERROR", C_DMPCI, thread, msg, tb)
        if fault is SendBackFault.RPC_AND_FALLBACK_FAILED:
            exc2 = (
                "org.apache.rocketmq.client.exception.MQClientException: "
                "Send [3] times, still failed, cost [3012]ms, Topic: " + retry_topic(g.name)
            )
            text = fill(statements.L_C6.template, g.name, ext)
            self.client_line(
                inst,
                t + 9,
                "ERROR",
                C_CMCS,
                thread,
                text,
                layouts.java_stack(exc2, [f"{FRAMES_SEND[4]}", *FRAMES_SEND_BACK[1:]]),
            )

    def _store_schedule(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, t: int
    ) -> None:
        g = lc.group
        broker = self.broker_of(g)
        copy = broker.store(
            SCHEDULE_TOPIC, hop.queue_id or 0, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, self.now
        )
        self._count(self.topic_put, broker, SCHEDULE_TOPIC, self.now)
        if hop.action is HopAction.SCHEDULED_RETRY:
            self._count(self.sndbck, broker, f"{lc.msg.topic}@{g.name}", self.now)
        # ScheduleMessageService: due at store time + delay, found by the 100 ms timer task (§3.1, §3.3)
        due = self.now + hop.delay_ms + self.rng.randint(0, 100)
        dest = hop.destination_topic or retry_topic(g.name)
        qid = int(props.get("REAL_QID", "0"))
        if dest.startswith("%DLQ%"):
            self.at(due, self._store_dlq, lc, hop, props, born_ts, born_host, dest, copy)
        else:
            self.at(due, self._store_redelivery, lc, hop, props, born_ts, born_host, dest, qid)

    def _store_redelivery(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, topic: str, qid: int
    ) -> None:
        broker = self.broker_of(lc.group)
        copy = broker.store(topic, qid, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, self.now)
        self._count(self.topic_put, broker, topic, self.now)
        lc.copy = copy
        lc.pulled_topic = topic
        lc.client_r = hop.reconsume_times
        self.at(self.now + self._pull_lag(), self._deliver, lc)

    def _store_dlq(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, topic: str, *_: Any
    ) -> None:
        g, inst = lc.group, lc.inst
        broker = self.broker_of(g)
        topic = topic or f"%DLQ%{g.name}"
        props = dict(props)
        if hop.via_schedule_topic:
            props["DELAY"] = props.get("DELAY", "0")
        if topic not in broker.created_topics:
            broker.created_topics.add(topic)
            self.broker_line(
                broker,
                self.now,
                "broker",
                "INFO",
                "SendMessageThread_1",
                fill(statements.L_B1.template, _topic_config(topic, broker)),
            )
        copy = broker.store(topic, 0, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, self.now)
        lc.dlq = copy
        lc.final_state, lc.final_at = "DEAD_LETTERED", self.now
        via_send_back = props.get("DELAY") == "0" and not hop.via_schedule_topic
        if via_send_back:
            self._count(self.sndbck, broker, f"{lc.msg.topic}@{g.name}", self.now)
        else:
            # TOPIC_PUT_NUMS counts a DLQ put only on handleRetryAndDLQ's path (SendMessageProcessor
            # #handlePutMessageResult) or the schedule service's delivery of a DLQ-bound copy; consumerSendMsgBack
            # counts SNDBCK_PUT_NUMS (and, 5.x, SNDBCK2DLQ_TIMES) instead
            self._count(self.topic_put, broker, topic, self.now)
        if broker.major >= 5:
            if via_send_back:
                # §6.3 L-B7: RocketmqDLQ → broker_default.log, one line per dead letter from consumerSendMsgBack
                self.broker_line(
                    broker, self.now, "broker_default", "INFO", "SendMessageThread_1",
                    fill(statements.L_B7.template, topic, None, lc.msg.topic, g.name, lc.msg.uniq_key, self.now),
                )  # fmt: skip
                self._count(
                    self.dlq_stats,
                    broker,
                    stats.stats_key("null", lc.msg.topic, g.name, statements.SEND_BACK_TO_DLQ),
                    self.now,
                )
            elif g.orderly and not g.broadcasting:
                self.broker_line(
                    broker, self.now, "broker", "INFO", "SendMessageThread_1",
                    fill(statements.L_B2.template, g.name, retry_topic(g.name), hop.reconsume_times, g.max_reconsume),
                )  # fmt: skip
        if g.kind == GRPC and g.orderly:
            mq = java.grpc_message_queue_to_string(broker.name, lc.msg.topic, lc.msg.queue_id)
            self.client_line(
                inst, self.now - 2, "INFO", statements.G_FIFO_EXHAUSTED.logger, self._thread(lc),
                fill(
                    statements.G_FIFO_EXHAUSTED.template,
                    consumer_retry_policy(g.policy).max_attempts,
                    lc.client_r + 1, mq, lc.msg.uniq_key,
                    inst.client_id,
                ),
            )  # fmt: skip
            self.client_line(
                inst, self.now + 3, "INFO", statements.G_FORWARD_DLQ_OK.logger, "rocketmq-client-callback-1",
                fill(statements.G_FORWARD_DLQ_OK.template, inst.client_id, g.name, lc.msg.uniq_key, mq,
                     f"ipv4:{broker.host.ip}:8081", inst.host.next_uniq_key(self.now)),
            )  # fmt: skip

    # --- trace dispatch ----------------------------------------------------------------------------------------------

    def _trace(self, inst: Instance, t: int, record: str, keys: list[str]) -> None:
        """AsyncTraceDispatcher: contexts are batched into one RMQ_SYS_TRACE_TOPIC message (§7.1)."""
        inst.trace_buf.append(record)
        for k in keys:
            if k and k not in inst.trace_keys:
                inst.trace_keys.append(k)
        if len(inst.trace_buf) >= 20:
            self._flush_trace(inst)
        elif inst.trace_flush_at is None:
            inst.trace_flush_at = t + 500
            self.at(t + 500, self._trace_timer, inst)

    def _trace_timer(self, inst: Instance) -> None:
        inst.trace_flush_at = None
        if inst.trace_buf:
            self._flush_trace(inst)

    def _flush_trace(self, inst: Instance) -> None:
        body = "".join(inst.trace_buf)
        broker = inst.broker
        uniq = inst.host.next_uniq_key(self.now)
        props = {"KEYS": " ".join(inst.trace_keys), "UNIQ_KEY": uniq, "WAIT": "true"}
        broker.store(
            trace.TRACE_TOPIC,
            0,
            props,
            body.encode("utf-8"),
            self.now + inst.host.skew_ms,
            inst.host.addr,
            0,
            self.now + 3,
        )
        self.sinks.put(self.sinks.file(world.TRACE_SPEC), body + "\n", self.clock_broker.format(self.now))
        inst.trace_buf = []
        inst.trace_keys = []

    # --- results -----------------------------------------------------------------------------------------------

    def finish_truth(self) -> None:
        for lc in self.lifecycles:
            self.truth.lifecycle(lc, self.broker_of(lc.group))


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    u = rng.random()
    acc = 0.0
    last = ""
    for name, w in weights.items():
        acc += w
        last = name if w > 0 else last
        if u < acc:
            return name
    return last


def _bump(u: float) -> float:
    # concentrate a share of traffic in the middle of the day
    return 0.25 + 0.5 * u


def _base36(value: int) -> str:
    """``Long.toString(value, 36)`` of a non-negative value."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, r = divmod(value, 36)
        out = digits[r] + out
        if not value:
            return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"


def _host_stem(group: str) -> str:
    words = [w.lower() for w in group.replace("-", "_").split("_") if w and w.upper() not in ("GID", "CID")]
    return "-".join(words) or "consumer"


def _listener_class(g: GroupRun) -> str:
    """The application's listener for ``g`` (one ``@RocketMQMessageListener`` class per container)."""
    package = g.run.package if g.run is not None else "com.example"
    return f"{package}.{''.join(w.capitalize() for w in _host_stem(g.name).split('-'))}Listener"


def _topic_config(topic: str, broker: world.Broker) -> str:
    """An auto-created retry/DLQ topic: 1 queue, RW (DLQs are RW since 4.9.2, §2.2)."""
    return java.topic_config_to_string(topic, with_attributes=broker.major >= 5)


__all__ = ["Simulator"]
