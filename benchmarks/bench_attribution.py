"""Attribution on estates shaped like real ones: simulate each topology of ``benchmarks/topologies/`` (configs
that name no consumer group on any source), run ingest and reconstruct as the daily DAG does (D and D+1, plus the
days an application started on), and score the result against the simulator's ground truth:

- dead-letter precision and recall (a dead letter is (group, msg_id); "compensable" ones are those compensation
  acts on), and lifecycle final-state accuracy;
- the lines no evidence gave a group, by reason, with the config key the run names for them;
- the reconciliation's group-minutes with a difference, by cause;
- with ``--compensate``, the compensations a ``compensate`` run POSTs to a local HTTP receiver (each one must be a
  true dead letter, once, also when ``compensate`` runs twice).

Not a test: it takes minutes. ``python benchmarks/bench_attribution.py [--topology NAME]… [--messages N]
[--workdir DIR] [--compensate shared-topic] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import http.server
import json
import pathlib
import sys
import threading
import time
from collections import Counter
from typing import Any

from rocketmq_retry.contract import partition_dir

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOPOLOGIES = ROOT / "benchmarks" / "topologies"
DATE = "2026-11-20"


def truth(landing: pathlib.Path) -> tuple[dict[tuple[str, str], str], set[tuple[str, str]]]:
    """(final state per (group, msg_id), dead letters). A broadcasting message is one lifecycle over its
    instances: DROPPED when any instance dropped it."""
    states: dict[tuple[str, str], str] = {}
    dead: set[tuple[str, str]] = set()
    with (landing / "_truth" / "lifecycles.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            key = (row["consumer_group"], row["msg_id"])
            if states.get(key) != "DROPPED":
                states[key] = row["final_state"]
            if row["final_state"] == "DEAD_LETTERED":
                dead.add(key)
    return states, dead


def start_days(landing: pathlib.Path) -> list[str]:
    manifest = json.loads((landing / "_truth" / "manifest.json").read_text())
    day = dt.date.fromisoformat(manifest["date"])
    back = {int(g.get("started_days_before") or 0) for g in manifest["groups"].values()}
    return sorted({(day - dt.timedelta(days=k)).isoformat() for k in back if k > 0})


def withheld_config(name: str, workdir: pathlib.Path) -> pathlib.Path:
    """The topology's config without the remoting clients' own logs (rocketmq_client.log not collected) and
    without the applications' rolled logs (where the start-up lines of an application that started before the
    day are): only the current ``app.log`` / ``stdout.log`` of each host."""
    import yaml

    config = yaml.safe_load((TOPOLOGIES / f"{name}.yaml").read_text())
    clients = ("rocketmq-client-4x", "rocketmq-client-5x")
    config["sources"] = [
        {**s, "path": s["path"].rstrip("*")} if s["format"] == "spring-listener" else s
        for s in config["sources"]
        if s["format"] not in clients
    ]
    path = workdir / name / "withheld.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def run_topology(
    spark: Any, name: str, workdir: pathlib.Path, messages: int, seed: int, withheld: bool = False
) -> dict[str, Any]:
    """Simulate the topology and run the pipeline on it. ``withheld``: on the same landing, without the clients'
    own logs and without the days the applications started on (their start-up lines), as when an estate
    collects only its applications' logs: lines whose group nothing then establishes are counted, not placed."""
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.reconstruct import job as reconstruct
    from rocketmq_retry.simulate.cli import main as simulate

    config = TOPOLOGIES / f"{name}.yaml"
    scenario = TOPOLOGIES / f"{name}-scenario.yaml"
    landing, wh = workdir / name / "landing", workdir / name / ("warehouse-withheld" if withheld else "warehouse")
    if withheld:
        config = withheld_config(name, workdir)
    else:
        args = ["--date", DATE, "--out", str(landing), "--config", str(config), "--scenario", str(scenario)]
        assert simulate([*args, "--messages", str(messages), "--seed", str(seed), "--quiet", "--force"]) == 0
    d = dt.date.fromisoformat(DATE)
    days = [DATE, (d + dt.timedelta(days=1)).isoformat()]
    seconds: Counter[str] = Counter()
    for day in [*([] if withheld else start_days(landing)), *days]:
        t = time.monotonic()
        common = ["--date", day, "--warehouse", str(wh), "--config", str(config)]
        assert ingest.main([*common, "--landing", str(landing)]) == 0
        seconds["ingest"] += time.monotonic() - t
        if day in days:
            t = time.monotonic()
            assert reconstruct.main(common) == 0
            seconds["reconstruct"] += time.monotonic() - t
    got: dict[tuple[str, str], str] = {}
    dead: dict[tuple[str, str], bool] = {}
    unattributed: Counter[str] = Counter()
    fixes: dict[str, set[str]] = {}
    causes: Counter[str] = Counter()
    attribution: Counter[str] = Counter()
    for day in days:  # the later run of a lifecycle wins: D+1 completes what D left IN_RETRY
        for r in spark.read.parquet(str(partition_dir(wh, "lifecycles", day))).collect():
            got[(r["consumer_group"], r["msg_id"])] = r["final_state"]
        for r in spark.read.parquet(str(partition_dir(wh, "dead_letters", day))).collect():
            dead[(r["consumer_group"], r["msg_id"])] = bool(r["compensable"])
            attribution["+".join(r["attribution"] or ["?"])] += 1
        if day == DATE:
            for r in spark.read.parquet(str(partition_dir(wh, "unattributed", day))).collect():
                unattributed[r["reason"]] += int(r["lines"])
                fixes.setdefault(r["reason"], set()).add(f"{r['source_file']}: {r['fix']}")
            for r in spark.read.parquet(str(partition_dir(wh, "reconciliation", day))).collect():
                if r["cause"]:
                    causes[r["cause"]] += 1
    states, true_dead = truth(landing)
    compensable = {k for k, ok in dead.items() if ok}
    hit = compensable & true_dead
    return {
        "topology": name + (" (withheld)" if withheld else ""),
        "lifecycles": len(states),
        "dead_letters_true": len(true_dead),
        "dead_letters_found": len(dead),
        "dead_letters_compensable": len(compensable),
        "precision": len(hit) / len(compensable) if compensable else 1.0,
        "recall": len(hit) / len(true_dead) if true_dead else 1.0,
        "wrong_group_dead_letters": sorted(f"{g}/{m}" for g, m in compensable - true_dead)[:10],
        "final_state_accuracy": sum(1 for k, s in states.items() if got.get(k) == s) / len(states),
        "missing_lifecycles": sum(1 for k in states if k not in got),
        "dead_letter_attribution": dict(attribution),
        "unattributed_lines": dict(unattributed),
        "unattributed_fix": {k: sorted(v) for k, v in fixes.items()},
        "reconciliation_diff_minutes": dict(causes),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "warehouse": str(wh),
        "config": str(config),
    }


