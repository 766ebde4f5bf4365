"""The discrete-event core: a clock in true (broker) epoch ms and a heap of scheduled calls, run in time order
(ties in the order they were scheduled) up to a horizon.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

PROGRESS_EVERY = 20_000  # events between progress callbacks


class EventLoop:
    def __init__(self, horizon: int) -> None:
        self.horizon = horizon
        self.now = 0
        self.events = 0
        self._heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        # instants at which an observer looks at the world (a log collector at midnight); they are not events, so
        # they take no sequence number and cannot reorder ties or draws
        self._cuts: list[int] = []
        self._on_cut: Callable[[int], None] | None = None

    def observe(self, cuts: list[int], on_cut: Callable[[int], None]) -> None:
        """Call ``on_cut(c)`` for each ``c`` (up to the horizon) once every event before ``c`` has run and none at
        or after it has."""
        self._cuts = sorted(c for c in cuts if c <= self.horizon)
        self._on_cut = on_cut

    def at(self, when: int, fn: Callable[..., None], *args: Any) -> None:
        """Call ``fn(*args)`` at ``when``; the sequence number keeps ties in scheduling order (and never compares
        the callables)."""
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, fn, args))

    def run(self, progress: Callable[[int], None] | None = None) -> None:
        """Run every event up to the horizon, then leave the clock at the horizon."""
        heap = self._heap
        while heap:
            when, _, fn, args = heapq.heappop(heap)
            if when > self.horizon:
                break
            self._cut_before(when)
            self.now = when
            fn(*args)
            self.events += 1
            if progress is not None and self.events % PROGRESS_EVERY == 0:
                progress(when)
        self._cut_before(self.horizon + 1)
        self.now = self.horizon

    def _cut_before(self, when: int) -> None:
        while self._cuts and self._cuts[0] <= when:
            cut = self._cuts.pop(0)
            self.now = cut
            assert self._on_cut is not None
            self._on_cut(cut)
