"""What every part of a simulated day shares: one clock, one random generator, the settings, the topology, the
log writer, the per-minute counters and the trace dispatcher.

The parts (startup, publishing, consumption, retry path) take this one object instead of seven arguments each;
``Part`` unpacks it into the attribute names the parts read. Nothing here draws from ``rng``: wiring never changes
the order of draws, so it never changes a byte of the output.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rocketmq_retry.simulate.loop import EventLoop
from rocketmq_retry.simulate.minute_stats import MinuteStats
from rocketmq_retry.simulate.render import LogWriter
from rocketmq_retry.simulate.scenario import Settings
from rocketmq_retry.simulate.topology import Topology
from rocketmq_retry.simulate.tracing import TraceDispatcher


@dataclass(frozen=True)
class SimContext:
    loop: EventLoop
    rng: random.Random
    settings: Settings
    topo: Topology
    writer: LogWriter
    stats: MinuteStats
    tracer: TraceDispatcher


class Part:
    """A collaborator of the simulator: it reads the shared context under short names."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.loop = ctx.loop
        self.rng = ctx.rng
        self.s = ctx.settings
        self.topo = ctx.topo
        self.writer = ctx.writer
        self.stats = ctx.stats
        self.tracer = ctx.tracer
