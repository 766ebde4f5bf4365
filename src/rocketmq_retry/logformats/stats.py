"""Broker ``stats.log`` lines (docs/rocketmq-rules.md §6.3 L-B9/L-B10; tests/data/rocketmq-4.9.4/broker/stats.log).

``StatsItem`` samples its counter every 10 s and keeps 7 snapshots; the per-minute line printed at minute P reports
``SUM`` = the increase between its first and last snapshot and ``TPS`` = SUM per second over that span. In the
4.9.4 sample the last snapshot is the one taken 10 s before the print and the first is 60 s earlier (or, for an
item created within the window, the 10 s boundary before its first event: ``SUM 12 TPS 0.24`` = 12 over 50 s).
``AVGPT`` = value sum / call count, 1.00 for send-back counters (one message per call).
"""

from __future__ import annotations

from rocketmq_retry.logformats.statements import STATS_MINUTE, fill

SNAPSHOT_MS = 10_000
PRINT_LAG_MS = 10_000  # the print at minute P sees the snapshot of P - 10 s as its last one


def minute_window(print_ms: int, first_event_ms: int) -> tuple[int, int]:
    """``[start, end)`` of the events counted by the minute line printed at ``print_ms``."""
    end = print_ms - PRINT_LAG_MS
    start = max(end - 60_000, (first_event_ms // SNAPSHOT_MS) * SNAPSHOT_MS)
    return start, end


def minute_line(kind: str, key: str, total: int, window_ms: int, calls: int | None = None) -> str:
    """``[SNDBCK_PUT_NUMS] [T@G] Stats In One Minute, SUM: 12 TPS: 0.24 AVGPT: 1.00`` (the message part)."""
    seconds = window_ms / 1000 if window_ms > 0 else 60.0
    calls = total if calls is None else calls
    avg = total / calls if calls else 0.0
    return fill(STATS_MINUTE, kind, key, total, f"{total / seconds:.2f}", f"{avg:.2f}")


def stats_key(*parts: str) -> str:
    """Stats keys join their parts with ``@``: ``<topic>@<group>`` or ``<owner>@<topic>@<group>@SEND_BACK_TO_DLQ``."""
    return "@".join(parts)
