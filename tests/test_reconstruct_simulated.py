"""The simulator's day through ingest and reconstruction, compared with the simulator's ground truth.

Done-when of issue 5: final state and delivery count match for at least 99% of lifecycles. dt=D is the simulated
day in the configuration's zone; D and D+1 are ingested and reconstructed, and a lifecycle's latest run wins (D+1
completes what D left IN_RETRY).
Broadcasting instances are one truth row each and one lifecycle together: their deliveries are summed.
"""

from __future__ import annotations

import csv
import datetime as dt
import pathlib
from collections import Counter, defaultdict
from typing import Any

import pytest

from rocketmq_retry.contract import partition_dir

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "landing"
CONFIG = ROOT / "examples" / "rocketmq-retry.yaml"


def truth_lifecycles(landing: pathlib.Path) -> dict[tuple[str, str], tuple[str, int]]:
    acc: dict[tuple[str, str], list[Any]] = defaultdict(lambda: ["", 0])
    with (landing / "_truth" / "lifecycles.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            key = (row["consumer_group"], row["msg_id"])
            # a broadcasting lifecycle spans the instances: DROPPED when any instance dropped it
            if acc[key][0] != "DROPPED":
                acc[key][0] = row["final_state"]
            acc[key][1] += int(row["deliveries"])
    return {k: (v[0], v[1]) for k, v in acc.items()}


def run_dates(local_day: str) -> list[str]:
    """dt=D is the day in the configuration's zone, as the simulator's --date; D+1 completes what crossed midnight."""
    d = dt.date.fromisoformat(local_day)
    return [d.isoformat(), (d + dt.timedelta(days=1)).isoformat()]


Result = dict[tuple[str, str], tuple[str, int]]


def run_pipeline(
    spark: Any, landing: pathlib.Path, config: pathlib.Path, wh: pathlib.Path, local_day: str, ran: str | None = None
) -> Result:
    """``ran``: a date ``wh`` already holds, ingested and reconstructed from the same landing and config."""
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.reconstruct import job as reconstruct

    got: dict[tuple[str, str], tuple[str, int]] = {}
    for day in run_dates(local_day):
        if day != ran:
            args = ["--date", day, "--landing", str(landing), "--warehouse", str(wh), "--config", str(config)]
            assert ingest.main(args) == 0
            if not partition_dir(wh, "events", day).is_dir():
                continue
            assert reconstruct.main(["--date", day, "--warehouse", str(wh), "--config", str(config)]) == 0
        for r in spark.read.parquet(str(partition_dir(wh, "lifecycles", day))).collect():
            got[(r["consumer_group"], r["msg_id"])] = (r["final_state"], r["deliveries"])
    return got


def mismatches(truth: Result, got: Result) -> Counter[str]:
    classes: Counter[str] = Counter()
    for key, (state, deliveries) in truth.items():
        mine = got.get(key)
        if mine is None:
            classes[f"missing lifecycle (truth {state})"] += 1
        elif mine[0] != state:
            classes[f"final state {state} -> {mine[0]}"] += 1
        elif mine[1] != deliveries:
            classes[f"deliveries differ ({state})"] += 1
    return classes


@pytest.mark.spark
def test_example_day_matches_simulator_truth(spark: Any, example_day: pathlib.Path, tmp_path: pathlib.Path) -> None:
    import json
    import shutil

    local_day = json.loads((EXAMPLE / "_truth" / "manifest.json").read_text())["date"]
    truth = truth_lifecycles(EXAMPLE)
    # D is the session's example day (the same landing, config and commands); D+1 is run on a copy of it
    assert partition_dir(example_day, "lifecycles", local_day).is_dir()
    shutil.copytree(example_day, tmp_path / "wh")
    got = run_pipeline(spark, EXAMPLE, CONFIG, tmp_path / "wh", local_day, ran=local_day)
    bad = mismatches(truth, got)
    matched = len(truth) - sum(bad.values())
    assert matched / len(truth) >= 0.99, f"{matched}/{len(truth)} match; mismatch classes: {dict(bad)}"


# The one class the logs cannot show (docs/reconstruction.md, "Limits"): a gRPC FIFO listener that returns
# FAILURE is retried inside the client, which logs those attempts at DEBUG only (§5.3, §6.2), so a message
# consumed after such retries reads as consumed at its first delivery.
UNOBSERVABLE = {"GID_settlement_fifo"}


@pytest.mark.spark
@pytest.mark.slow
def test_full_simulated_day_matches_simulator_truth(spark: Any, tmp_path: pathlib.Path) -> None:
    """Issue 5's done-when: 2,000 business messages over the demo deployment, D and D+1, at least 99% match."""
    from rocketmq_retry.simulate.cli import main as simulate

    landing = tmp_path / "landing"
    args = ["--date", "2026-11-20", "--out", str(landing), "--config", str(CONFIG), "--messages", "2000"]
    assert simulate([*args, "--seed", "5", "--quiet"]) == 0
    truth = truth_lifecycles(landing)
    got = run_pipeline(spark, landing, CONFIG, tmp_path / "wh", "2026-11-20")
    bad = mismatches(truth, got)
    matched = len(truth) - sum(bad.values())
    assert len(truth) == 2000
    assert matched / len(truth) >= 0.99, f"{matched}/{len(truth)} match; mismatch classes: {dict(bad)}"
    unexplained = {k for k in truth if got.get(k) != truth[k] and k[0] not in UNOBSERVABLE}
    assert not unexplained, sorted(unexplained)[:10]
