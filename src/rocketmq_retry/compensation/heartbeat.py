"""The leases a batch holds while its handlers run (docs/compensation.md "Guarantees": a slow handler keeps its
claim; leases run on the database's clock): the heartbeat that renews them and how much lease a call needs left."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import Claim
from rocketmq_retry.compensation.redact import redact
from rocketmq_retry.config import Config

# the batch service's logger: operators filter one name for everything a batch reports
log = logging.getLogger("rocketmq_retry.compensation")


def lease_needed(cfg: Config, name: str, ledger: Ledger) -> float:
    """Seconds of lease a handler call needs left before it starts: its worst case, capped at half the lease
    (the heartbeat renews the lease while the call runs; this only matters when the heartbeat cannot)."""
    hc = cfg.compensation.handlers[name]
    pause = max(hc.backoff_max_seconds, hc.retry_after_max_seconds)
    worst = hc.timeout_seconds * hc.max_tries + pause * (hc.max_tries - 1)
    return min(ledger.lease_seconds / 2, worst if hc.type == "http" else hc.timeout_seconds)


class Heartbeat:
    """Extends the leases of the claims a batch holds, every third of a lease, from a thread of its own, so a
    handler call (or a chunk of them) may take longer than one lease without another worker taking the row.

    A claim the heartbeat finds taken over (its lease expired while the worker was frozen or cut off from
    the database, and another worker claimed it) is ``lost``: its outcome is not recorded by this worker.
    Remaining lease is measured on this worker's monotonic clock from the last renewal the database granted,
    never by comparing the database's timestamps with the local wall clock."""

    def __init__(self, ledger: Ledger, interval: float | None = None) -> None:
        self.ledger = ledger
        self.interval = max(0.05, ledger.lease_seconds / 3 if interval is None else interval)
        self.lost: set[tuple[str, str]] = set()
        self._held: dict[tuple[str, str], Claim] = {}
        self._renewed: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, claims: Iterable[Claim]) -> None:
        with self._lock:
            for c in claims:
                key = (c.consumer_group, c.msg_id)
                self._held[key] = c
                self._renewed[key] = c.won_at
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="compensation-heartbeat", daemon=True)
            self._thread.start()

    def drop(self, claim: Claim) -> None:
        """Stop renewing ``claim``; called before its outcome is recorded (the lock waits out a renewal in
        flight, so a finished claim is never mistaken for a lost one)."""
        with self._lock:
            self._held.pop((claim.consumer_group, claim.msg_id), None)

    def remaining(self, claim: Claim) -> float:
        key = (claim.consumer_group, claim.msg_id)
        with self._lock:
            renewed = self._renewed.get(key, claim.won_at)
        return self.ledger.lease_seconds - (time.monotonic() - renewed)

    def beat(self) -> None:
        with self._lock:
            claims = list(self._held.values())
            if not claims:
                return
            asked = time.monotonic()  # before the UPDATE: the database's new lease ends no earlier than this + lease
            try:
                gone = self.ledger.extend(claims)
            except Exception as exc:  # the database is unreachable: keep trying while the lease lasts
                log.warning("lease heartbeat failed (%s); retrying in %.1fs", redact(str(exc)), self.interval)
                return
            for key in {(c.consumer_group, c.msg_id) for c in claims} - gone:
                self._renewed[key] = asked
            for key in gone:
                self._held.pop(key, None)
                if key not in self.lost:
                    self.lost.add(key)
                    log.warning("claim on %s/%s was taken over by another worker while this one held it", *key)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
