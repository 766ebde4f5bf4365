"""Start-up: when each JVM boots, and what it writes while it does (Spring's ``Starting``/``Started``, the
listener containers, the client factory, the first rebalance), plus the broker's side (new consumer connected,
``%RETRY%<group>`` created) and the periodic tasks each client schedules once it runs.
"""

from __future__ import annotations

import datetime as _dt

from rocketmq_retry.engine import ConsumeMode, retry_topic
from rocketmq_retry.logformats import java, layouts, statements, timefmt
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.context import Part, SimContext
from rocketmq_retry.simulate.javanames import (
    C_DMPCI,
    C_FACTORY,
    C_NETTY,
    C_PRODUCER,
    C_REBALANCE,
    G_PRODUCER,
    G_PUSH,
    G_SIMPLE,
)
from rocketmq_retry.simulate.model import GRPC, NAME_SERVER, AppRun, GroupRun, Instance, Producer, owned_queues
from rocketmq_retry.simulate.noise import PeriodicNoise
from rocketmq_retry.simulate.render import topic_config


class Startup(Part):
    def __init__(self, ctx: SimContext, noise: PeriodicNoise, zone: str, day_start: int) -> None:
        super().__init__(ctx)
        self.noise = noise
        self.zone = zone
        self.day_start = day_start

    # --- when -------------------------------------------------------------------------------------------------------

    def schedule(self) -> None:
        start = self.day_start - 90_000
        for run in self.topo.apps.values():
            for i in range(len(run.hosts)):
                self._schedule_boot(run, i, self._boot_time(run, start))
        for p in self.topo.producers.values():
            self.loop.at(start + self.rng.randint(0, 20_000), self._producer_start, p)

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
            self.loop.at(t0, self._spring_starting, run, index)
            t = t0 + 2_600 + self.rng.randint(0, 1_500)  # the context refresh before the containers start
        for n, g in enumerate(run.groups):
            inst = g.instances[index]
            inst.ready_at = t + 900  # started and rebalanced (the gRPC SDK's start takes ~850 ms)
            self.loop.at(t, self._instance_start, g, inst, self.topo.broker_of(g))
            if n < len(run.groups) - 1:
                t += 1_000 + self.rng.randint(0, 200)
        if run.app == "spring":
            self.loop.at(t + 360, self._spring_started, run, index, t0)

    # --- consumers --------------------------------------------------------------------------------------------------

    def _instance_start(self, g: GroupRun, inst: Instance, broker: world.Broker) -> None:
        t = self.loop.now
        if inst.kind == GRPC:
            self._grpc_consumer_start(g, inst, t)
        else:
            t = self._remoting_consumer_start(g, inst, broker, t)
        self._broker_registers(g, inst, broker, t + 500)
        self._schedule_periodic(g, inst, broker, t)

    def _grpc_consumer_start(self, g: GroupRun, inst: Instance, t: int) -> None:
        kind = "simple" if g.policy.consume_mode is ConsumeMode.SIMPLE else "push"
        impl = G_SIMPLE if kind == "simple" else G_PUSH
        line = self.writer.client_line
        line(inst, t, "INFO", impl, "main", f"Begin to start the rocketmq {kind} consumer, clientId={inst.client_id}")
        line(
            inst, t + 850, "INFO", impl, "main",
            f"The rocketmq {kind} consumer starts successfully, clientId={inst.client_id}",
        )  # fmt: skip
        if kind == "push":
            # PushConsumerImpl#createConsumeService (rocketmq-clients java 5.0.1+): the only start-up line that
            # names the group; a SimpleConsumer names it nowhere
            service = "FIFO" if g.orderly else "standard"
            line(
                inst, t + 852, "INFO", G_PUSH, "main",
                f"Create {service} consume service, consumerGroup={g.name}, clientId={inst.client_id}",
            )  # fmt: skip

    def _remoting_consumer_start(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> int:
        """``DefaultMQPushConsumerImpl#start``; returns when the client factory is up."""
        model = "BROADCASTING" if g.broadcasting else "CLUSTERING"
        line = self.writer.client_line
        line(inst, t, "INFO", C_DMPCI, "main", fill(statements.C_CONSUMER_START, g.name, model, False))
        t = self._startup_lines(inst, t + 5, broker)
        line(inst, t + 5, "INFO", C_DMPCI, "main", fill(statements.C_CONSUMER_START_OK, g.name))
        if g.scenario.app == "spring":
            self._spring_container(g, inst, t + 10)
        self._rebalance_lines(g, inst, broker, t + 400)
        return t

    def _broker_registers(self, g: GroupRun, inst: Instance, broker: world.Broker, hb: int) -> None:
        """The heartbeat registers the consumer and creates ``%RETRY%<group>`` (§2.4, the sample broker.log)."""
        model = "BROADCASTING" if g.broadcasting else "CLUSTERING"
        self.writer.broker_line(
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
            self.writer.broker_line(
                broker,
                hb,
                "broker",
                "INFO",
                "HeartbeatThread_1",
                fill(statements.L_B1.template, topic_config(rt, broker)),
            )

    def _schedule_periodic(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> None:
        if inst.kind != GRPC and not g.broadcasting:
            # RemoteBrokerOffsetStore only: a broadcasting consumer's LocalFileOffsetStore persists silently (Q12)
            first, _ = self.noise.first_run(t + 5_000, self.noise.persist_period())
            self.loop.at(first, self.noise.persist_tick, g, inst, broker)
        if inst.kind != GRPC:
            first, skipped = self.noise.first_run(t + 30_000, 30_000)
            self.loop.at(first, self.noise.heartbeat_tick, inst, broker, 1 + skipped)
            # cleanExpireMsg is scheduled at a fixed rate from the consume service's start (§1.6)
            inst.sweep_base = t

    def _startup_lines(self, inst: Instance, t: int, broker: world.Broker) -> int:
        if inst.kind == GRPC:
            return t
        line = self.writer.client_line
        line(inst, t, "INFO", C_NETTY, "main", f"user specified name server address: {NAME_SERVER}")
        line(inst, t + 40, "INFO", C_FACTORY, "main", f"Created new MQClientInstance for clientId:[{inst.client_id}]")
        line(
            inst, t + 95, "INFO", C_NETTY, "NettyClientSelector_1",
            f"NETTY CLIENT PIPELINE: CONNECT  UNKNOWN => {NAME_SERVER}", logger4x="RocketmqRemoting",
        )  # fmt: skip
        line(
            inst, t + 180, "INFO", C_NETTY, "NettyClientSelector_1",
            f"NETTY CLIENT PIPELINE: CONNECT  UNKNOWN => {broker.addr}", logger4x="RocketmqRemoting",
        )  # fmt: skip
        line(inst, t + 230, "INFO", C_FACTORY, "main", f"the client factory [{inst.client_id}] start OK")
        return t + 300

    def _rebalance_lines(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> None:
        """RebalanceService's first pass after start-up (rocketmq-facts Q7, Q12): per subscribed topic, one
        ``doRebalance, G, add a new mq`` per new queue (4.x: then ``add a new pull request`` per queue), then
        ``rebalanced result changed`` (5.x: ``client rebalanced …``) or, broadcasting, ``messageQueueChanged``.
        Clustering groups also subscribe ``%RETRY%<group>`` (one queue, allocated to the first client)."""
        v4 = inst.client_version[0] < 5
        if g.policy.consume_mode is ConsumeMode.POP:
            self._pop_rebalance_lines(g, inst, broker, t)
            return
        topics = [(g.scenario.topic, owned_queues(g, inst), world.BUSINESS_QUEUES)]
        if not g.broadcasting and inst.index == 0:
            topics.append((retry_topic(g.name), [0], 1))
        line = self.writer.client_line
        for topic, queues, total in topics:
            order = java.message_queue_set_order(topic, broker.name, queues)
            mqs = [java.message_queue_to_string(topic, broker.name, q) for q in order]
            for mq in mqs:
                line(inst, t, "INFO", C_REBALANCE, "RebalanceService", fill(statements.C_ADD_MQ, g.name, mq))
            if v4:
                for q, mq in zip(order, mqs, strict=True):
                    pull = java.pull_request_to_string(g.name, mq, broker.max_offset(topic, q))
                    line(
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
            line(inst, t + 1, "INFO", C_REBALANCE, "RebalanceService", msg)
            t += 2

    def _pop_rebalance_lines(self, g: GroupRun, inst: Instance, broker: world.Broker, t: int) -> None:
        """A 5.x POP consumer (``clientRebalance=false``) asks the broker for its queues
        (``RebalanceImpl#getRebalanceResultFromBroker``): the business topic comes back in POP mode as one queue per
        broker with queueId -1 (``QueryAssignmentProcessor#allocate4Pop``, popShareQueueNum 0), ``%RETRY%<group>`` in
        PULL mode ("retry topic must be pull mode"), its one queue to the first client."""
        topics = [(g.scenario.topic, -1, "POP", "add a new pop mq")]
        if inst.index == 0:
            topics.append((retry_topic(g.name), 0, "PULL", "add a new mq"))
        line = self.writer.client_line
        for topic, queue, mode, added in topics:
            mq = java.message_queue_to_string(topic, broker.name, queue)
            line(inst, t, "INFO", C_REBALANCE, "RebalanceService", f"doRebalance, {g.name}, {added}, {mq}")
            line(
                inst, t + 1, "INFO", C_REBALANCE, "RebalanceService",
                fill(statements.C_BROKER_REBALANCED, "AVG", g.name, topic, inst.client_id,
                     f"[MessageQueueAssignment [MessageQueue={mq}, Mode={mode}]]"),
            )  # fmt: skip
            t += 2

    # --- Spring Boot ------------------------------------------------------------------------------------------------

    def _spring_starting(self, run: AppRun, index: int) -> None:
        inst = run.groups[0].instances[index]
        cls = f"{run.package}.{run.main_class}"
        framework = any(g.scenario.framework_lines for g in run.groups)
        if framework:  # SpringApplication#printBanner, before the first log line
            version = "2.7.18" if run.pattern.boot_major == 2 else "3.2.5"
            self.writer.spring_stdout(inst, self.loop.now, layouts.render_spring_boot_banner(version))
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
        self.writer.spring_line(inst, self.loop.now, "INFO", cls, "main", text)
        if framework:
            self._framework_lines(run, inst, self.loop.now + 900)

    def _framework_lines(self, run: AppRun, inst: Instance, t: int) -> None:
        """What Spring Boot's web and data starters log while the context refreshes (scenario ``framework_lines``),
        among them Tomcat's ``ContainerBase.[Tomcat].[localhost].[/]`` logger (a name with brackets)."""
        tomcat = "9.0.83" if run.pattern.boot_major == 2 else "10.1.20"
        lines = (
            (
                "org.springframework.boot.web.embedded.tomcat.TomcatWebServer",
                "Tomcat initialized with port 8080 (http)",
            ),
            ("org.apache.catalina.core.StandardService", "Starting service [Tomcat]"),
            ("org.apache.catalina.core.StandardEngine", f"Starting Servlet engine: [Apache Tomcat/{tomcat}]"),
            (
                "org.apache.catalina.core.ContainerBase.[Tomcat].[localhost].[/]",
                "Initializing Spring embedded WebApplicationContext",
            ),
            (
                "org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext",
                f"Root WebApplicationContext: initialization completed in {800 + inst.host.pid % 700} ms",
            ),
            ("com.zaxxer.hikari.HikariDataSource", "HikariPool-1 - Starting..."),
            (
                "com.zaxxer.hikari.pool.HikariPool",
                f"HikariPool-1 - Added connection com.mysql.cj.jdbc.ConnectionImpl@{inst.host.pid * 7919 % 0xFFFFFF:x}",
            ),
            ("com.zaxxer.hikari.HikariDataSource", "HikariPool-1 - Start completed."),
            (
                "org.springframework.boot.actuate.endpoint.web.EndpointLinksResolver",
                "Exposing 1 endpoint(s) beneath base path '/actuator'",
            ),
            (
                "org.springframework.boot.web.embedded.tomcat.TomcatWebServer",
                "Tomcat started on port 8080 (http) with context path ''",
            ),
        )
        for i, (logger, text) in enumerate(lines):
            self.writer.spring_line(inst, t + 60 * i, "INFO", logger, "main", text)

    def _spring_started(self, run: AppRun, index: int, t0: int) -> None:
        inst = run.groups[0].instances[index]
        now = self.loop.now
        took = (now - t0 + 1_700) / 1000
        running = "JVM running for" if run.pattern.boot_major == 2 else "process running for"
        self.writer.spring_line(
            inst, now, "INFO", f"{run.package}.{run.main_class}", "main",
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
        self.writer.spring_line(
            inst, t, "INFO", layouts.SPRING_CONTAINER_LOGGER, "main",
            fill(statements.S_RUNNING_CONTAINER.template, container),
        )  # fmt: skip

    # --- producers --------------------------------------------------------------------------------------------------

    def _producer_start(self, p: Producer) -> None:
        inst = p.instance
        broker = p.broker
        now = self.loop.now
        line = self.writer.client_line
        if inst.kind == GRPC:
            line(
                inst,
                now,
                "INFO",
                G_PRODUCER,
                "main",
                f"Begin to start the rocketmq producer, clientId={inst.client_id}",
            )
            line(
                inst, now + 700, "INFO", G_PRODUCER, "main",
                f"The rocketmq producer starts successfully, clientId={inst.client_id}",
            )  # fmt: skip
            return
        t = self._startup_lines(inst, now, broker)
        line(inst, t, "INFO", C_PRODUCER, "main", f"the producer [{p.group}] start OK. sendMessageWithVIPChannel=false")
        self.loop.at(t + 30_000, self.noise.heartbeat_tick, inst, broker, 1)
