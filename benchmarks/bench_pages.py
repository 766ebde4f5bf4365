"""Benchmark of the read layer behind the operator's pages and ``explain`` (not a test): each call's wall time on
one reconstructed date, median of 5 (plus min and max), in this process, with no Spark.

    .venv/bin/python benchmarks/bench_pages.py --warehouse WH --date D [--config C] [--repeat 5] [--json]

The messages it asks about are taken from the date itself: the first dead letter (story, find by msg_id, by its
business key and by an offset msg id of one of its lines) and the busiest consumer group. The first call of each
kind is timed too ("cold": DuckDB reading footers, the ledger opened) next to the median of the repeats.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from rocketmq_retry.explore import DeadLetterFilter, Explorer, open_warehouse


def _timed(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    t0 = time.perf_counter()
    fn()
    cold = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return {"cold_ms": cold * 1000, "median_ms": statistics.median(runs) * 1000, "min_ms": min(runs) * 1000,
            "max_ms": max(runs) * 1000}  # fmt: skip


def _samples(ex: Explorer, ds: str) -> dict[str, str]:
    """A dead letter of the date, its business key, an offset msg id of one of its lines, the busiest group."""
    page = ex.dead_letters(ds, ds, DeadLetterFilter(), 1, 1)
    if not page.rows:
        raise SystemExit(f"bench_pages: no dead letters on {ds} in {ex.warehouse}: nothing to look up")
    row = page.rows[0]
    story = ex.story(row.msg_id, row.consumer_group, ds, ds)[0]
    ids = [e.event_id for e in story.evidence]
    events, params = ex._scan("events", [ds])
    offset = ex._query(
        f"SELECT offset_msg_id FROM ({events}) WHERE list_contains(?, event_id) AND offset_msg_id IS NOT NULL LIMIT 1",
        [*params, ids],
    )
    overview = ex.run_overview(ds)
    busiest = max(overview.groups, key=lambda g: g.lifecycles).consumer_group
    return {
        "msg_id": row.msg_id,
        "group": row.consumer_group,
        "business_key": row.business_key or row.msg_id,
        "offset_msg_id": offset[0]["offset_msg_id"] if offset else row.msg_id,
        "busiest_group": busiest,
        "topic": row.topic or "",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_pages.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", required=True)
    p.add_argument("--date", required=True)
    p.add_argument("--config", default=None)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    ex = open_warehouse(pathlib.Path(args.warehouse), args.config)
    opened_ms = (time.perf_counter() - t0) * 1000
    ds = args.date
    s = _samples(ex, ds)
    total = ex.dead_letters(ds, ds, DeadLetterFilter(), 1, 1).total
    last_page = max(1, -(-total // 50))
    calls: dict[str, Callable[[], Any]] = {
        "dates()": ex.dates,
        "run_overview(date)": lambda: ex.run_overview(ds),
        "dead_letters page 1": lambda: ex.dead_letters(ds, ds, DeadLetterFilter(), 1, 50),
        f"dead_letters last page ({last_page})": lambda: ex.dead_letters(ds, ds, DeadLetterFilter(), last_page, 50),
        "dead_letters group filter": lambda: ex.dead_letters(ds, ds, DeadLetterFilter(group=s["busiest_group"]), 1, 50),
        "dead_letters key filter": lambda: ex.dead_letters(ds, ds, DeadLetterFilter(key=s["business_key"]), 1, 50),
        "dead_letters state filter (ledger joined)": lambda: ex.dead_letters(
            ds, ds, DeadLetterFilter(compensation_state="DONE"), 1, 50
        ),
        "dead_letters_csv (all rows)": lambda: sum(len(c) for c in ex.dead_letters_csv(ds, ds)),
        "find(msg_id)": lambda: ex.find(s["msg_id"], ds, ds),
        "find(business key)": lambda: ex.find(s["business_key"], ds, ds),
        "find(offset msg id)": lambda: ex.find(s["offset_msg_id"], ds, ds),
        "story(msg_id, group)": lambda: ex.story(s["msg_id"], s["group"], ds, ds),
        "story(msg_id) all dates": lambda: ex.story(s["msg_id"]),
        "groups(date, 14 days)": lambda: ex.groups(ds, 14),
    }
    results = {name: _timed(fn, args.repeat) for name, fn in calls.items()}
    ex.close()
    if args.json:
        print(json.dumps({"warehouse": args.warehouse, "date": ds, "dead_letters": total, "open_ms": opened_ms,
                          "samples": s, "calls": results}, indent=2))  # fmt: skip
        return 0
    print(f"read layer on {args.warehouse} dt={ds}: {total} dead letters; open_warehouse {opened_ms:.0f} ms")
    print(f"samples: msg_id {s['msg_id']} ({s['group']}), business key {s['business_key']!r}, "
          f"offset msg id {s['offset_msg_id']}, busiest group {s['busiest_group']}")  # fmt: skip
    width = max(len(n) for n in results)
    print(f"{'call':<{width}}  {'cold ms':>9}  {'median ms':>9}  {'min ms':>9}  {'max ms':>9}")
    for name, r in results.items():
        print(f"{name:<{width}}  {r['cold_ms']:9.1f}  {r['median_ms']:9.1f}  {r['min_ms']:9.1f}  {r['max_ms']:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
