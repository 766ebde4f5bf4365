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
            self.now = when
            fn(*args)
            self.events += 1
            if progress is not None and self.events % PROGRESS_EVERY == 0:
                progress(when)
        self.now = self.horizon
