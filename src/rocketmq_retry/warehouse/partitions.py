"""One partition writer for every job: a run's tables under ``<warehouse>/<table>/dt=D`` are committed together.

A job (``ingest``, ``reconstruct``) writes several tables for one date. A crash must never leave a date whose
tables come from two runs, nor a table whose ``dt=D`` is missing. The protocol, for one (job, date):

1. take the exclusive lock ``<warehouse>/_commits/<job>/dt=D.lock`` (held to the end): concurrent writers
   of the same job and date run one after the other, and nobody tidies a live writer's staging dirs;
2. recover whatever a crashed run left (below);
3. write every table into a hidden staging sibling ``<table>/.dt=D.tmp-<run>``, each with a ``_COMMIT`` file
   naming the run (Spark and pyarrow skip ``_``-prefixed files);
4. write the journal ``_commits/<job>/dt=D.journal`` (run id + the renames) by tmp file, sync, rename:
   this is the commit point, since all staging data is complete before it exists;
5. per table: ``dt=D`` -> ``.dt=D.old-<run>``, staging -> ``dt=D``;
6. write the manifest ``_commits/<job>/dt=D.json`` (run id of every table), delete the journal, then the olds.

Recovery (by the next writer, and by readers that find a journal or a missing ``dt=D``), under the lock: a
journal is rolled forward (each rename is replayed only if it has not happened yet); without one, staging dirs
are discarded, and a table whose ``dt=D`` is missing gets back its newest ``.old`` by age (directory mtime: the
time its data was written), never by the random part of its name.

``<run>`` is ``<UTC time>-<random>``, so names also sort by age. Process crashes are covered; after a power loss
only what the file system kept of Spark's own (unsynced) files survives.

The protocol runs unchanged on a plain path and on a Hadoop URI: warehouse/partition_fs.py holds the two file systems.

``write_planned`` runs steps 3-6 for the tables a function decides on under the lock, after step 2: an incremental
ingest reads which rows of the committed partitions it can reuse there, and no other writer of the date can swap
them out before its own commit (docs/ingest.md "Late files").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocketmq_retry.warehouse.partition_fs import CommitError, Fs, HadoopPath, LocalFs, parse_json, resolve

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Which job owns which table: a table is written by one job only, so the (job, date) lock covers its staging dirs.
JOB_TABLES: dict[str, tuple[str, ...]] = {
    "ingest": ("events", "quarantine", "ingest_report", "bindings"),
    "reconstruct": (
        "transitions",
        "lifecycles",
        "dead_letters",
        "reconciliation",
        "unattributed",
        "failures",
        "failure_causes",
        "incidents",
    ),
}
COMMITS_DIR = "_commits"
COMMIT_FILE = "_COMMIT"
# A test seam: the named step ends the process at once (as a kill would), e.g. ``swap-in:events``.
CRASH_ENV = "ROCKETMQ_RETRY_CRASH_AT"
# A reader that finds a commit in progress waits this long for its writer to finish the renames.
READ_WAIT_SECONDS = 120.0

Writer = Callable[[Any], None]  # given the staging dir: a pathlib.Path, or a HadoopPath for a URI warehouse
Tables = Mapping[str, "DataFrame | Writer"]  # table -> its rows, or a function writing them into its staging dir


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

    warehouse: Any  # pathlib.Path or HadoopPath
    job: str
    ds: str
    fs: Fs

    @classmethod
    def of(cls, warehouse: str | os.PathLike[str] | HadoopPath, job: str, ds: str) -> _State:
        fs, root = resolve(warehouse)
        return cls(root, job, ds, fs)

    @property
    def dir(self) -> Any:
        return self.warehouse / COMMITS_DIR / self.job

    @property
    def lock(self) -> Any:
        return self.dir / f"dt={self.ds}.lock"

    @property
    def journal(self) -> Any:
        return self.dir / f"dt={self.ds}.journal"

    @property
    def manifest(self) -> Any:
        return self.dir / f"dt={self.ds}.json"

    def final(self, table: str) -> Any:
        return self.warehouse / table / f"dt={self.ds}"

    def staging(self, table: str, run: str) -> Any:
        return self.warehouse / table / f".dt={self.ds}.tmp-{run}"

    def old(self, table: str, run: str) -> Any:
        return self.warehouse / table / f".dt={self.ds}.old-{run}"

    def olds(self, table: str) -> list[Any]:
        return self.fs.children(self.warehouse / table, f".dt={self.ds}.old-")

    def stagings(self, table: str) -> list[Any]:
        return self.fs.children(self.warehouse / table, f".dt={self.ds}.tmp-")

    def read_json(self, path: Any) -> dict[str, Any] | None:
        try:
            text = self.fs.read_text(path)
        except OSError as exc:
            raise CommitError(f"{path}: unreadable commit file ({exc}); check the tables, then remove it") from None
        return parse_json(path, text)

    def write_json(self, path: Any, data: dict[str, Any]) -> None:
        """Replace ``path`` atomically: a reader sees the old content or the new, never a torn file."""
        self.fs.write_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def commit_of(partition: str | os.PathLike[str] | HadoopPath) -> dict[str, Any] | None:
    """The ``_COMMIT`` record of a partition (``run_id``, ``job``, ``tables``), None for one written otherwise."""
    fs, path = resolve(partition)
    try:
        text = fs.read_text(path / COMMIT_FILE)
    except OSError as exc:
        raise CommitError(f"{path / COMMIT_FILE}: unreadable commit file ({exc})") from None
    return parse_json(path / COMMIT_FILE, text)


def manifest(warehouse: str | os.PathLike[str] | HadoopPath, job: str, ds: str) -> dict[str, Any] | None:
    """The last committed run of ``job`` for ``ds``: ``run_id`` and the run id of each of its tables."""
    state = _State.of(warehouse, job, ds)
    return state.read_json(state.manifest)


@contextlib.contextmanager
def _locked(state: _State, wait: float | None, why: str) -> Iterator[None]:
    """Hold the (job, date) lock; ``wait`` None blocks as long as it takes."""
    with state.fs.locked(state.lock, f"{state.job} dt={state.ds}", wait, why):
        yield


def _roll_forward(state: _State, journal: dict[str, Any]) -> None:
    run, fs = journal["run_id"], state.fs
    for table in journal["tables"]:
        final, staging, old = state.final(table), state.staging(table, run), state.old(table, run)
        if fs.exists(staging):
            if fs.exists(final):
                fs.rename(final, old)
            _step(f"swap-out:{table}")
            fs.rename(staging, final)
            _step(f"swap-in:{table}")
        elif (commit_of(final) or {}).get("run_id") != run:
            raise CommitError(
                f"{state.journal}: run {run} cannot be completed: neither its staging dir {staging.name} nor a "
                f"committed {final} of that run exists for table {table}; restore the table before reading it"
            )
    fs.sync_dir(state.warehouse)
    before = state.read_json(state.manifest) or {}
    tables = {**before.get("tables", {}), **dict.fromkeys(journal["tables"], run)}
    state.write_json(
        state.manifest,
        {"job": state.job, "ds": state.ds, "run_id": run, "committed_at": journal["created_at"], "tables": tables},
    )
    _step("manifest")
    fs.rmtree(state.journal)
    _step("journal-removed")
    for table in journal["tables"]:
        fs.rmtree(state.old(table, run))


def _recover_locked(state: _State, tables: tuple[str, ...]) -> None:
    fs = state.fs
    journal = state.read_json(state.journal)
    if journal is not None:
        _roll_forward(state, journal)
        tables = (*tables, *journal["tables"])
    for table in dict.fromkeys(tables):
        olds = sorted(state.olds(table), key=fs.age)
        if olds and not fs.exists(state.final(table)):
            # a crash between the two renames of a writer that kept no journal (before this protocol)
            fs.rename(olds.pop(), state.final(table))
        # we hold the lock: no live writer of this job and date owns these
        for stale in [*olds, *state.stagings(table)]:
            fs.rmtree(stale)


def _tables_of(state: _State, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    known = JOB_TABLES.get(state.job, ())
    listed = tuple((state.read_json(state.manifest) or {}).get("tables", {}))
    return tuple(dict.fromkeys((*known, *listed, *extra)))


def recover(
    warehouse: str | os.PathLike[str] | HadoopPath,
    job: str,
    ds: str,
    *,
    tables: tuple[str, ...] = (),
    wait: float | None = None,
) -> None:
    """Finish or undo what a crashed run of ``job`` left for ``ds`` (see the module doc), under the lock."""
    state = _State.of(warehouse, job, ds)
    with _locked(state, wait, "recovery"):
        _recover_locked(state, _tables_of(state, tables))


def committed(
    warehouse: str | os.PathLike[str] | HadoopPath, table: str, ds: str, *, wait: float = READ_WAIT_SECONDS
) -> Any:
    """``<warehouse>/<table>/dt=<ds>`` once it is safe to read: a commit in progress is waited for, a crashed one
    is rolled forward (or the old partition put back); a set that cannot be completed is refused (CommitError).
    A ``pathlib.Path`` for a plain warehouse path, a ``HadoopPath`` for a URI (both have ``is_dir()``, and
    ``str()`` is what Spark reads). Readers still check that it exists: a date never written is not an error."""
    state = _State.of(warehouse, owner(table), ds)
    final = state.final(table)
    if state.fs.exists(state.journal) or (not state.fs.exists(final) and state.olds(table)):
        recover(state.warehouse, state.job, ds, tables=(table,), wait=wait)
    return final


def partition_path(warehouse: str | os.PathLike[str] | HadoopPath, table: str, ds: str) -> Any:
    """``<warehouse>/<table>/dt=<ds>`` as is, without the checks of ``committed``: for a ``write_planned`` plan,
    which runs under the lock after recovery (``committed`` could wait for that lock)."""
    return _State.of(warehouse, owner(table), ds).final(table)


def _spark_writer(df: DataFrame) -> Writer:
    def write(path: Any) -> None:
        # "error" (= errorifexists): the one spelling a Spark Connect client accepts too
        df.write.mode("error").parquet(str(path))

    return write


def write_partitions(
    warehouse: str | os.PathLike[str] | HadoopPath,
    ds: str,
    tables: Tables,
    *,
    job: str | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Write every table of ``tables`` (a DataFrame, written as Parquet, or a function writing into the directory
    it is given) for ``ds`` and commit them together; returns the run id. ``job`` defaults to the tables' owner."""
    job = _job_of(tables, job)
    state = _State.of(warehouse, job, ds)
    run = new_run_id()
    with _locked(state, None, f"{job} run {run}"):
        _recover_locked(state, _tables_of(state, tuple(tables)))
        _write_locked(state, run, tables, log)
    return run


