"""Matching reconstructed events with the per-minute counters, within one minute (docs/reconstruction.md,
"Reconciliation"): plain Python, literal minutes."""

from __future__ import annotations

from rocketmq_retry.jobs.reconstruct.reconciliation import unmatched

M = 60_000


def test_counts_a_minute_early_or_late_all_match() -> None:
    # the counter's minute lines sample every 10 s on another host's clock: chains of +1/-1 shifts cancel
    assert unmatched([(0, 2, 1), (M, 2, 3), (2 * M, 0, 1), (3 * M, 2, 1), (4 * M, 0, 0)]) == {}


def test_what_no_neighbouring_count_explains_stands() -> None:
    assert unmatched([(0, 1, 0), (M, 0, 0), (2 * M, 0, 0)]) == {0: (1, 0)}
    # two minutes apart is not a shift
    assert unmatched([(0, 1, 0), (2 * M, 0, 1)]) == {0: (1, 0), 2 * M: (0, 1)}
    # a count with nothing reconstructed near it
    assert unmatched([(0, 2, 1), (M, 2, 3), (2 * M, 0, 1), (3 * M, 2, 0), (4 * M, 0, 2)]) == {4 * M: (0, 1)}


def test_a_counter_not_collected_is_not_compared() -> None:
    assert unmatched([(0, 3, None), (M, 1, None)]) == {}
