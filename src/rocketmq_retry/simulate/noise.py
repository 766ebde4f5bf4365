"""Periodic client noise: offset persistence (``[persistAll]`` every 5 s per owned queue), heartbeats (logged every
20th run) and the occasional channel reconnect; ``--noise`` scales how often they are written.
"""

from __future__ import annotations

import random

from rocketmq_retry.engine import ConsumeMode, retry_topic
from rocketmq_retry.logformats import java, statements
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.javanames import C_FACTORY, C_NETTY, C_OFFSET
from rocketmq_retry.simulate.loop import EventLoop
from rocketmq_retry.simulate.model import GroupRun, Instance, owned_queues
from rocketmq_retry.simulate.render import LogWriter


class PeriodicNoise:
    def __init__(self, loop: EventLoop, rng: random.Random, writer: LogWriter, noise: float, day_start: int) -> None:
        self.loop = loop
        self.rng = rng
        self.writer = writer
        self.noise = noise
        self.day_start = day_start

    def persist_period(self) -> int:
        """persistConsumerOffsetInterval (5 s) stretched by ``--noise``; 0 = never."""
        return int(5_000 / self.noise) if self.noise > 0 else 0

    def first_run(self, first: int, period: int) -> tuple[int, int]:
        """The first run of a periodic task scheduled at ``first`` (then every ``period``) that falls on or after the
        simulated date's start, and how many runs were skipped (noise only runs from the date's start)."""
        if first >= self.day_start:
            return first, 0
        if period <= 0:
            return self.day_start, 0
        skipped = -(-(self.day_start - first) // period)
        return first + skipped * period, skipped

    def persist_tick(self, g: GroupRun, inst: Instance, broker: world.Broker) -> None:
        """``[persistAll]`` every persistConsumerOffsetInterval (5 s) per owned queue (the lines the sample trimmed)."""
        now = self.loop.now
        if not inst.persist_lines:
            # a POP consumer's business queues are popped, not pulled: only %RETRY%<group> has an offset to persist
            pop = g.policy.consume_mode is ConsumeMode.POP
            queues = [] if pop else [(g.scenario.topic, q) for q in owned_queues(g, inst)]
            if inst.index == 0:
                queues.append((retry_topic(g.name), 0))
            if not queues:
                return
            for topic, q in queues:
                mq = java.message_queue_to_string(topic, broker.name, q)
                head = fill(statements.C_PERSIST_ALL, g.name, inst.client_id, mq, "")
                inst.persist_lines.append((head, topic, q))
        for n, (head, topic, q) in enumerate(inst.persist_lines):
            self.writer.client_line(
                inst,
                now + n,
                "INFO",
                C_OFFSET,
                "MQClientFactoryScheduledThread",
                head + str(broker.max_offset(topic, q)),
            )
        period = self.persist_period()
        if period:
            self.loop.at(now + period, self.persist_tick, g, inst, broker)

    def heartbeat_tick(self, inst: Instance, broker: world.Broker, times: int) -> None:
        # 4.9.x MQClientInstance logs the heartbeat only when times % 20 == 0 (every 10 minutes at 30 s).
        now = self.loop.now
        every = max(1, round(20 / self.noise)) if self.noise > 0 else 0
        if every and times % every == 0:
            self.writer.client_line(
                inst, now, "INFO", C_FACTORY, "MQClientFactoryScheduledThread",
                f"send heart beat to broker[{broker.name} 0 {broker.addr}] success",
            )  # fmt: skip
        if every and times % (12 * every) == 0:
            self._reconnect(inst, broker)
        self.loop.at(now + 30_000, self.heartbeat_tick, inst, broker, times + 1)

    def _reconnect(self, inst: Instance, broker: world.Broker) -> None:
        t = self.loop.now
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
            self.writer.client_line(
                inst, t + n * 3, "INFO", C_NETTY, "NettyClientSelector_1", line, logger4x="RocketmqRemoting"
            )
