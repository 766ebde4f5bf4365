"""A real ``rocketmq-retry ingest`` process killed while it writes and while it commits: the date's four tables
stay readable and all come from one run (the previous one, or the killed one rolled forward).

Marked slow (``make test-all``): two job processes, a minute and a half of a CI worker on a slow 2-core machine.
``make test`` crashes the same commit at each of its steps in-process (tests/test_partitions_hadoop.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir
from rocketmq_retry.warehouse import partitions as P

DS = "2026-11-21"
TABLES = P.JOB_TABLES["ingest"]
LINE = (
    "2026-11-21 23:25:0{s},000 WARN RocketmqClient - consumeMessage return null, Group: GID_a Msgs: [MessageExt "
    "[brokerName=b, queueId=0, msgId=0A, reconsumeTimes=0, toString()=Message{{topic='T', flag=0, properties="
    "{{UNIQ_KEY=U{s}, KEYS=K{s}}}, body=[104, 105], transactionId='null'}}]] MQ: MessageQueue [topic=T, "
    "brokerName=b, queueId=0]"
)
CONFIG = """timezone: UTC
sources: [{format: rocketmq-client-4x, path: "**/rocketmq_client*.log*", timezone: UTC}]
spark: {master: "local[1]", shuffle_partitions: 1}
"""
pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _ingest(landing: pathlib.Path, wh: pathlib.Path, cfg: pathlib.Path, crash_at: str) -> str:
    env = {**os.environ, P.CRASH_ENV: crash_at, "PYSPARK_SUBMIT_ARGS": "--driver-memory 1g pyspark-shell"}
    argv = ["ingest", "--date", DS, "--landing", str(landing), "--warehouse", str(wh), "--config", str(cfg)]
    code = f"import sys; from rocketmq_retry.cli import main; sys.exit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 86, done.stdout + done.stderr
    assert f"crashing at {crash_at}" in done.stderr
    return done.stderr


def _state(spark: Any, wh: pathlib.Path) -> tuple[set[str], dict[str, list[tuple[Any, ...]]]]:
    """The run ids of the four partitions and their rows, read the way the jobs read them."""
    paths = {t: P.committed(wh, t, DS) for t in TABLES}
    runs = {P.commit_of(p)["run_id"] for p in paths.values()}  # type: ignore[index]
    rows = {t: sorted(tuple(r) for r in spark.read.parquet(str(p)).collect()) for t, p in paths.items()}
    return runs, rows


def test_killed_ingest_leaves_the_date_whole(spark: Any, tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.jobs.ingest.job import run_ingest

    landing, wh, cfg = tmp_path / "landing", tmp_path / "wh", tmp_path / "c.yaml"
    (landing / "app" / "logs").mkdir(parents=True)
    (landing / "app" / "logs" / "rocketmq_client.log").write_text("\n".join(LINE.format(s=s) for s in (1, 2)) + "\n")
    cfg.write_text(CONFIG)
    source = {"format": "rocketmq-client-4x", "path": "**/rocketmq_client*.log*", "timezone": "UTC"}
    run_ingest(spark, parse_config({"timezone": "UTC", "sources": [source]}), DS, str(landing), str(wh))
    run_a = P.manifest(wh, "ingest", DS)["run_id"]  # type: ignore[index]
    runs, rows_a = _state(spark, wh)
    assert runs == {run_a} and len(rows_a["events"]) == 2

    # The landing changes (a third line arrives), then a re-run is killed with every table staged but nothing
    # committed: readers still get the previous run, whole.
    (landing / "app" / "logs" / "rocketmq_client.log").write_text("\n".join(LINE.format(s=s) for s in (1, 2, 3)) + "\n")
    _ingest(landing, wh, cfg, crash_at="staged:bindings")
    assert len(list((wh / "events").glob(f".dt={DS}.tmp-*"))) == 1
    assert _state(spark, wh) == ({run_a}, rows_a)

    # Killed mid-commit: events swapped in, quarantine moved out, so quarantine/dt=D does not exist on disk.
    # The journal says the run was complete: the first reader rolls it forward, and every table is the new run's.
    _ingest(landing, wh, cfg, crash_at="swap-out:quarantine")
    assert not partition_dir(wh, "quarantine", DS).exists()
    assert (wh / P.COMMITS_DIR / "ingest" / f"dt={DS}.journal").is_file()
    runs, rows_b = _state(spark, wh)
    assert len(runs) == 1 and runs != {run_a}
    assert P.manifest(wh, "ingest", DS)["tables"] == dict.fromkeys(TABLES, runs.pop())  # type: ignore[index]
    assert len(rows_b["events"]) == 3 and rows_b["quarantine"] == rows_a["quarantine"] == []
    assert sorted(p.name for t in TABLES for p in (wh / t).iterdir()) == [f"dt={DS}"] * 4
