"""A token bucket per handler, so a burst of dead letters does not flood the system being compensated."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """At most ``rate`` acquisitions per second on average, bursts up to ``burst``. Thread-safe."""

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, burst if burst is not None else rate)
        self._tokens = 1.0  # start nearly empty: a restart must not grant a full burst on top of the last one
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping until one is available. Returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1.0:
                    self._tokens -= 1.0
                    return waited
                delay = (1.0 - self._tokens) / self.rate
            self._sleep(delay)
            waited += delay