class Receiver(http.server.ThreadingHTTPServer):
    """A local HTTP receiver that records every compensation POSTed to it."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.posts.append({"key": self.headers.get("Idempotency-Key"), **json.loads(body)})
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def compensate(result: dict[str, Any], workdir: pathlib.Path) -> dict[str, Any]:
    """Run ``rocketmq-retry compensate`` twice for D against a local receiver; check what it POSTed."""
    import yaml

    from rocketmq_retry.cli import main as rocketmq_retry

    with Receiver() as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = yaml.safe_load(pathlib.Path(result["config"]).read_text())
        base["compensation"] = {
            "ledger_url": f"sqlite:///{workdir}/ledger-{result['topology']}.db",
            "routes": [{"topic": "*", "group": "*", "handler": "receiver"}],
            "handlers": {"receiver": {"type": "http", "url": f"http://127.0.0.1:{server.server_port}/compensations"}},
        }
        cfg = workdir / f"compensate-{result['topology']}.yaml"
        cfg.write_text(yaml.safe_dump(base), encoding="utf-8")
        codes = [
            rocketmq_retry(["compensate", "--date", DATE, "--warehouse", result["warehouse"], "--config", str(cfg)])
            for _ in range(2)
        ]
        server.shutdown()
        posts = server.posts
    landing = pathlib.Path(result["warehouse"]).parent / "landing"
    _, true_dead = truth(landing)
    posted = Counter((p["consumer_group"], p["msg_id"]) for p in posts)
    return {
        "exit_codes": codes,
        "posts": len(posts),
        "distinct": len(posted),
        "posted_twice": sum(1 for n in posted.values() if n > 1),
        "not_a_true_dead_letter": sorted(f"{g}/{m}" for g, m in set(posted) - true_dead),
        "by_group": dict(Counter(g for g, _ in posted)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = sorted(f.stem for f in TOPOLOGIES.glob("*.yaml") if not f.stem.endswith("-scenario"))
    p.add_argument("--topology", action="append", choices=names, help="default: every topology")
    p.add_argument("--messages", type=int, default=400)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--workdir", default="/tmp/bench-attribution")
    p.add_argument("--compensate", action="append", default=[], help="topologies to compensate (local receiver)")
    p.add_argument(
        "--withheld",
        action="store_true",
        help="also run each topology without the clients' own logs and the days its applications started on",
    )
    p.add_argument("--json", help="write the results here as JSON")
    ns = p.parse_args(argv)
    from rocketmq_retry.spark_session import build_spark_session

    spark = build_spark_session("bench-attribution", master="local[2]", driver_memory="3g")
    workdir = pathlib.Path(ns.workdir)
    results = []
    for name in ns.topology or names:
        print(f"== {name}", file=sys.stderr, flush=True)
        result = run_topology(spark, name, workdir, ns.messages, ns.seed)
        if name in ns.compensate:
            result["compensation"] = compensate(result, workdir)
        results.append(result)
        if ns.withheld:
            results.append(run_topology(spark, name, workdir, ns.messages, ns.seed, withheld=True))
    header = ("topology", "lifecycles", "DLQ true", "DLQ found", "precision", "recall", "final-state acc.",
              "unattributed lines", "recon. diff minutes")  # fmt: skip
    print(" | ".join(header))
    for r in results:
        print(
            " | ".join(
                str(x)
                for x in (
                    r["topology"], r["lifecycles"], r["dead_letters_true"], r["dead_letters_compensable"],
                    f"{r['precision']:.3f}", f"{r['recall']:.3f}", f"{r['final_state_accuracy']:.3f}",
                    r["unattributed_lines"] or "none", r["reconciliation_diff_minutes"] or "none",
                )
            )
        )  # fmt: skip
    if ns.json:
        pathlib.Path(ns.json).write_text(json.dumps(results, indent=2, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
