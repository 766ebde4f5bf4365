"""One partition writer for every job: a run's tables under ``<warehouse>/<table>/dt=D`` are committed together.

A job (``ingest``, ``reconstruct``) writes several tables for one date. A crash must never leave a date whose
tables come from two runs, nor a table whose ``dt=D`` is missing. The protocol, for one (job, date):

1. take an exclusive ``flock`` on ``<warehouse>/_commits/<job>/dt=D.lock`` (held to the end): concurrent writers
   of the same job and date run one after the other, and nobody tidies a live writer's staging dirs;
2. recover whatever a crashed run left (below);
3. write every table into a hidden staging sibling ``<table>/.dt=D.tmp-<run>``, each with a ``_COMMIT`` file
   naming the run (Spark and pyarrow skip ``_``-prefixed files);
4. write the journal ``_commits/<job>/dt=D.journal`` (run id + the renames) by tmp file, fsync, ``os.replace``:
   this is the commit point, since all staging data is complete before it exists;
5. per table: ``dt=D`` -> ``.dt=D.old-<run>``, staging -> ``dt=D``;
6. write the manifest ``_commits/<job>/dt=D.json`` (run id of every table), delete the journal, then the olds.

Recovery (by the next writer, and by readers that find a journal or a missing ``dt=D``), under the lock: a
journal is rolled forward (each rename is replayed only if it has not happened yet); without one, staging dirs
are discarded, and a table whose ``dt=D`` is missing gets back its newest ``.old`` by age (directory mtime: the
time its data was written), never by the random part of its name.

``<run>`` is ``<UTC time>-<random>``, so names also sort by age. Local (POSIX) paths only. Process crashes are
covered; after a power loss only what the file system kept of Spark's own (unsynced) files survives.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import pathlib
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocketmq_retry.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Which job owns which table: a table is written by one job only, so the (job, date) lock covers its staging dirs.
JOB_TABLES: dict[str, tuple[str, ...]] = {
    "ingest": ("events", "quarantine", "ingest_report", "bindings"),
    "reconstruct": ("transitions", "lifecycles", "dead_letters", "reconciliation", "unattributed"),
}
COMMITS_DIR = "_commits"
COMMIT_FILE = "_COMMIT"
# A test seam: the named step ends the process at once (as a kill would), e.g. ``swap-in:events``.
CRASH_ENV = "ROCKETMQ_RETRY_CRASH_AT"
# A reader that finds a commit in progress waits this long for its writer to finish the renames.
READ_WAIT_SECONDS = 120.0

Writer = Callable[[pathlib.Path], None]


class CommitError(InputError):
    """A partition set cannot be read or written consistently; the message names the journal or the lock."""


def _local(path: str | os.PathLike[str]) -> pathlib.Path:
    text = str(path)
    if "://" in text and not text.startswith("file://"):
        raise NotImplementedError(f"atomic partition swap is implemented for local paths only: {text}")
    return pathlib.Path(text.removeprefix("file://"))


def owner(table: str) -> str:
    """The job that writes ``table`` (a table no job declares is its own job)."""
    return next((job for job, tables in JOB_TABLES.items() if table in tables), table)


def _step(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        print(f"partitions: crashing at {name} ({CRASH_ENV})", file=sys.stderr, flush=True)
        os._exit(86)


def new_run_id() -> str:
    return f"{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class _State:
    """The per-(job, date) files under ``<warehouse>/_commits/<job>/``."""

    warehouse: pathlib.Path
    job: str
    ds: str

    @property
    def dir(self) -> pathlib.Path:
        return self.warehouse / COMMITS_DIR / self.job

    @property
    def lock(self) -> pathlib.Path:
        return self.dir / f"dt={self.ds}.lock"

    @property
    def journal(self) -> pathlib.Path:
        return self.dir / f"dt={self.ds}.journal"

    @property
    def manifest(self) -> pathlib.Path:
        return self.dir / f"dt={self.ds}.json"

    def final(self, table: str) -> pathlib.Path:
        return self.warehouse / table / f"dt={self.ds}"

    def staging(self, table: str, run: str) -> pathlib.Path:
        return self.warehouse / table / f".dt={self.ds}.tmp-{run}"

    def old(self, table: str, run: str) -> pathlib.Path:
        return self.warehouse / table / f".dt={self.ds}.old-{run}"

    def olds(self, table: str) -> list[pathlib.Path]:
        return list((self.warehouse / table).glob(f".dt={self.ds}.old-*"))

    def stagings(self, table: str) -> list[pathlib.Path]:
        return list((self.warehouse / table).glob(f".dt={self.ds}.tmp-*"))


def _fsync_dir(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: pathlib.Path, data: dict[str, Any]) -> None:
    """Replace ``path`` atomically: a reader sees the old content or the new, never a torn file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _read_json(path: pathlib.Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CommitError(f"{path}: unreadable commit file ({exc}); remove it only after checking the tables") from None
    return data


def commit_of(partition: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``_COMMIT`` record of a partition (``run_id``, ``job``, ``tables``), None for one written otherwise."""
    return _read_json(_local(partition) / COMMIT_FILE)


def manifest(warehouse: str | os.PathLike[str], job: str, ds: str) -> dict[str, Any] | None:
    """The last committed run of ``job`` for ``ds``: ``run_id`` and the run id of each of its tables."""
    return _read_json(_State(_local(warehouse), job, ds).manifest)


@contextlib.contextmanager
def _locked(state: _State, wait: float | None, why: str) -> Iterator[None]:
    """Hold the (job, date) lock; ``wait`` None blocks as long as it takes (the holder is a live process: a
    dead one's flock is released by the kernel)."""
    state.dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = None if wait is None else time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise CommitError(
                        f"{state.job} dt={state.ds}: another process holds {state.lock} (a writer of this date); "
                        f"{why} gave up after {wait:g} s (try again once it has finished)"
                    ) from None
                if not told:
                    print(f"partitions: waiting for {state.lock} ({why})", file=sys.stderr, flush=True)
                    told = True
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


def _age(path: pathlib.Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, path.name


def _roll_forward(state: _State, journal: dict[str, Any]) -> None:
    run = journal["run_id"]
    for table in journal["tables"]:
        final, staging, old = state.final(table), state.staging(table, run), state.old(table, run)
        if staging.exists():
            if final.exists():
                final.rename(old)
            _step(f"swap-out:{table}")
            staging.rename(final)
            _step(f"swap-in:{table}")
        elif (commit_of(final) or {}).get("run_id") != run:
            raise CommitError(
                f"{state.journal}: run {run} cannot be completed: neither its staging dir {staging.name} nor a "
                f"committed {final} of that run exists for table {table}; restore the table before reading it"
            )
    _fsync_dir(state.warehouse)
    before = _read_json(state.manifest) or {}
    tables = {**before.get("tables", {}), **dict.fromkeys(journal["tables"], run)}
    _write_json(
        state.manifest,
        {"job": state.job, "ds": state.ds, "run_id": run, "committed_at": journal["created_at"], "tables": tables},
    )
    _step("manifest")
    state.journal.unlink()
    _step("journal-removed")
    for table in journal["tables"]:
        shutil.rmtree(state.old(table, run), ignore_errors=True)


def _recover_locked(state: _State, tables: tuple[str, ...]) -> None:
    journal = _read_json(state.journal)
    if journal is not None:
        _roll_forward(state, journal)
        tables = (*tables, *journal["tables"])
    for table in dict.fromkeys(tables):
        olds = sorted(state.olds(table), key=_age)
        if olds and not state.final(table).exists():
            # a crash between the two renames of a writer that kept no journal (before this protocol)
            olds.pop().rename(state.final(table))
        # we hold the lock: no live writer of this job and date owns these
        for stale in [*olds, *state.stagings(table)]:
            shutil.rmtree(stale, ignore_errors=True)


def _tables_of(state: _State, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    known = JOB_TABLES.get(state.job, ())
    listed = tuple((_read_json(state.manifest) or {}).get("tables", {}))
    return tuple(dict.fromkeys((*known, *listed, *extra)))


def recover(
    warehouse: str | os.PathLike[str], job: str, ds: str, *, tables: tuple[str, ...] = (), wait: float | None = None
) -> None:
    """Finish or undo what a crashed run of ``job`` left for ``ds`` (see the module doc), under the lock."""
    state = _State(_local(warehouse), job, ds)
    with _locked(state, wait, "recovery"):
        _recover_locked(state, _tables_of(state, tables))


def committed(
    warehouse: str | os.PathLike[str], table: str, ds: str, *, wait: float = READ_WAIT_SECONDS
) -> pathlib.Path:
    """``<warehouse>/<table>/dt=<ds>`` once it is safe to read: a commit in progress is waited for, a crashed one
    is rolled forward (or the old partition put back); a set that cannot be completed is refused (CommitError).
    Readers still check that the returned directory exists: a date never written is not an error here."""
    state = _State(_local(warehouse), owner(table), ds)
    final = state.final(table)
    if state.journal.exists() or (not final.exists() and state.olds(table)):
        recover(warehouse, state.job, ds, tables=(table,), wait=wait)
    return final


def _spark_writer(df: DataFrame) -> Writer:
    def write(path: pathlib.Path) -> None:
        df.write.mode("errorifexists").parquet(str(path))

    return write


def write_partitions(
    warehouse: str | os.PathLike[str],
    ds: str,
    tables: Mapping[str, DataFrame | Writer],
    *,
    job: str | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Write every table of ``tables`` (a DataFrame, written as Parquet, or a function writing into the directory
    it is given) for ``ds`` and commit them together; returns the run id. ``job`` defaults to the tables' owner."""
    if not tables:
        raise ValueError("write_partitions: no tables")
    jobs = {owner(t) for t in tables}
    job = job or (jobs.pop() if len(jobs) == 1 else None)
    if job is None or any(owner(t) not in (job, t) for t in tables):
        raise ValueError(f"write_partitions: tables {sorted(tables)} are not all written by one job ({job})")
    state = _State(_local(warehouse), job, ds)
    run = new_run_id()
    names = tuple(tables)
    with _locked(state, None, f"{job} run {run}"):
        _recover_locked(state, _tables_of(state, names))
        for table, data in tables.items():
            if log:
                log(f"writing {table}")
            staging = state.staging(table, run)
            staging.parent.mkdir(parents=True, exist_ok=True)
            (data if callable(data) else _spark_writer(data))(staging)
            _write_json(staging / COMMIT_FILE, {"run_id": run, "job": job, "ds": ds, "tables": list(names)})
            _step(f"staged:{table}")
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        journal = {"run_id": run, "job": job, "ds": ds, "tables": list(names), "created_at": created}
        _write_json(state.journal, journal)
        _step("journal")
        _roll_forward(state, journal)
    return run


def write_partition(df: DataFrame, warehouse: str | os.PathLike[str], table: str, ds: str) -> pathlib.Path:
    """Write ``df`` as ``<warehouse>/<table>/dt=<ds>`` alone (a set of one table), replacing it atomically."""
    write_partitions(warehouse, ds, {table: df})
    return _State(_local(warehouse), owner(table), ds).final(table)
