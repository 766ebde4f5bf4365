"""The partition writer's commit protocol on plain files (no Spark): a writer process killed at every step, the
recovery that follows, the (job, date) lock against a concurrent writer, and the old partition chosen by age."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rocketmq_retry.warehouse import partitions as P

DS = "2026-11-20"
TABLES = P.JOB_TABLES["reconstruct"]
# every point a kill can hit, in the order the writer passes them
STEPS = [
    *(f"staged:{t}" for t in TABLES),
    "journal",
    *(f"swap-{half}:{t}" for t in TABLES for half in ("out", "in")),
    "manifest",
    "journal-removed",
]
COMMITTED_FROM = STEPS.index("journal")  # from the journal on, the new run is the one that survives

WRITER = textwrap.dedent(
    """
    import pathlib, sys
    from rocketmq_retry.warehouse.partitions import JOB_TABLES, write_partitions

    warehouse, ds, label = sys.argv[1:4]

    def writer(table):
        def write(path: pathlib.Path) -> None:
            path.mkdir()
            (path / "part-0.txt").write_text(f"{label} {table}")
        return write

    print(write_partitions(warehouse, ds, {t: writer(t) for t in JOB_TABLES["reconstruct"]}, job="reconstruct"))
    """
)


def _writer(label: str):  # type: ignore[no-untyped-def]
    def write(path: pathlib.Path) -> None:
        path.mkdir()
        (path / "part-0.txt").write_text(label)

    return write


def _run_writer(wh: pathlib.Path, label: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != P.CRASH_ENV}
    if crash_at:
        env[P.CRASH_ENV] = crash_at
    return subprocess.run(
        [sys.executable, "-c", WRITER, str(wh), DS, label], env=env, capture_output=True, text=True, timeout=60
    )


def _labels(wh: pathlib.Path) -> dict[str, str | None]:
    """Each table's data as a reader sees it (through ``committed``, which finishes a crashed commit)."""
    out: dict[str, str | None] = {}
    for t in TABLES:
        path = P.committed(wh, t, DS, wait=5)
        out[t] = (path / "part-0.txt").read_text().split()[0] if path.is_dir() else None
    return out


def _leftovers(wh: pathlib.Path) -> list[str]:
    return sorted(p.name for t in TABLES for p in (wh / t).glob(".dt=*"))


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_each_step_leaves_one_whole_run(tmp_path: pathlib.Path, step: str) -> None:
    wh = tmp_path / "wh"
    first = _run_writer(wh, "A")
    assert first.returncode == 0, first.stderr
    run_a = first.stdout.strip()

    crashed = _run_writer(wh, "B", crash_at=step)
    assert crashed.returncode == 86, crashed.stderr
    assert f"crashing at {step}" in crashed.stderr

    expected = "B" if STEPS.index(step) >= COMMITTED_FROM else "A"
    assert _labels(wh) == dict.fromkeys(TABLES, expected)
    runs = {P.commit_of(wh / t / f"dt={DS}")["run_id"] for t in TABLES}  # type: ignore[index]
    assert len(runs) == 1
    manifest = P.manifest(wh, "reconstruct", DS)
    assert manifest is not None and set(manifest["tables"].values()) == runs
    if expected == "A":
        assert runs == {run_a}

    # the next run tidies whatever is left and commits normally
    again = _run_writer(wh, "C")
    assert again.returncode == 0, again.stderr
    assert _labels(wh) == dict.fromkeys(TABLES, "C")
    assert _leftovers(wh) == []
    assert not (wh / P.COMMITS_DIR / "reconstruct" / f"dt={DS}.journal").exists()


def test_kill_during_the_first_run_leaves_no_partition_or_a_whole_one(tmp_path: pathlib.Path) -> None:
    before = _run_writer(tmp_path / "a", "B", crash_at=f"staged:{TABLES[-1]}")
    assert before.returncode == 86
    assert _labels(tmp_path / "a") == dict.fromkeys(TABLES, None)
    during = _run_writer(tmp_path / "b", "B", crash_at=f"swap-in:{TABLES[0]}")
    assert during.returncode == 86
    assert _labels(tmp_path / "b") == dict.fromkeys(TABLES, "B")


