"""Fuzz the ingest reader: malformed gzip, over-long lines, binary and mixed encodings, odd line ends.

Two passes, bounded in time (docs/ingest.md, "Fuzzing the reader" records the inputs tried and the crashes):

* hypothesis drives ``ingest.check.check_file`` over generated files (plain and gzip, whole or damaged) and
  compares its line count and long lines with a plain reference model of Hadoop's ``LineRecordReader``;
* one seeded batch of such files goes through the real Spark read: every file the check passes must be read
  without an error, with exactly the lines the check predicts (skipped ones excepted), each once. (What the
  classifier makes of hostile lines is pinned by exact tests: test_ingest_job, test_ingest_corrupt_lines.)
"""

from __future__ import annotations

import gzip
import pathlib
import random
import zlib
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_retry.jobs.ingest import check as check_module
from rocketmq_retry.jobs.ingest.check import check_file

TRIED = {"check": 0, "gzip": 0, "damaged": 0, "spark_files": 0, "spark_lines": 0}

HEADS = [
    b"2026-11-21 23:25:01,000 INFO RocketmqClient - heartbeat",
    b"2026-11-21T23:25:07.000Z  WARN 1 --- [main] o.s.b.App : started",
    b"\tat a.B.c(B.java:1)",
    b"Caused by: java.lang.IllegalStateException: x",
]
ENDS = [b"\n", b"\r\n", b"\r", b""]


def piece(rnd: random.Random) -> bytes:
    """One line's worth of trouble: log-like text, binary, other encodings, NUL runs, long runs, a BOM."""
    kind = rnd.randrange(9)
    if kind == 0:
        body = rnd.choice(HEADS)
    elif kind == 1:
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
    elif kind == 2:
        body = "café façade naïve 日本語".encode(rnd.choice(["latin-1", "utf-16", "utf-8", "utf-16-le"]), "replace")
    elif kind == 3:
        body = b"\x00" * rnd.randrange(1, 30)
    elif kind == 4:
        body = b"y" * rnd.choice([60, 61, 62, 63, 64, 65, 200, 5000])  # around and over the caps used below
    elif kind == 5:
        body = b"\xef\xbb\xbf" + rnd.choice(HEADS)
    elif kind == 6:
        body = rnd.choice(HEADS)[: rnd.randrange(1, 40)]  # a record cut short
    elif kind == 7:
        body = b"\r" * rnd.randrange(1, 4) + b"\n" * rnd.randrange(3)
    else:
        body = b""
    return body + rnd.choice(ENDS)


def reference(data: bytes, cap: int) -> tuple[int, list[tuple[int, int, int]]]:
    """Hadoop's LineRecordReader, one byte at a time: (lines, [(line_no, offset, size) of the skipped ones])."""
    out, i, n = [], 0, len(data)
    while i < n:
        j = i
        while j < n and data[j] not in (10, 13):
            j += 1
        term = 0 if j == n else (2 if data[j] == 13 and j + 1 < n and data[j + 1] == 10 else 1)
        size = j - i + term - (3 if not out and data[i : i + 3] == b"\xef\xbb\xbf" else 0)
        out.append((i, size))
        i = j + term
    return len(out), [(k, o, s) for k, (o, s) in enumerate(out, 1) if s >= cap]


def damage(rnd: random.Random, blob: bytes) -> bytes:
    """A gzip file as it arrives broken: cut, a flipped byte, garbage after it, or not gzip at all."""
    kind = rnd.randrange(5)
    if kind == 0 and len(blob) > 1:
        return blob[: rnd.randrange(1, len(blob))]
    if kind == 1:
        at = rnd.randrange(len(blob))
        return blob[:at] + bytes([blob[at] ^ (1 << rnd.randrange(8))]) + blob[at + 1 :]
    if kind == 2:
        return blob + bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 20)))
    if kind == 3:
        return zlib.compress(blob)  # zlib, not gzip
    return blob + gzip.compress(b"")  # an empty extra member: valid


