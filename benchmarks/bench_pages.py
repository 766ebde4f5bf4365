"""Benchmark of the read layer behind the operator's pages and ``explain`` (not a test): each call's wall time on
one reconstructed date, median of 5 (plus min and max), in this process, with no Spark.

    .venv/bin/python benchmarks/bench_pages.py --warehouse WH --date D [--config C] [--repeat 5] [--json]
    .venv/bin/python benchmarks/bench_pages.py --synthetic 100000 [--date D]   # N dead letters, built in a temp dir
    .venv/bin/python benchmarks/bench_pages.py                                  # (make bench) --synthetic 100000
    .venv/bin/python benchmarks/bench_pages.py --warehouse WH --date D --pages 50  # + each page over HTTP: p50/p95

``--synthetic N`` writes a warehouse of N dead-lettered lifecycles of 20 groups (three hops and two event lines
each, committed like the jobs commit) and a SQLite ledger holding all of them, half DONE: the dead-letter page's
paging, filters and ledger join at the size the pages must handle.

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


def page_latencies(
    warehouse: str, config: str | None, ds: str, s: dict[str, str], n: int
) -> dict[str, dict[str, float]]:
    """Each page as the browser asks for it, through the pages app itself (routing, templates, SVG, the locked
    read layer), ``n`` requests each after one warm-up: p50 and p95 in ms. Airflow's token check is left out
    (``authenticate=False``): it is the api-server's cost, the same for every plugin page."""
    from urllib.parse import quote, urlencode

    from fastapi.testclient import TestClient

    from rocketmq_retry.airflow.pages import app as pages

    source = pages.Source(pathlib.Path(warehouse), pathlib.Path(config) if config else None)
    day = {"from": ds, "to": ds}
    urls = {
        "landing": "/",
        "run overview": f"/runs/{ds}",
        "dead letters, page 1": "/dead-letters?" + urlencode(day),
        "dead letters, group filter": "/dead-letters?" + urlencode({**day, "group": s["busiest_group"]}),
        "dead letters, key filter": "/dead-letters?" + urlencode({**day, "key": s["business_key"]}),
        "dead letters CSV (all rows)": "/dead-letters.csv?" + urlencode(day),
        "message search": "/messages?" + urlencode({**day, "q": s["msg_id"]}),
        "message page": f"/messages/{quote(s['msg_id'], safe='')}?" + urlencode({**day, "group": s["group"]}),
        "groups (14 days)": "/groups?" + urlencode({"days": 14, "to": ds}),
    }
    out: dict[str, dict[str, float]] = {}
    with TestClient(pages.create_pages_app(lambda: source, authenticate=False)) as client:
        for name, url in urls.items():
            first = client.get(url)
            if first.status_code != 200:
                raise SystemExit(f"bench_pages: {url} answered {first.status_code}: {first.text[:300]}")
            runs = []
            for _ in range(n):
                t0 = time.perf_counter()
                client.get(url)
                runs.append((time.perf_counter() - t0) * 1000)
            cuts = statistics.quantiles(runs, n=20, method="inclusive")
            out[name] = {"p50_ms": statistics.median(runs), "p95_ms": cuts[18], "bytes": float(len(first.content))}
    return out


