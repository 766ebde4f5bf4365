"""The partition writer's commit protocol on a URI warehouse (``file://``): every rename, delete and the lock go
through Hadoop's FileSystem API in the Spark JVM (LocalFileSystem here; HDFS or ABFS on a cluster). A crash at
every step leaves one whole run; a lock left by a dead writer is taken over; DataFrames round-trip."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from rocketmq_retry.warehouse import partition_fs
from rocketmq_retry.warehouse import partitions as P

DS = "2026-11-20"
TABLES = P.JOB_TABLES["reconstruct"]
STEPS = [
    *(f"staged:{t}" for t in TABLES),
    "journal",
    *(f"swap-{half}:{t}" for t in TABLES for half in ("out", "in")),
    "manifest",
    "journal-removed",
]
COMMITTED_FROM = STEPS.index("journal")

pytestmark = pytest.mark.spark


class Killed(BaseException):
    """What ``_step`` raises instead of ending the process: the writer stops at that point."""


def _hadoop_writer(label: str):  # type: ignore[no-untyped-def]
    def write(path: P.HadoopPath) -> None:
        assert isinstance(path, P.HadoopPath) and path.uri.startswith("file://")
        path.fs._create(path / "part-0.txt", label)

    return write


def _write(wh: str, label: str) -> str:
    return P.write_partitions(wh, DS, {t: _hadoop_writer(label) for t in TABLES}, job="reconstruct")


def _labels(wh: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for t in TABLES:
        path = P.committed(wh, t, DS, wait=5)
        assert isinstance(path, P.HadoopPath)
        out[t] = path.fs.read_text(path / "part-0.txt") if path.is_dir() else None
    return out


def _leftovers(root: pathlib.Path) -> list[str]:
    return sorted(p.name for t in TABLES for p in (root / t).glob(".dt=*"))


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_each_step_leaves_one_whole_run(
    spark: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    root = tmp_path / "wh"
    wh = f"file://{root}"
    run_a = _write(wh, "A")

    def crash(name: str) -> None:
        if name == step:
            raise Killed(name)

    monkeypatch.setattr(P, "_step", crash)
    with pytest.raises(Killed):
        _write(wh, "B")
    monkeypatch.undo()

    expected = "B" if STEPS.index(step) >= COMMITTED_FROM else "A"
    assert _labels(wh) == dict.fromkeys(TABLES, expected)
    runs = {P.commit_of(P.committed(wh, t, DS))["run_id"] for t in TABLES}  # type: ignore[index]
    assert len(runs) == 1
    manifest = P.manifest(wh, "reconstruct", DS)
    assert manifest is not None and set(manifest["tables"].values()) == runs
    if expected == "A":
        assert runs == {run_a}

    _write(wh, "C")
    assert _labels(wh) == dict.fromkeys(TABLES, "C")
    assert _leftovers(root) == []
    assert not (root / P.COMMITS_DIR / "reconstruct" / f"dt={DS}.journal").exists()
    assert not (root / P.COMMITS_DIR / "reconstruct" / f"dt={DS}.lock").exists()


def test_dataframes_round_trip_and_are_replaced(spark: Any, tmp_path: pathlib.Path) -> None:
    wh = f"file://{tmp_path / 'wh'}"
    for n in (3, 5):
        P.write_partitions(wh, DS, {"events": spark.range(n).toDF("line_no")}, job="ingest")
        path = P.committed(wh, "events", DS)
        assert str(path) == f"{wh}/events/dt={DS}"
        assert sorted(r[0] for r in spark.read.parquet(str(path)).collect()) == list(range(n))
    assert sorted(p.name for p in (tmp_path / "wh" / "events").iterdir()) == [f"dt={DS}"]


def _lock_file(root: pathlib.Path, holder: dict[str, Any]) -> pathlib.Path:
    lock = root / P.COMMITS_DIR / "reconstruct" / f"dt={DS}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps(holder))
    return lock


def test_a_live_holder_keeps_the_lock_and_a_silent_one_loses_it(
    spark: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "wh"
    wh = f"file://{root}"
    _write(wh, "A")
    lock = _lock_file(root, {"host": "other-host", "pid": 1, "why": "reconstruct run X", "token": "t"})
    with pytest.raises(P.CommitError, match=r"another process holds .*dt=2026-11-20\.lock"):
        P.recover(wh, "reconstruct", DS, wait=0.5)
    assert lock.exists()
    # nobody refreshes it: after a lease of watching, the next writer takes it over
    monkeypatch.setattr(partition_fs, "LOCK_LEASE_SECONDS", 0.5)
    _write(wh, "B")
    assert _labels(wh) == dict.fromkeys(TABLES, "B")
    assert not lock.exists()


def test_a_killed_writer_leaves_its_lock_and_the_date_is_rolled_forward(spark: Any, tmp_path: pathlib.Path) -> None:
    """A real kill (os._exit at the step) in a child with its own Spark JVM: its lock file stays, naming a dead
    process of this host, so the next reader takes it over at once and finishes the commit."""
    root = tmp_path / "wh"
    wh = f"file://{root}"
    run_a = _write(wh, "A")
    code = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        from rocketmq_retry.warehouse import partitions as P
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        def writer(path):
            path.fs._create(path / "part-0.txt", "B")
        P.write_partitions({wh!r}, {DS!r}, {{t: writer for t in P.JOB_TABLES["reconstruct"]}}, job="reconstruct")
        """
    )
    env = {**os.environ, P.CRASH_ENV: f"swap-out:{TABLES[1]}"}
    env["PYSPARK_SUBMIT_ARGS"] = "--driver-memory 512m pyspark-shell"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 86, done.stderr[-3000:]
    lock = root / P.COMMITS_DIR / "reconstruct" / f"dt={DS}.lock"
    holder = json.loads(lock.read_text())
    assert holder["host"] == socket.gethostname() and holder["pid"] != os.getpid()
    assert not (root / TABLES[1] / f"dt={DS}").exists()

    assert _labels(wh) == dict.fromkeys(TABLES, "B")
    manifest = P.manifest(wh, "reconstruct", DS)
    assert manifest is not None and manifest["run_id"] != run_a
    assert not lock.exists() and _leftovers(root) == []