def test_recovery_restores_the_newest_old_by_age_not_by_name(tmp_path: pathlib.Path) -> None:
    """What a crash between the two renames of the former writer left: dt=D gone, two olds whose random tokens
    sort the other way round from their age."""
    table = tmp_path / "events"
    olds = ((".dt=2026-11-20.old-ffff0000", "older", 1_000), (".dt=2026-11-20.old-0000ffff", "newer", 2_000))
    for name, label, mtime in olds:
        d = table / name
        d.mkdir(parents=True)
        (d / "part-0.txt").write_text(label)
        os.utime(d / "part-0.txt", (mtime, mtime))
        os.utime(d, (mtime, mtime))
    (table / ".dt=2026-11-20.tmp-abandoned").mkdir()

    path = P.committed(tmp_path, "events", DS)
    assert (path / "part-0.txt").read_text() == "newer"
    assert sorted(p.name for p in table.iterdir()) == ["dt=2026-11-20"]


def test_a_concurrent_writer_waits_and_never_loses_its_staging(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = tmp_path / "wh"
    assert _run_writer(wh, "A").returncode == 0
    staged, release = threading.Event(), threading.Event()

    def slow(path: pathlib.Path) -> None:  # a long Spark write: its staging dir exists, the data is not done
        path.mkdir()
        staged.set()
        assert release.wait(30)
        (path / "part-0.txt").write_text("B")

    first = threading.Thread(
        target=P.write_partitions,
        args=(wh, DS, {"transitions": slow, **{t: _writer("B") for t in TABLES[1:]}}),
        kwargs={"job": "reconstruct"},
    )
    first.start()
    assert staged.wait(30)
    staging = next((wh / "transitions").glob(f".dt={DS}.tmp-*"))

    with pytest.raises(P.CommitError, match=r"another process holds .*dt=2026-11-20\.lock"):
        P.recover(wh, "reconstruct", DS, wait=0.3)
    second = threading.Thread(
        target=P.write_partitions, args=(wh, DS, {t: _writer("C") for t in TABLES}), kwargs={"job": "reconstruct"}
    )
    second.start()
    time.sleep(0.5)
    assert second.is_alive()  # waiting for the lock, not tidying up
    assert staging.is_dir()
    # a reader of the date is not held up by a writer that has not reached its commit: it reads run A
    assert _labels(wh) == dict.fromkeys(TABLES, "A")

    release.set()
    first.join(30)
    second.join(30)
    assert not first.is_alive() and not second.is_alive()
    assert _labels(wh) == dict.fromkeys(TABLES, "C")
    assert _leftovers(wh) == []


def test_a_reader_never_sees_a_half_swapped_set(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = tmp_path / "wh"
    assert _run_writer(wh, "A").returncode == 0
    midway, release = threading.Event(), threading.Event()
    step = P._step

    def pause(name: str) -> None:
        if name == f"swap-out:{TABLES[1]}":  # transitions swapped in, lifecycles moved out: dt=D missing
            midway.set()
            assert release.wait(30)
        step(name)

    monkeypatch.setattr(P, "_step", pause)
    writer = threading.Thread(
        target=P.write_partitions, args=(wh, DS, {t: _writer("B") for t in TABLES}), kwargs={"job": "reconstruct"}
    )
    writer.start()
    assert midway.wait(30)
    assert not (wh / TABLES[1] / f"dt={DS}").exists()
    with pytest.raises(P.CommitError, match=r"another process holds .*\(a writer of this date\)"):
        P.committed(wh, TABLES[1], DS, wait=0.3)
    seen: dict[str, str | None] = {}
    reader = threading.Thread(target=lambda: seen.update(_labels(wh)))
    reader.start()
    time.sleep(0.3)
    release.set()
    writer.join(30)
    reader.join(30)
    assert seen == dict.fromkeys(TABLES, "B")


def test_a_journal_that_cannot_be_completed_is_refused(tmp_path: pathlib.Path) -> None:
    wh = tmp_path / "wh"
    assert _run_writer(wh, "A").returncode == 0
    assert _run_writer(wh, "B", crash_at="journal").returncode == 86
    for staging in (wh / TABLES[2]).glob(f".dt={DS}.tmp-*"):  # someone tidied by hand
        for f in staging.iterdir():
            f.unlink()
        staging.rmdir()
    with pytest.raises(P.CommitError, match=rf"dt={DS}\.journal: run .* cannot be completed.*table {TABLES[2]}"):
        P.committed(wh, TABLES[0], DS)


def test_a_uri_warehouse_needs_the_spark_driver() -> None:
    """A URI goes through Hadoop's FileSystem in the Spark JVM (tests/test_partitions_hadoop.py); a process without
    Spark gets a message naming the URI, not a half-written date. In a child: this process may run Spark."""
    code = (
        "from rocketmq_retry.warehouse import partitions as P\n"
        "P.write_partitions('s3a://bucket/wh', '2026-11-20', {'events': lambda path: None})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "CommitError: s3a://bucket/wh: a warehouse URI is committed through Hadoop's FileSystem API" in done.stderr