def synthetic(base: pathlib.Path, n: int, ds: str) -> tuple[pathlib.Path, pathlib.Path]:
    """A warehouse of ``n`` dead letters and its config (see the module doc); returns (warehouse, config)."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq
    from sqlalchemy import text

    from rocketmq_retry import contract
    from rocketmq_retry.compensation.ledger import Ledger
    from rocketmq_retry.compensation.model import Registration
    from rocketmq_retry.warehouse.partitions import write_partitions

    types = {"string": pa.string(), "timestamp": pa.timestamp("us", tz="UTC"), "bigint": pa.int64(),
             "int": pa.int32(), "boolean": pa.bool_(), "array<string>": pa.list_(pa.string()),
             "map<string,bigint>": pa.map_(pa.string(), pa.int64())}  # fmt: skip

    def writer(table: str, cols: dict[str, list[Any]]) -> Callable[[pathlib.Path], None]:
        schema = pa.schema([(c, types[t]) for c, t in contract.SCHEMAS[table]])
        rows = len(next(iter(cols.values())))
        data = pa.table({f.name: cols.get(f.name, pa.nulls(rows, f.type)) for f in schema}, schema=schema)

        def write(path: pathlib.Path) -> None:
            path.mkdir(parents=True, exist_ok=True)
            pq.write_table(data, path / "part-00000.parquet")

        return write

    wh = base / "wh"
    t0 = dt.datetime.fromisoformat(ds).replace(tzinfo=dt.UTC)
    ids = [f"SYN{i:010d}" for i in range(n)]
    groups = [f"GID_syn_{i % 20:02d}" for i in range(n)]
    topics = [f"TOPIC_{i % 7}" for i in range(n)]
    keys = [f"KEY-{i} ORD-{i * 7}" for i in range(n)]
    times = [t0 + dt.timedelta(milliseconds=i * 800) for i in range(n)]
    write_partitions(wh, ds, {"events": writer("events", {
        "event_id": [f"e{i}-{k}" for i in range(n) for k in (0, 1)],
        "event_time": [t for t in times for _ in (0, 1)], "msg_id": [m for m in ids for _ in (0, 1)],
        "event_type": ["CONSUME_FAILED", "DEAD_LETTERED"] * n, "source_file": ["app/logs/rocketmq_client.log",
        "dumps/dlq.jsonl"] * n, "line_no": [i for i in range(2 * n)],
        "offset_msg_id": [f"OFF{i:012d}" for i in range(2 * n)]})}, job="ingest")  # fmt: skip
    write_partitions(wh, ds, {
        "lifecycles": writer("lifecycles", {"consumer_group": groups, "msg_id": ids, "original_topic": topics,
                             "keys": keys, "business_key": [k.split()[0] for k in keys], "first_seen": times,
                             "last_seen": times, "deliveries": [3] * n, "final_state": ["DEAD_LETTERED"] * n,
                             "anomalies": [[] for _ in ids], "attribution": [["line"]] * n}),
        "transitions": writer("transitions", {"consumer_group": [g for g in groups for _ in (0, 1, 2)],
                              "msg_id": [m for m in ids for _ in (0, 1, 2)], "hop": [0, 1, 2] * n,
                              "to_state": ["DELIVERED", "FAILED", "DEAD_LETTERED"] * n, "inferred": [False] * 3 * n,
                              "observed_at": [t for t in times for _ in (0, 1, 2)],
                              "evidence": [e for i in range(n) for e in ([], [f"e{i}-0"], [f"e{i}-1"])]}),
        "dead_letters": writer("dead_letters", {"consumer_group": groups, "msg_id": ids, "original_topic": topics,
                               "dlq_at": times, "reconsume_times": [3] * n, "keys": keys, "tags": ["t"] * n,
                               "business_key": [k.split()[0] for k in keys], "compensable": [True] * n,
                               "attribution": [["line"]] * n, "evidence": [[f"e{i}-1"] for i in range(n)]}),
        "reconciliation": writer("reconciliation", {"consumer_group": []}),
        "unattributed": writer("unattributed", {"source": []}),
    }, job="reconstruct")  # fmt: skip
    url = f"sqlite:///{wh / 'compensation.db'}"
    with Ledger.open(url) as ledger:
        ledger.register(
            Registration(g, m, ds, t, "log-only", None) for g, m, t in zip(groups, ids, topics, strict=True)
        )
        with ledger.engine.begin() as conn:
            conn.execute(text("UPDATE compensation_ledger SET state = 'DONE', attempts = 1 WHERE rowid % 2 = 0"))
    config = base / "c.yaml"
    config.write_text("timezone: UTC\n")
    return wh, config


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_pages.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse")
    p.add_argument("--date", default="2026-11-20")
    p.add_argument("--synthetic", type=int, metavar="N", help="build N dead letters in a temp dir and time those")
    p.add_argument("--config", default=None)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--pages", type=int, metavar="N", default=0, help="also time each page over HTTP, N requests")
    args = p.parse_args(argv)
    if not args.warehouse and not args.synthetic:
        args.synthetic = 100_000  # what `make bench` runs: the dead-letter page at the size it must handle
    if args.synthetic:
        import tempfile

        base = pathlib.Path(tempfile.mkdtemp(prefix="bench-pages-"))
        t0 = time.perf_counter()
        wh, config = synthetic(base, args.synthetic, args.date)
        print(f"synthetic warehouse of {args.synthetic} dead letters at {wh}: {time.perf_counter() - t0:.1f} s")
        args.warehouse, args.config = str(wh), str(config)

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
    pages = page_latencies(args.warehouse, args.config, ds, s, args.pages) if args.pages else {}
    if args.synthetic:
        import shutil

        shutil.rmtree(pathlib.Path(args.warehouse).parent, ignore_errors=True)
    if args.json:
        print(json.dumps({"warehouse": args.warehouse, "date": ds, "dead_letters": total, "open_ms": opened_ms,
                          "samples": s, "calls": results, "pages": pages}, indent=2))  # fmt: skip
        return 0
    print(f"read layer on {args.warehouse} dt={ds}: {total} dead letters; open_warehouse {opened_ms:.0f} ms")
    print(f"samples: msg_id {s['msg_id']} ({s['group']}), business key {s['business_key']!r}, "
          f"offset msg id {s['offset_msg_id']}, busiest group {s['busiest_group']}")  # fmt: skip
    width = max(len(n) for n in results)
    print(f"{'call':<{width}}  {'cold ms':>9}  {'median ms':>9}  {'min ms':>9}  {'max ms':>9}")
    for name, r in results.items():
        print(f"{name:<{width}}  {r['cold_ms']:9.1f}  {r['median_ms']:9.1f}  {r['min_ms']:9.1f}  {r['max_ms']:9.1f}")
    if pages:
        width = max(len(n) for n in pages)
        print(f"\npages over HTTP, {args.pages} requests each (after one warm-up)")
        print(f"{'page':<{width}}  {'p50 ms':>8}  {'p95 ms':>8}  {'bytes':>9}")
        for name, r in pages.items():
            print(f"{name:<{width}}  {r['p50_ms']:8.1f}  {r['p95_ms']:8.1f}  {r['bytes']:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
