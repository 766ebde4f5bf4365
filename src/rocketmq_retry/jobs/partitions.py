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

Two file systems carry the same protocol (docs/airflow.md "On a Spark cluster"):

- a plain path (``/data/warehouse``): POSIX calls, ``flock`` for the lock (released by the kernel when its
  holder dies), fsync + ``os.replace`` for the journal and the manifest;
- a URI (``file:///…``, ``hdfs://…``, ``abfs://…``, ``s3a://…``): Hadoop's ``FileSystem`` API through the driver's
  Spark JVM, the file system the executors write with. The lock is a file created exclusively
  (``create(overwrite=false)``) naming its holder, whose modification time the holder refreshes; a lock whose
  holder is a dead process on this host, or whose time has not moved for ``LOCK_LEASE_SECONDS``, is taken over.
  The guarantee needs what HDFS, the local file system and ABFS with a hierarchical namespace give: atomic
  rename of a file and of a directory. Plain S3A copies on rename, so a crash mid-rename can leave a partial
  directory there: use a file system with atomic rename for the warehouse.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import pathlib
import re
import shutil
import socket
import sys
import threading
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
# A Hadoop lock file whose modification time has not moved for this long, as watched by a waiter, belongs to a
# dead writer (its holder refreshes it every quarter of this). Watched, not compared with the clock: the file
# system's clock and this host's may differ.
LOCK_LEASE_SECONDS = 60.0

Writer = Callable[[Any], None]  # given the staging dir: a pathlib.Path, or a HadoopPath for a URI warehouse


class CommitError(InputError):
    """A partition set cannot be read or written consistently; the message names the journal or the lock."""


# A scheme of two letters or more (``file:/``, ``hdfs://``): ``C:/`` would be a drive, not that we run there.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def owner(table: str) -> str:
    """The job that writes ``table`` (a table no job declares is its own job)."""
    return next((job for job, tables in JOB_TABLES.items() if table in tables), table)


def _step(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        print(f"partitions: crashing at {name} ({CRASH_ENV})", file=sys.stderr, flush=True)
        os._exit(86)


def new_run_id() -> str:
    return f"{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------------------------------------------
# the two file systems: the protocol below only calls these methods


class _LocalFs:
    """POSIX paths (pathlib)."""

    def exists(self, path: Any) -> bool:
        return bool(path.exists())

    def rename(self, src: Any, dst: Any) -> None:
        src.rename(dst)

    def rmtree(self, path: Any) -> None:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def children(self, folder: Any, prefix: str) -> list[Any]:
        return list(folder.glob(f"{prefix}*"))

    def age(self, path: Any) -> tuple[int, str]:
        return path.stat().st_mtime_ns, path.name

    def sync_dir(self, path: Any) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_text(self, path: Any) -> str | None:
        try:
            return str(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def write_atomic(self, path: Any, text: str) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        self.sync_dir(path.parent)

    @contextlib.contextmanager
    def locked(self, state: _State, wait: float | None, why: str) -> Iterator[None]:
        """``wait`` None blocks as long as it takes (the holder is a live process: a dead one's flock is released
        by the kernel)."""
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
                        raise _lock_busy(state, wait, why) from None
                    if not told:
                        print(f"partitions: waiting for {state.lock} ({why})", file=sys.stderr, flush=True)
                        told = True
                    time.sleep(0.1)
            yield
        finally:
            os.close(fd)  # releases the lock


def _lock_busy(state: _State, wait: float | None, why: str) -> CommitError:
    return CommitError(
        f"{state.job} dt={state.ds}: another process holds {state.lock} (a writer of this date); "
        f"{why} gave up after {wait:g} s (try again once it has finished)"
    )


@dataclass(frozen=True)
class HadoopPath:
    """A path on a Hadoop file system: what ``committed`` returns for a URI warehouse. ``str()`` is the URI that
    Spark reads; ``is_dir()`` and ``exists()`` ask the file system, as ``pathlib.Path`` would locally."""

    uri: str
    fs: _HadoopFs

    def __str__(self) -> str:
        return self.uri

    def __truediv__(self, name: str) -> HadoopPath:
        return HadoopPath(f"{self.uri.rstrip('/')}/{name}", self.fs)

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> HadoopPath:
        return HadoopPath(self.uri.rstrip("/").rsplit("/", 1)[0], self.fs)

    def exists(self) -> bool:
        return self.fs.exists(self)

    def is_dir(self) -> bool:
        return self.fs.is_dir(self)


class _HadoopFs:
    """``org.apache.hadoop.fs.FileSystem`` of a URI, through the driver's Spark JVM and its Hadoop configuration
    (so ``spark.hadoop.*`` settings and credentials apply as they do to the executors' writes)."""

    def __init__(self, uri: str) -> None:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
            # Under spark-submit the driver's JVM is already up: a job that checks its input before building its
            # session (reconstruct does) gets the session now, built with the jobs' own settings.
            from pyspark import SparkConf

            from rocketmq_retry.jobs.spark_session import build_spark_session

            SparkContext._ensure_initialized()
            name = SparkConf().get("spark.app.name") or "rocketmq-retry"  # spark-submit's --name
            sc = build_spark_session(name).sparkContext
        if sc is None or sc._jvm is None:
            raise CommitError(
                f"{uri}: a warehouse URI is committed through Hadoop's FileSystem API in the Spark driver, and no "
                f"Spark session is running in this process (start one first, or give a plain local path)"
            )
        self._jvm = sc._jvm
        self._gateway = sc._gateway
        self._conf = sc._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        from py4j.protocol import Py4JJavaError

        try:
            self._fs = self._path(uri).getFileSystem(self._conf)
        except Py4JJavaError as exc:
            raise CommitError(f"{uri}: no Hadoop file system for this URI ({exc.java_exception})") from None

    def _path(self, path: Any) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(str(path))

    def exists(self, path: Any) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def is_dir(self, path: Any) -> bool:
        return self.exists(path) and bool(self._fs.getFileStatus(self._path(path)).isDirectory())

    def rename(self, src: Any, dst: Any) -> None:
        # Hadoop's rename moves src *into* dst when dst is a directory: refuse instead of nesting a partition.
        if self.exists(dst):
            raise CommitError(f"cannot rename {src} to {dst}: the target exists")
        if not self._fs.rename(self._path(src), self._path(dst)):
            raise CommitError(f"the file system refused to rename {src} to {dst}")

    def rmtree(self, path: Any) -> None:
        self._fs.delete(self._path(path), True)

    def children(self, folder: Any, prefix: str) -> list[Any]:
        if not self.exists(folder):
            return []
        names = [st.getPath().getName() for st in self._fs.listStatus(self._path(folder))]
        return [folder / n for n in sorted(names) if n.startswith(prefix)]

    def age(self, path: Any) -> tuple[int, str]:
        return int(self._fs.getFileStatus(self._path(path)).getModificationTime()), path.name

    def sync_dir(self, path: Any) -> None:
        pass  # a directory's entries are durable once the name node (or the store) has answered

    def read_text(self, path: Any) -> str | None:
        if not self.exists(path):
            return None
        stream = self._fs.open(self._path(path))
        try:
            return bytes(stream.readAllBytes()).decode("utf-8")
        finally:
            stream.close()

    def _create(self, path: Any, text: str) -> None:
        """Create ``path`` holding ``text``; raises CommitError(exists=…) when it is already there."""
        from py4j.protocol import Py4JJavaError

        try:
            out = self._fs.create(self._path(path), False)
        except Py4JJavaError as exc:
            if self.exists(path):
                raise FileExistsError(str(path)) from None
            raise CommitError(f"cannot create {path}: {exc.java_exception}") from None
        try:
            out.write(bytearray(text.encode("utf-8")))
            out.hsync()  # durable before the rename that publishes it
        finally:
            out.close()

    def write_atomic(self, path: Any, text: str) -> None:
        tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}"
        self._create(tmp, text)
        if not self.exists(path):
            self.rename(tmp, path)
            return
        # Replacing an existing file in one step is FileContext's rename with OVERWRITE (FileSystem has none).
        jvm = self._jvm
        options = self._gateway.new_array(jvm.org.apache.hadoop.fs.Options.Rename, 1)
        options[0] = jvm.org.apache.hadoop.fs.Options.Rename.OVERWRITE
        context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(self._fs.getUri(), self._conf)
        context.rename(self._path(tmp), self._path(path), options)

    # -- the lock

    def _holder_dead(self, holder: dict[str, Any] | None) -> bool:
        if not holder or holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, KeyError, ValueError, TypeError):
            return False
        return False

    @contextlib.contextmanager
    def locked(self, state: _State, wait: float | None, why: str) -> Iterator[None]:
        me = {"host": socket.gethostname(), "pid": os.getpid(), "why": why, "token": uuid.uuid4().hex}
        deadline = None if wait is None else time.monotonic() + wait
        told, seen, since = False, None, time.monotonic()
        while True:
            try:
                self._create(state.lock, json.dumps(me))
                break
            except FileExistsError:
                pass
            holder = _parse_json(state.lock, self.read_text(state.lock))
            try:
                mtime = self.age(state.lock)[0]
            except Exception:  # released between the two calls
                continue
            if mtime != seen:
                seen, since = mtime, time.monotonic()
            stale = self._holder_dead(holder) or time.monotonic() - since > LOCK_LEASE_SECONDS
            if stale:
                print(f"partitions: taking over {state.lock} from a writer that is gone: {holder}", file=sys.stderr)
                self.rmtree(state.lock)
                continue
            if deadline is not None and time.monotonic() >= deadline:
                raise _lock_busy(state, wait, why)
            if not told:
                print(f"partitions: waiting for {state.lock} ({why}; held by {holder})", file=sys.stderr, flush=True)
                told = True
            time.sleep(0.2)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(LOCK_LEASE_SECONDS / 4):
                with contextlib.suppress(Exception):
                    self._fs.setTimes(self._path(state.lock), int(time.time() * 1000), -1)

        beat = threading.Thread(target=heartbeat, name="partitions-lock-heartbeat", daemon=True)
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()
            if (_parse_json(state.lock, self.read_text(state.lock)) or {}).get("token") == me["token"]:
                self.rmtree(state.lock)


_LOCAL = _LocalFs()
_Fs = _LocalFs | _HadoopFs


def _resolve(path: str | os.PathLike[str] | HadoopPath) -> tuple[_Fs, Any]:
    """The file system of ``path`` and the path in its terms: a URI goes through Hadoop, a plain path is local."""
    if isinstance(path, HadoopPath):
        return path.fs, path
    text = os.fspath(path)
    if _URI.match(text):
        fs = _HadoopFs(text)
        return fs, HadoopPath(text.rstrip("/"), fs)
    return _LOCAL, pathlib.Path(text)


@dataclass(frozen=True)
class _State:
    """The per-(job, date) files under ``<warehouse>/_commits/<job>/``."""

    warehouse: Any  # pathlib.Path or HadoopPath
    job: str
    ds: str
    fs: _Fs

    @classmethod
    def of(cls, warehouse: str | os.PathLike[str] | HadoopPath, job: str, ds: str) -> _State:
        fs, root = _resolve(warehouse)
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
        return _parse_json(path, text)

    def write_json(self, path: Any, data: dict[str, Any]) -> None:
        """Replace ``path`` atomically: a reader sees the old content or the new, never a torn file."""
        self.fs.write_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def _parse_json(path: Any, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise CommitError(f"{path}: unreadable commit file ({exc}); remove it only after checking the tables") from None
    return data


def commit_of(partition: str | os.PathLike[str] | HadoopPath) -> dict[str, Any] | None:
    """The ``_COMMIT`` record of a partition (``run_id``, ``job``, ``tables``), None for one written otherwise."""
    fs, path = _resolve(partition)
    try:
        text = fs.read_text(path / COMMIT_FILE)
    except OSError as exc:
        raise CommitError(f"{path / COMMIT_FILE}: unreadable commit file ({exc})") from None
    return _parse_json(path / COMMIT_FILE, text)


def manifest(warehouse: str | os.PathLike[str] | HadoopPath, job: str, ds: str) -> dict[str, Any] | None:
    """The last committed run of ``job`` for ``ds``: ``run_id`` and the run id of each of its tables."""
    state = _State.of(warehouse, job, ds)
    return state.read_json(state.manifest)


@contextlib.contextmanager
def _locked(state: _State, wait: float | None, why: str) -> Iterator[None]:
    """Hold the (job, date) lock; ``wait`` None blocks as long as it takes."""
    with state.fs.locked(state, wait, why):
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


def _spark_writer(df: DataFrame) -> Writer:
    def write(path: Any) -> None:
        df.write.mode("errorifexists").parquet(str(path))

    return write


def write_partitions(
    warehouse: str | os.PathLike[str] | HadoopPath,
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
    state = _State.of(warehouse, job, ds)
    run = new_run_id()
    names = tuple(tables)
    with _locked(state, None, f"{job} run {run}"):
        _recover_locked(state, _tables_of(state, names))
        for table, data in tables.items():
            if log:
                log(f"writing {table}")
            staging = state.staging(table, run)
            if isinstance(state.fs, _LocalFs):
                staging.parent.mkdir(parents=True, exist_ok=True)
            (data if callable(data) else _spark_writer(data))(staging)
            state.write_json(staging / COMMIT_FILE, {"run_id": run, "job": job, "ds": ds, "tables": list(names)})
            _step(f"staged:{table}")
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        journal = {"run_id": run, "job": job, "ds": ds, "tables": list(names), "created_at": created}
        state.write_json(state.journal, journal)
        _step("journal")
        _roll_forward(state, journal)
    return run


def write_partition(df: DataFrame, warehouse: str | os.PathLike[str] | HadoopPath, table: str, ds: str) -> Any:
    """Write ``df`` as ``<warehouse>/<table>/dt=<ds>`` alone (a set of one table), replacing it atomically."""
    write_partitions(warehouse, ds, {table: df})
    return _State.of(warehouse, owner(table), ds).final(table)
