"""Per-minute statistics and their tick: the broker's counters behind ``stats.log`` (§6.3 L-B9) and 5.x
``broker_default.log`` (L-B10), each client's ``StatsItemSet`` minute lines, and the store's PAGECACHERT noise line.
"""

from __future__ import annotations

from rocketmq_retry.logformats import statements, stats
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.javanames import C_STATS
from rocketmq_retry.simulate.loop import EventLoop
from rocketmq_retry.simulate.model import GRPC, Instance
from rocketmq_retry.simulate.render import LogWriter
from rocketmq_retry.simulate.topology import Topology

Times = dict[tuple[str, str], list[int]]  # (broker name, stats key) -> event times in the open windows

PAGECACHERT = (
    "[PAGECACHERT] TotalPut 0, PutMessageDistributeTime [<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 "
    "[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0"
)


class MinuteStats:
    def __init__(self, loop: EventLoop, writer: LogWriter, topo: Topology, noise: float) -> None:
        self.loop = loop
        self.writer = writer
        self.topo = topo
        self.noise = noise
        self.sndbck: Times = {}
        self.dlq: Times = {}
        self.topic_put: Times = {}
        self.group_get: Times = {}
        self.first_event: dict[tuple[str, str, str], int] = {}

    @staticmethod
    def count(table: Times, broker: world.Broker, key: str, when: int) -> None:
        table.setdefault((broker.name, key), []).append(when)

    @staticmethod
    def client_stat(inst: Instance, kind: str, item: str, rt: int = 0) -> None:
        cell = inst.minute.setdefault(f"{kind} {item}", [0, 0])
        cell[0] += 1
        cell[1] += rt

    def start(self, day_start: int) -> None:
        self.loop.at((day_start // 60_000) * 60_000, self.tick)

    def tick(self) -> None:
        now = self.loop.now
        self._broker_stats(now)
        self._client_stats(now)
        if now + 60_000 <= self.loop.horizon:
            self.loop.at(now + 60_000, self.tick)
        if self.noise > 0 and (now // 60_000) % max(1, int(1 / self.noise)) == 0:
            for broker in self.topo.brokers.values():
                self.writer.broker_line(broker, now, "store", "INFO", "StoreStatsService", PAGECACHERT)

    def _broker_stats(self, now: int) -> None:
        for (bname, key), times in list(self.sndbck.items()):
            self._emit(now, statements.SNDBCK_PUT_NUMS, key, times, self.sndbck, ("sndbck", bname, key))
        for (bname, key), times in list(self.topic_put.items()):
            self._emit(now, "TOPIC_PUT_NUMS", key, times, self.topic_put, ("put", bname, key))
        for (bname, key), times in list(self.group_get.items()):
            self._emit(now, "GROUP_GET_NUMS", key, times, self.group_get, ("get", bname, key))
        for (bname, key), times in list(self.dlq.items()):
            self._emit(now, statements.SNDBCK2DLQ_TIMES, key, times, self.dlq, ("dlq", bname, key), "broker_default")

    def _emit(
        self,
        now: int,
        kind: str,
        key: str,
        times: list[int],
        table: Times,
        fk: tuple[str, str, str],
        file: str = "stats",
    ) -> None:
        """One broker minute line for the window that just closed; later events stay for the next window."""
        first = self.first_event.setdefault(fk, times[0] if times else now)
        start, end = stats.minute_window(now, first)
        inside = [t for t in times if start <= t < end]
        rest = [t for t in times if t >= end]
        table[(fk[1], fk[2])] = rest
        if not inside:
            if not rest:
                del table[(fk[1], fk[2])]
            return
        msg = stats.minute_line(kind, key, len(inside), end - start)
        self.writer.stats_line(self.topo.broker_named(fk[1]), now, msg, file)

    def _client_stats(self, now: int) -> None:
        for inst in self.topo.instances():
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
                self.writer.client_line(inst, now + 5, "INFO", C_STATS, "MQClientFactoryScheduledThread", msg)
                inst.minute[key] = [0, 0]