def write_planned(
    warehouse: str | os.PathLike[str] | HadoopPath,
    ds: str,
    job: str,
    plan: Callable[[], Tables | None],
    *,
    log: Callable[[str], None] | None = None,
) -> str | None:
    """``write_partitions`` of the tables ``plan`` returns, ``plan`` being called under the lock after recovery:
    what it reads of ``job``'s committed partitions of ``ds`` (an incremental run reusing their rows) stays as it
    read it until the swap, since no other writer of the date runs meanwhile. ``plan`` returns None to commit
    nothing (the run id is then None)."""
    state = _State.of(warehouse, job, ds)
    run = new_run_id()
    with _locked(state, None, f"{job} run {run}"):
        _recover_locked(state, _tables_of(state))
        tables = plan()
        if tables is None:
            return None
        _write_locked(state, run, tables, log)
    return run


def _job_of(tables: Tables, job: str | None) -> str:
    if not tables:
        raise ValueError("write_partitions: no tables")
    jobs = {owner(t) for t in tables}
    job = job or (jobs.pop() if len(jobs) == 1 else None)
    if job is None or any(owner(t) not in (job, t) for t in tables):
        raise ValueError(f"write_partitions: tables {sorted(tables)} are not all written by one job ({job})")
    return job


def _write_locked(state: _State, run: str, tables: Tables, log: Callable[[str], None] | None) -> None:
    """Stage every table, write the journal (the commit point), roll it forward. The lock is held."""
    job, ds = state.job, state.ds
    _job_of(tables, job)
    names = tuple(tables)
    for table, data in tables.items():
        if log:
            log(f"writing {table}")
        staging = state.staging(table, run)
        if isinstance(state.fs, LocalFs):
            staging.parent.mkdir(parents=True, exist_ok=True)
        (data if callable(data) else _spark_writer(data))(staging)
        state.write_json(staging / COMMIT_FILE, {"run_id": run, "job": job, "ds": ds, "tables": list(names)})
        _step(f"staged:{table}")
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    journal = {"run_id": run, "job": job, "ds": ds, "tables": list(names), "created_at": created}
    state.write_json(state.journal, journal)
    _step("journal")
    _roll_forward(state, journal)


def write_partition(df: DataFrame, warehouse: str | os.PathLike[str] | HadoopPath, table: str, ds: str) -> Any:
    """Write ``df`` as ``<warehouse>/<table>/dt=<ds>`` alone (a set of one table), replacing it atomically."""
    write_partitions(warehouse, ds, {table: df})
    return _State.of(warehouse, owner(table), ds).final(table)
