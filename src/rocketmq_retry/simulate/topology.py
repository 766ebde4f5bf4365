"""The simulated deployment's shape, built once from the config and the scenario: brokers, applications and their
hosts, each consumer group's client instances (client family, version, client ids) and one producer per topic.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

from rocketmq_retry.config import Config
from rocketmq_retry.engine import ConsumeMode, MessageModel, Protocol, effective_max_reconsume_times
from rocketmq_retry.errors import UserError
from rocketmq_retry.logformats import java, layouts, timefmt
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.model import (
    CLIENT_4X,
    CLIENT_5X,
    GRPC,
    NAME_SERVER,
    AppRun,
    GroupRun,
    Instance,
    Producer,
)
from rocketmq_retry.simulate.scenario import GroupScenario, Settings, default_scenario

GMT8 = timefmt.GMT8


@dataclass
class Topology:
    config: Config
    brokers: dict[str, world.Broker] = field(default_factory=dict)  # config key -> broker
    apps: dict[tuple[str, str], AppRun] = field(default_factory=dict)
    groups: list[GroupRun] = field(default_factory=list)
    producers: dict[str, Producer] = field(default_factory=dict)  # topic -> its producer

    def broker_of(self, g: GroupRun) -> world.Broker:
        return self.brokers[self.config.group_config(g.name).broker]

    def broker_named(self, name: str) -> world.Broker:
        return next(b for b in self.brokers.values() if b.name == name)

    def instances(self) -> list[Instance]:
        """Every client process: the consumer groups' instances, then the producers'."""
        out = [i for g in self.groups for i in g.instances]
        out.extend(p.instance for p in self.producers.values())
        return out


def build_topology(config: Config, settings: Settings, rng: random.Random, zone4x: str, zone_app: str) -> Topology:
    return _Builder(config, settings, rng, zone4x, zone_app).build()


class _Builder:
    def __init__(self, config: Config, settings: Settings, rng: random.Random, zone4x: str, zone_app: str) -> None:
        self.config = config
        self.s = settings
        self.rng = rng
        self.zone4x = zone4x
        self.zone_app = zone_app
        self.topo = Topology(config)
        self.ip = 20  # last octet of the next application or producer host

    def build(self) -> Topology:
        names = self._group_names()
        self._brokers()
        for name in names:
            self._group(name)
        self._check_hosts()
        self._producers()
        self._check_brokers()
        return self.topo

    def _group_names(self) -> list[str]:
        names = sorted(self.config.groups) or ["GID_order_consumer"]
        if self.s.groups:
            unknown = sorted(set(self.s.groups) - set(names))
            if unknown:
                raise UserError(f"simulate: --groups names groups the config does not define: {', '.join(unknown)}")
            names = [n for n in names if n in self.s.groups]
        return names

    def _brokers(self) -> None:
        brokers = self.topo.brokers
        for bname in sorted(self.config.brokers):
            b = self.config.brokers[bname]
            letter = chr(ord("a") + len(brokers))
            host = world.make_host(self.rng, f"rmq-broker-{letter}", f"10.0.0.{11 + len(brokers)}", 0, GMT8)
            brokers[bname] = world.Broker(f"broker-{letter}", host, b.major, b.version)

    def _group(self, name: str) -> None:
        """One consumer group: its client family and version, its application (new or shared) and an instance per
        application host."""
        policy = self.config.group_policy(name)
        scen = self.s.scenario.get(name) or default_scenario(name)
        bkey = self.config.group_config(name).broker
        broker = self.topo.brokers[bkey]
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
            scen.instances if scen.instances > 1 else (2 if policy.message_model is MessageModel.BROADCASTING else 1)
        )
        spring_version = None
        if app == "spring":
            spring_version = scen.spring_version or java.spring_version_for_client(client_version)
        run = self._application(name, scen, kind, app, bkey, client_version, spring_version, count)
        instances = []
        for i, host in enumerate(run.hosts):
            nano = self.rng.getrandbits(40)
            grpc_index = sum(1 for other in run.groups if other.kind == GRPC)
            cid = client_id(host, kind, policy.message_model, spring_version, grpc_index, nano)
            inst = Instance(host, kind, app, cid, i, trace_group=name, broker=broker)
            inst.client_version, inst.run, inst.grpc_index = client_version, run, grpc_index
            instances.append(inst)
        g = GroupRun(name, policy, scen, kind, instances, effective_max_reconsume_times(policy), run)
        run.groups.append(g)
        self.topo.groups.append(g)

    def _check_hosts(self) -> None:
        hosts: dict[str, str] = {}
        for run in self.topo.apps.values():
            for host in run.hosts:
                if hosts.setdefault(host.name, run.name) != run.name:
                    raise UserError(
                        f"simulate: applications {hosts[host.name]!r} and {run.name!r} would both run on host "
                        f"{host.name}; rename one (scenario groups.<g>.application)"
                    )

    def _producers(self) -> None:
        groups = self.topo.groups
        for topic in dict.fromkeys(g.scenario.topic for g in groups):
            readers = [g for g in groups if g.scenario.topic == topic]
            first = readers[0]
            # a topic read by a gRPC group is published with the gRPC SDK (its message ids, its log lines)
            kind = GRPC if any(g.kind == GRPC for g in readers) else first.kind
            self.ip += 1
            stem = topic.lower().replace("_", "-") + "-svc"
            bkey = self.config.group_config(first.name).broker
            zone = GMT8 if kind != CLIENT_4X else self.zone4x
            host = world.make_host(self.rng, f"{slug(bkey)}-{stem}-01", f"10.0.2.{self.ip}", self.s.max_skew_ms, zone)
            broker = self.topo.broker_of(first)
            inst = Instance(host, kind, "plain", f"{host.ip}@{host.pid}#{self.rng.getrandbits(40)}", 0, broker=broker)
            inst.client_version = first.instances[0].client_version
            pgroup = "PID_" + topic.lower()
            inst.trace_group = pgroup
            self.topo.producers[topic] = Producer(topic, pgroup, inst, kind, self.topo.broker_of(first))

    def _check_brokers(self) -> None:
        for g in self.topo.groups:
            if self.topo.broker_of(g) is not self.topo.producers[g.scenario.topic].broker:
                raise UserError(
                    f"simulate: groups of topic {g.scenario.topic} sit on different brokers; "
                    f"give {g.name} its own topic"
                )
            if g.kind == GRPC and self.topo.broker_of(g).major < 5:
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
        run = self.topo.apps.get(key)
        if run is not None:
            mine = {
                "app": app, "client kind": kind, "broker": bkey, "instances": count,
                "spring_pattern": pattern.name, "client_version": java.version_text(client_version),
                "spring_version": spring_version, "started_days_before": scen.started_days_before,
            }  # fmt: skip
            _check_shared_application(run, group, mine)
            return run
        name = slug(scen.application) if scen.application else host_stem(group)
        run = AppRun(name, app, kind, bkey, client_version, spring_version, pattern, scen.started_days_before)
        for i in range(count):
            self.ip += 1
            zone = self.zone_app if app == "spring" else (self.zone4x if kind == CLIENT_4X else GMT8)
            # hosts are named <broker key>-<application>-NN: one "cluster" of applications per broker, so a config
            # can tell 4.x from 5.x client files by directory (examples/rocketmq-retry.yaml does)
            run.hosts.append(
                world.make_host(
                    self.rng, f"{slug(bkey)}-{name}-{i + 1:02d}", f"10.0.1.{self.ip}", self.s.max_skew_ms, zone
                )
            )
        self.topo.apps[key] = run
        return run


def _check_shared_application(run: AppRun, group: str, mine: dict[str, object]) -> None:
    """Groups that share an application share its JVMs: everything that shapes the JVM must agree."""
    first = run.groups[0].name
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


def client_id(
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
        return f"{host.name}@{host.pid}@{grpc_index}@{base36(nano)}"
    if spring_version is not None and java.parse_version(spring_version) < (2, 2, 3):
        # rocketmq-spring 2.2.0-2.2.2: setInstanceName(RocketMQUtil.getInstanceName(nameServer))
        return f"{host.ip}@{NAME_SERVER}@{host.pid}@{nano}"
    if model is MessageModel.BROADCASTING:
        return f"{host.ip}@DEFAULT"  # changeInstanceNameToPID() runs for CLUSTERING only
    return f"{host.ip}@{host.pid}#{nano}"


def base36(value: int) -> str:
    """``Long.toString(value, 36)`` of a non-negative value."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, r = divmod(value, 36)
        out = digits[r] + out
        if not value:
            return out


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"


def host_stem(group: str) -> str:
    words = [w.lower() for w in group.replace("-", "_").split("_") if w and w.upper() not in ("GID", "CID")]
    return "-".join(words) or "consumer"
