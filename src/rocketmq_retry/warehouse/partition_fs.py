"""The two file systems a warehouse lives on, behind one small set of methods the commit protocol calls
(warehouse/partitions.py), so the protocol is written once (docs/airflow.md "On a Spark cluster"):

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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rocketmq_retry.errors import InputError

# A Hadoop lock file whose modification time has not moved for this long, as watched by a waiter, belongs to a
# dead writer (its holder refreshes it every quarter of this). Watched, not compared with the clock: the file
# system's clock and this host's may differ.
LOCK_LEASE_SECONDS = 60.0


class CommitError(InputError):
    """A partition set cannot be read or written consistently; the message names the journal or the lock."""


# A scheme of two letters or more (``file:/``, ``hdfs://``): ``C:/`` would be a drive, not that we run there.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


class LocalFs:
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
    def locked(self, lock: Any, label: str, wait: float | None, why: str) -> Iterator[None]:
        """``wait`` None blocks as long as it takes (the holder is a live process: a dead one's flock is released
        by the kernel). ``label`` (``<job> dt=D``) opens the error raised when ``wait`` runs out."""
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = None if wait is None else time.monotonic() + wait
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise _lock_busy(lock, label, wait, why) from None
                    if not told:
                        print(f"partitions: waiting for {lock} ({why})", file=sys.stderr, flush=True)
                        told = True
                    time.sleep(0.1)
            yield
        finally:
            os.close(fd)  # releases the lock


def _lock_busy(lock: Any, label: str, wait: float | None, why: str) -> CommitError:
    return CommitError(
        f"{label}: another process holds {lock} (a writer of this date); "
        f"{why} gave up after {wait:g} s (try again once it has finished)"
    )


@dataclass(frozen=True)
class HadoopPath:
    """A path on a Hadoop file system: what ``committed`` returns for a URI warehouse. ``str()`` is the URI that
    Spark reads; ``is_dir()`` and ``exists()`` ask the file system, as ``pathlib.Path`` would locally."""

    uri: str
    fs: HadoopFs

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


class HadoopFs:
    """``org.apache.hadoop.fs.FileSystem`` of a URI, through the driver's Spark JVM and its Hadoop configuration
    (so ``spark.hadoop.*`` settings and credentials apply as they do to the executors' writes)."""

    def __init__(self, uri: str) -> None:
        from pyspark import SparkContext

        if os.environ.get("SPARK_REMOTE"):
            # the job's data is on the Connect server: a JVM that happens to run here is not the one writing it
            server = os.environ["SPARK_REMOTE"].split(";")[0]  # the URL's parameters may hold a token
            raise CommitError(
                f"{uri}: a warehouse URI is committed through Hadoop's FileSystem API in a classic Spark driver, and "
                f"this job runs on the Spark Connect server at {server} (no driver JVM here): give the warehouse as "
                f"a plain path that the server and this process both see, or use spark-submit"
            )
        sc = SparkContext._active_spark_context
        if sc is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
            # Under spark-submit the driver's JVM is already up: a job that checks its input before building its
            # session (reconstruct does) gets the session now, built with the jobs' own settings.
            from pyspark import SparkConf

            from rocketmq_retry.spark_session import build_spark_session

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
    def locked(self, lock: Any, label: str, wait: float | None, why: str) -> Iterator[None]:
        me = {"host": socket.gethostname(), "pid": os.getpid(), "why": why, "token": uuid.uuid4().hex}
        deadline = None if wait is None else time.monotonic() + wait
        told, seen, since = False, None, time.monotonic()
        while True:
            try:
                self._create(lock, json.dumps(me))
                break
            except FileExistsError:
                pass
            holder = parse_json(lock, self.read_text(lock))
            try:
                mtime = self.age(lock)[0]
            except Exception:  # released between the two calls
                continue
            if mtime != seen:
                seen, since = mtime, time.monotonic()
            stale = self._holder_dead(holder) or time.monotonic() - since > LOCK_LEASE_SECONDS
            if stale:
                print(f"partitions: taking over {lock} from a writer that is gone: {holder}", file=sys.stderr)
                self.rmtree(lock)
                continue
            if deadline is not None and time.monotonic() >= deadline:
                raise _lock_busy(lock, label, wait, why)
            if not told:
                print(f"partitions: waiting for {lock} ({why}; held by {holder})", file=sys.stderr, flush=True)
                told = True
            time.sleep(0.2)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(LOCK_LEASE_SECONDS / 4):
                with contextlib.suppress(Exception):
                    self._fs.setTimes(self._path(lock), int(time.time() * 1000), -1)

        beat = threading.Thread(target=heartbeat, name="partitions-lock-heartbeat", daemon=True)
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()
            if (parse_json(lock, self.read_text(lock)) or {}).get("token") == me["token"]:
                self.rmtree(lock)


_LOCAL = LocalFs()
Fs = LocalFs | HadoopFs


def resolve(path: str | os.PathLike[str] | HadoopPath) -> tuple[Fs, Any]:
    """The file system of ``path`` and the path in its terms: a URI goes through Hadoop, a plain path is local."""
    if isinstance(path, HadoopPath):
        return path.fs, path
    text = os.fspath(path)
    if _URI.match(text):
        fs = HadoopFs(text)
        return fs, HadoopPath(text.rstrip("/"), fs)
    return _LOCAL, pathlib.Path(text)


def parse_json(path: Any, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise CommitError(f"{path}: unreadable commit file ({exc}); remove it only after checking the tables") from None
    return data
