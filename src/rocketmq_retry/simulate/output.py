"""Files of a simulated landing: size-based rotation with each product's rolled-file names, optional gzip,
and an all-or-nothing commit (everything is written under a temp directory that is renamed at the end).
"""

from __future__ import annotations

import gzip
import os
import pathlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from rocketmq_retry.errors import UserError

RolledName = Callable[[int, str], str]  # (window index 1 = newest, date of the rolled content) -> file name


def logback_window(stem: str, sep: str = ".") -> RolledName:
    """logback ``FixedWindowRollingPolicy`` names, e.g. ``otherdays/broker.%i.log.gz`` → ``broker.1.log``."""
    return lambda index, _day: f"{stem}{sep}{index}.log"


def suffix_window(name: str) -> RolledName:
    """4.x ``ClientLogger``'s own appender: ``rocketmq_client.log.1``."""
    return lambda index, _day: f"{name}.{index}"


def spring_window(name: str) -> RolledName:
    """Spring Boot's default ``${LOG_FILE}.%d{yyyy-MM-dd}.%i.gz`` (index counts from 0 within a day)."""
    return lambda index, day: f"{name}.{day}.{index - 1}"


@dataclass
class FileSpec:
    rel_path: str  # current file, relative to the landing root
    rolled_dir: str  # where rolled files go, relative to the current file's directory
    rolled_name: RolledName
    dated: bool = False  # Spring Boot's %d{yyyy-MM-dd}.%i naming instead of a fixed window


class LogFile:
    """One growing log file. Rolls to ``rolled_dir`` when it exceeds ``rotate_bytes`` (0 = never)."""

    def __init__(self, root: pathlib.Path, spec: FileSpec, rotate_bytes: int, compress: bool) -> None:
        self.spec = spec
        self.path = root / spec.rel_path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8", newline="")
        self._rotate = rotate_bytes
        self._compress = compress
        self._size = 0
        self._rolled: list[tuple[pathlib.Path, str]] = []  # oldest first: (temp path, day of last line)
        self.lines = 0
        self.current_lines = 0  # lines in the current file (since the last roll)
        self.last_day = ""

    def write(self, text: str, lines: int, day: str) -> None:
        if self.spec.dated and self._size and day != self.last_day:
            self._roll()  # Spring's time-based policy also rolls at local midnight
        self._fh.write(text)
        self._size += len(text)
        self.lines += lines
        self.current_lines += lines
        self.last_day = day
        if self._rotate and self._size >= self._rotate:
            self._roll()

    def _roll(self) -> None:
        self._fh.close()
        tmp = self.path.with_name(f".{self.path.name}.roll{len(self._rolled)}")
        self.path.rename(tmp)
        self._rolled.append((tmp, self.last_day))
        self._fh = self.path.open("w", encoding="utf-8", newline="")
        self._size = 0
        self.current_lines = 0

    def close(self) -> list[pathlib.Path]:
        """Close and give rolled files their final names (index 1 = newest). Returns every file written."""
        self._fh.close()
        out = [self.path]
        rolled_dir = self.path.parent / self.spec.rolled_dir
        for (tmp, _day), name in zip(self._rolled, self._rolled_names(), strict=True):
            rolled_dir.mkdir(parents=True, exist_ok=True)
            target = rolled_dir / name
            if self._compress:
                target = _gzip_to(tmp, target)
                tmp.unlink()
            else:
                tmp.rename(target)
            out.append(target)
        return out

    def copy_as_now(self, root: pathlib.Path, dest: pathlib.Path) -> list[pathlib.Path]:
        """Copy the file and its rolled siblings, under the names they have at this moment, from ``root`` to
        ``dest`` (what a collector copying the host's log directory now would get). Returns the copies."""
        self._fh.flush()
        current = dest / self.path.relative_to(root)
        current.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.path, current)
        out = [current]
        rolled_dir = current.parent / self.spec.rolled_dir
        for (tmp, _day), name in zip(self._rolled, self._rolled_names(), strict=True):
            rolled_dir.mkdir(parents=True, exist_ok=True)
            target = rolled_dir / name
            if self._compress:
                target = _gzip_to(tmp, target)
            else:
                shutil.copyfile(tmp, target)
            out.append(target)
        return out

    def _rolled_names(self) -> list[str]:
        """The rolled files' names as they stand now, oldest first."""
        names = []
        per_day: dict[str, int] = {}
        total = len(self._rolled)
        for position, (_tmp, day) in enumerate(self._rolled):
            if self.spec.dated:
                # Time-and-size policies number the files of one day from the oldest up.
                per_day[day] = per_day.get(day, 0) + 1
                names.append(self.spec.rolled_name(per_day[day], day))
            else:
                # Fixed-window policies shift on every roll: the newest rolled file is index 1.
                names.append(self.spec.rolled_name(total - position, day))
        return names


def _gzip_to(src: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """``target.gz`` holding ``src``, with no timestamp in the header (same content, same bytes)."""
    target = target.with_name(target.name + ".gz")
    with src.open("rb") as fh, gzip.GzipFile(target, "wb", mtime=0) as dst:
        shutil.copyfileobj(fh, dst)
    return target


class Landing:
    """A landing directory built under ``<out>.partial-<pid>`` and moved into place by :meth:`commit`."""

    def __init__(self, out: pathlib.Path, force: bool) -> None:
        self.out = out
        if out.exists() and any(out.iterdir()) and not force:
            raise UserError(f"--out {out} exists and is not empty (use --force to replace it)")
        self.tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)

    def commit(self) -> None:
        if self.out.exists():
            old = self.out.with_name(f".{self.out.name}.old-{os.getpid()}")
            self.out.rename(old)
            self.tmp.rename(self.out)
            shutil.rmtree(old)
        else:
            self.tmp.rename(self.out)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
