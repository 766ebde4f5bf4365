"""Writing log lines per source: each process's clock (skew, time zone, timestamp layout), its layout from
:mod:`rocketmq_retry.logformats.layouts`, and the file it goes to (client, Spring, broker, stats, trace export).
"""

from __future__ import annotations

from rocketmq_retry.logformats import java, layouts, timefmt
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.model import CLIENT_4X, CLIENT_5X, Instance

GMT8 = timefmt.GMT8


class LogWriter:
    def __init__(self, sinks: world.Sinks, zone4x: str, zone_app: str) -> None:
        self.sinks = sinks
        self.zone_app = zone_app
        self.clock4x = sinks.clock(timefmt.CLIENT_4X_TS, zone4x)
        self.clock5x = sinks.clock(timefmt.CLIENT_5X_TS, GMT8)
        self.clock_broker = sinks.clock(timefmt.BROKER_TS, GMT8)

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

    def spring_stdout(self, inst: Instance, when: int, text: str) -> None:
        """Text the application prints with ``System.out`` (no head): only a console capture holds it."""
        pattern = inst.run.pattern if inst.run is not None else layouts.SPRING_BOOT3_FILE
        if not pattern.console:
            return
        ts = self.sinks.clock(pattern.ts, self.zone_app).format(when + inst.host.skew_ms)
        self.sinks.put(self.sinks.file(world.spring_console_spec(inst.host.name)), text, ts)

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

    def trace_batch(self, when: int, body: str) -> None:
        """One ``RMQ_SYS_TRACE_TOPIC`` message body, as the trace export shows it."""
        self.sinks.put(self.sinks.file(world.TRACE_SPEC), body + "\n", self.clock_broker.format(when))


def topic_config(topic: str, broker: world.Broker) -> str:
    """An auto-created retry/DLQ topic: 1 queue, RW (DLQs are RW since 4.9.2, §2.2)."""
    return java.topic_config_to_string(topic, with_attributes=broker.major >= 5)