def make_file(rnd: random.Random, folder: pathlib.Path, name: str) -> tuple[pathlib.Path, bytes, bool]:
    """A generated file: (path, expanded content, whether it was damaged on purpose)."""
    data = b"".join(piece(rnd) for _ in range(rnd.randrange(0, 25)))
    if rnd.random() < 0.5:
        return _write(folder / f"{name}.log", data), data, False
    members = [data[: len(data) // 2], data[len(data) // 2 :]] if rnd.random() < 0.3 else [data]
    blob = b"".join(gzip.compress(m, compresslevel=rnd.choice([1, 9])) for m in members)
    broken = rnd.random() < 0.4
    return _write(folder / f"{name}.log.gz", damage(rnd, blob) if broken else blob), data, broken


def _write(path: pathlib.Path, data: bytes) -> pathlib.Path:
    path.write_bytes(data)
    return path


@settings(
    max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), cap=st.sampled_from([3, 16, 62, 64, 65, 4096]))
def test_check_file_matches_hadoop_line_model(tmp_path: pathlib.Path, seed: int, cap: int) -> None:
    rnd = random.Random(seed)
    path, data, broken = make_file(rnd, tmp_path, f"f{seed}")
    TRIED["check"] += 1
    TRIED["gzip"] += path.suffix == ".gz"
    got = check_file(str(path), cap, max_expanded_bytes=1 << 20)  # must not raise, whatever the bytes
    if got.damage:
        TRIED["damaged"] += 1
        assert path.suffix == ".gz" and broken, got.damage
        return
    if broken:  # a damage zlib cannot see (a flipped bit in the header's mtime, an empty extra member)
        data = gzip.decompress(path.read_bytes())
    lines, long_lines = reference(data, cap)
    assert (got.lines, [(ln.line_no, ln.byte_offset, ln.size) for ln in got.long_lines]) == (lines, long_lines)


@settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), cap=st.sampled_from([3, 16, 64]), chunk=st.sampled_from([1, 2, 5, 13]))
def test_check_file_matches_hadoop_line_model_across_chunks(
    tmp_path: pathlib.Path, seed: int, cap: int, chunk: int
) -> None:
    """The same model with the scan's chunks a few bytes long, so that a chunk ends inside \\r\\n, a chunk without
    \\r follows one that ended in \\r, and CR-free and mixed chunks alternate (the scan skips the CR handling for a
    chunk without \\r; real chunks are 8 MB, which the generated files never reach)."""
    rnd = random.Random(seed)
    path, data, broken = make_file(rnd, tmp_path, f"c{seed}")
    with mock.patch.object(check_module, "_CHUNK", chunk):
        got = check_file(str(path), cap, max_expanded_bytes=1 << 20)
    if got.damage:
        assert path.suffix == ".gz" and broken, got.damage
        return
    if broken:
        data = gzip.decompress(path.read_bytes())
    lines, long_lines = reference(data, cap)
    assert (got.lines, [(ln.line_no, ln.byte_offset, ln.size) for ln in got.long_lines]) == (lines, long_lines)


@pytest.mark.spark
def test_spark_reads_what_the_check_passes(spark: Any, tmp_path: pathlib.Path) -> None:
    """Seeded batch through the real reader: no task fails, every predicted line is there once."""
    from rocketmq_retry.jobs.ingest.read import SourceFile, read_lines

    rnd = random.Random(20261121)
    cap = 64
    files, expected, skipped = [], {}, {}
    for k in range(60):
        path, _, _ = make_file(rnd, tmp_path, f"g{k}")
        check = check_file(str(path), cap)
        if check.damage:
            continue
        fmt = rnd.choice(["rocketmq-client-4x", "spring-listener", "broker", "rocketmq-client-5x"])
        files.append(SourceFile(str(path), path.name, fmt, "UTC", None))
        gaps = {ln.line_no for ln in check.long_lines}
        skipped[str(path)] = sorted(gaps)
        expected[path.name] = sorted(set(range(1, check.lines + 1)) - gaps)
    lines = read_lines(spark, files, cap, skipped)
    got: dict[str, list[int]] = {name: [] for name in expected}
    for r in lines.select("source_file", "line_no").collect():
        got[r["source_file"]].append(r["line_no"])
    assert {k: sorted(v) for k, v in got.items()} == expected
    TRIED["spark_files"] += len(files)
    TRIED["spark_lines"] += sum(len(v) for v in expected.values())
    print(f"fuzz: {TRIED}")
