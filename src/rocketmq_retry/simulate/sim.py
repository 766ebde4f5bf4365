"""The discrete-event simulator: producers publish a day of business messages, consumer groups receive them, the
listener succeeds or fails as the scenario says, and **the engine** decides every hop after a failure. Each event
writes what the real processes would write, through :mod:`rocketmq_retry.logformats`.

Time is true (broker) time in epoch ms; hosts write with their own clock skew. :class:`Simulator` only wires the
parts together (see docs/DESIGN.md §3 for what each module owns): the same seed gives the same bytes.
"""

from __future__ import annotations

import datetime as _dt
import random
import sys
import time
from typing import Any

from rocketmq_retry.config import Config
from rocketmq_retry.logformats import timefmt
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.consume import Consumer
from rocketmq_retry.simulate.context import SimContext
from rocketmq_retry.simulate.failures import FailurePlan
from rocketmq_retry.simulate.loop import EventLoop
from rocketmq_retry.simulate.minute_stats import MinuteStats
from rocketmq_retry.simulate.model import GroupRun, Instance, Lifecycle
from rocketmq_retry.simulate.noise import PeriodicNoise
from rocketmq_retry.simulate.produce import Publishing
from rocketmq_retry.simulate.render import LogWriter
from rocketmq_retry.simulate.scenario import Settings
from rocketmq_retry.simulate.startup import Startup
from rocketmq_retry.simulate.topology import build_topology
from rocketmq_retry.simulate.tracing import TraceDispatcher
from rocketmq_retry.simulate.truth import Truth


class Simulator:
    def __init__(self, config: Config, settings: Settings, root: Any) -> None:
        self.config = config
        self.s = settings
        # one generator for the whole run: every part draws from it in event order, which is what makes a seed's
        # output reproducible byte for byte
        self.rng = random.Random(settings.seed)
        self.sinks = world.Sinks(root, settings.rotate_bytes, settings.gzip)
        self.truth = Truth()
        self.zone = config.timezone
        self.zone4x = settings.client4x_timezone or config.timezone
        self.zone_app = settings.app_timezone or config.timezone
        # every date of the run with its [start, end) in true time; start-up and periodic tasks begin with the
        # first, the horizon counts from the last
        self.days = [
            (day, *timefmt.day_bounds_ms(day, self.zone))
            for day in (settings.date + _dt.timedelta(days=k) for k in range(max(1, settings.days)))
        ]
        self.day_start, self.day_end = self.days[0][1], self.days[0][2]
        self.loop = EventLoop(self.days[-1][1] + int(settings.horizon_hours * 3_600_000))
        self.writer = LogWriter(self.sinks, self.zone4x, self.zone_app)
        self.topo = build_topology(config, settings, self.rng, self.zone4x, self.zone_app)
        self.stats = MinuteStats(self.loop, self.writer, self.topo, settings.noise)
        self.tracer = TraceDispatcher(self.loop, self.writer)
        noise = PeriodicNoise(self.loop, self.rng, self.writer, settings.noise, self.day_start)
        ctx = SimContext(self.loop, self.rng, settings, self.topo, self.writer, self.stats, self.tracer)
        self.startup = Startup(ctx, noise, self.zone, self.day_start)
        self.plan = FailurePlan(self.topo.groups, self.days)
        self.consumer = Consumer(ctx, self.plan)
        self.publishing = Publishing(ctx, self.truth, self.consumer)
        self._progress_at = time.monotonic()

    @property
    def brokers(self) -> dict[str, world.Broker]:
        return self.topo.brokers

    @property
    def groups(self) -> list[GroupRun]:
        return self.topo.groups

    @property
    def lifecycles(self) -> list[Lifecycle]:
        return self.consumer.lifecycles

    def all_instances(self) -> list[Instance]:
        return self.topo.instances()

    def run(self) -> None:
        self.startup.schedule()
        self.publishing.schedule(self.days)
        self.stats.start(self.day_start)
        self.loop.run(self._progress if self.s.progress else None)
        self.tracer.flush_all(self.topo.instances())

    def _progress(self, when: int) -> None:
        now = time.monotonic()
        if now - self._progress_at >= 2:
            self._progress_at = now
            stamp = _dt.datetime.fromtimestamp(when / 1000, _dt.UTC).strftime("%Y-%m-%d %H:%M")
            print(f"simulate: {stamp}Z, {self.sinks.lines} lines written", file=sys.stderr, flush=True)

    def finish_truth(self) -> None:
        self.truth.windows = {i.incident_id: i for i in self.plan.incidents}
        for lc in self.lifecycles:
            self.truth.lifecycle(lc, self.topo.broker_of(lc.group))
        self.truth.incidents_of(self.plan.incidents, self.lifecycles)

    @property
    def multi_day(self) -> bool:
        """Whether the run writes what only a run over dates has (truth by date, the dates in the manifest): a
        one-date, one-folder run keeps exactly the files it always had."""
        return len(self.days) > 1 or self.s.collect != "whole"


__all__ = ["Simulator"]
