"""``event_id`` names a line of a file's content (issue #28): the file's instance (host folder) and fingerprint,
the line number, the record index and the line's own text, never the file's name or date folder.

The fingerprint tests run ``check_file`` alone; the others are tiny literal landings laid out one folder per
date, as collected (``landing/<date>/...``, the landing root of a run being ``landing/<date>``), through the real
job (``run_ingest``).
"""

from __future__ import annotations

import gzip
import hashlib
import pathlib
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir
from rocketmq_retry.jobs.ingest.check import FINGERPRINT_BYTES, check_file

D1, D2 = "2026-11-21", "2026-11-22"
HEAD = "{ds} 23:25:0{sec},000 WARN RocketmqClient - "
LC2 = (
    "consumeMessage return null, Group: GID_a Msgs: [MessageExt [brokerName=b, queueId=0, msgId=0A, "
    "reconsumeTimes=0, toString()=Message{{topic='T', flag=0, properties={{UNIQ_KEY=U{n}, KEYS=K{n}}}, "
    "body=[104, 105], transactionId='null'}}]] MQ: MessageQueue [topic=T, brokerName=b, queueId=0]"
)
BANNER = "2026-11-21 00:00:00,000 INFO RocketmqClient - client started"
P, S = "\u0001", "\u0002"
SOURCES = [
    {"format": "rocketmq-client-4x", "path": "**/rocketmq_client*", "timezone": "UTC"},
    {"format": "trace", "path": "**/*.trace*"},
]


def event_line(n: int, ds: str = D1, sec: int = 1) -> str:
    """A 4.x ``consumeMessage return null`` line (one CONSUME_FAILED event of message ``U<n>``) on ``ds``."""
    return HEAD.format(ds=ds, sec=sec) + LC2.format(n=n)


def trace_line(*msg_ids: str) -> str:
    """One trace body of several Pub records on D1 (one event per record, ``rec`` 0, 1, ...)."""
    pub = ["Pub", "1795303505730", "R", "PID_p", "T", "{}", "tag", "K", "127.0.0.1:10911", "1", "2", "0", "OFF", "true"]
    return "".join(P.join(pub).replace("{}", m) + S for m in msg_ids)


def write(path: pathlib.Path, lines: list[str], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)


def ingest(spark: Any, landing: pathlib.Path, wh: pathlib.Path, ds: str = D1) -> dict[str, Any]:
    from rocketmq_retry.jobs.ingest.job import format_report, run_ingest

    result = run_ingest(spark, parse_config({"timezone": "UTC", "sources": SOURCES}), ds, str(landing), str(wh))
    events = [r.asDict() for r in spark.read.parquet(str(partition_dir(wh, "events", ds))).collect()]
    return {
        "events": events,
        "report": {r["source_file"]: r for r in result.report},
        "summary": format_report(result.report),
    }


def ids(run: dict[str, Any]) -> dict[tuple[str, int, str], str]:
    """(file name, line_no, msg_id) -> event_id: the path's folders left out, a renamed file keeps its stem."""
    out = {}
    for e in run["events"]:
        name = pathlib.PurePosixPath(e["source_file"]).name.split(".")[0]
        key = (name, e["line_no"], e["msg_id"])
        assert key not in out, f"two events for {key}"
        out[key] = e["event_id"]
    return out


# ---------------------------------------------------------------------------------------------- fingerprints


def fp(tmp_path: pathlib.Path, name: str, data: bytes, **kw: Any) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    check = check_file(str(p), **kw)
    assert check.damage is None
    return check.fingerprint


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:32]


def test_fingerprint_is_the_first_line_of_content_whatever_the_name_or_compression(tmp_path: pathlib.Path) -> None:
    body = b"first line\nsecond\n"
    assert fp(tmp_path, "stats.log", body) == sha(b"first line")
    assert fp(tmp_path, "stats.log.1", body) == sha(b"first line")
    assert fp(tmp_path, "stats.log.1.gz", gzip.compress(body)) == sha(b"first line")
    # the first gzip member ends inside the first line: the line is read on across members
    assert fp(tmp_path, "two.gz", gzip.compress(b"first ") + gzip.compress(b"line\nsecond\n")) == sha(b"first line")
    # a file that grew since it was first collected keeps its fingerprint; its line end does not matter
    assert fp(tmp_path, "grown.log", body + b"third\n") == sha(b"first line")
    assert fp(tmp_path, "crlf.log", b"first line\r\nsecond\r\n") == sha(b"first line")
    assert fp(tmp_path, "cr.log", b"first line\rsecond") == sha(b"first line")
    assert fp(tmp_path, "other.log", b"first line!\nsecond\n") == sha(b"first line!")


def test_fingerprint_edge_files(tmp_path: pathlib.Path) -> None:
    assert fp(tmp_path, "empty.log", b"") == sha(b"")
    assert fp(tmp_path, "empty.gz", gzip.compress(b"")) == sha(b"")
    assert fp(tmp_path, "blank.log", b"\n  \n\t\r\n") == sha(b"")
    # a BOM and leading blank lines are not content (a stdout log often opens with a blank line)
    assert fp(tmp_path, "bom.log", b"\xef\xbb\xbfhead\nx\n") == sha(b"head")
    assert fp(tmp_path, "lead.log", b"\n\n   \n  head\nx\n") == sha(b"head")
    # a first line over the read cap (skipped by Spark, quarantined) still fingerprints its file: its first bytes
    huge = b"y" * (3 * FINGERPRINT_BYTES) + b"\nnext\n"
    assert fp(tmp_path, "huge.log", huge, max_line_bytes=1024) == sha(b"y" * FINGERPRINT_BYTES)
    assert fp(tmp_path, "huge.gz", gzip.compress(huge), max_line_bytes=1024) == sha(b"y" * FINGERPRINT_BYTES)


# --------------------------------------------------------------------------------------------- through the job


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("event_id")
    day1, day2 = root / "landing" / D1, root / "landing" / D2
    first = [BANNER, event_line(1), event_line(2)]
    # Day 1's current log, and day 2's after it rolled by size: the same path and line numbers, other lines
    # (the first line too) ...
    write(day1 / "host1" / "rocketmq_client.log", first)
    write(day2 / "host1" / "rocketmq_client.log", [event_line(5, D2), event_line(6, D2), event_line(7, D2)])
    # ... and a file that rolled without its first line changing (the same banner): only the lines differ
    write(day1 / "host2" / "rocketmq_client.log", [BANNER, event_line(3)])
    write(day2 / "host2" / "rocketmq_client.log", [BANNER, event_line(8, D2)])
    # day 1's first log was rotated and gzipped by day 2's collection (rocketmq_client.log -> .1 -> .1.gz)
    write(day2 / "host1" / "rocketmq_client.log.1.gz", first, gz=True)
    # a trace file (several records per line) copied into both days' folders, one under another name
    trace = [trace_line("M1", "M2"), trace_line("M3", "M4", "M5")]
    write(day1 / "trace" / "t.trace", trace)
    write(day2 / "trace" / "old" / "t.trace.1", trace)
    # one day's landing holding the same file twice in one instance (host folder "h"), a grown copy, a damaged
    # copy, a look-alike that opens with the same line but goes on differently, and the same lines on another
    # host (h2: the same first line and lines, as two brokers' stats lines can be)
    dup = root / "dup" / D1
    write(dup / "h" / "rocketmq_client.log", first)
    write(dup / "h" / "backup" / "rocketmq_client.log.1", first)
    write(dup / "h" / "copy" / "rocketmq_client.log.2", [*first, event_line(4, sec=5)])
    (dup / "h" / "cut").mkdir()
    (dup / "h" / "cut" / "rocketmq_client.log.3.gz").write_bytes(gzip.compress(("\n".join(first)).encode())[:30])
    write(dup / "h" / "other" / "rocketmq_client.log", [BANNER, event_line(9), event_line(2, sec=7)])
    write(dup / "h2" / "rocketmq_client.log", first)
    wh = root / "wh"
    return {
        "d1": ingest(spark, day1, wh),
        "d2": ingest(spark, day2, wh, D2),
        "d1_again": ingest(spark, day1, root / "wh-again"),
        # catch-up: day 1's lines as they are found in day 2's folder
        "d1_from_d2": ingest(spark, day2, root / "wh-catch-up"),
        "dup": ingest(spark, dup, root / "wh-dup"),
    }


@pytest.mark.spark
def test_a_file_that_rolled_between_two_dates_shares_no_id(runs: dict[str, Any]) -> None:
    d1, d2 = runs["d1"]["events"], runs["d2"]["events"]
    # the same paths and line numbers on both dates (what path-based ids collided on) ...
    assert {(e["source_file"], e["line_no"]) for e in d2} & {(e["source_file"], e["line_no"]) for e in d1} == {
        ("host1/rocketmq_client.log", 2),
        ("host1/rocketmq_client.log", 3),
        ("host2/rocketmq_client.log", 2),
    }
    # ... and not one shared id: the two partitions never name two different lines with one id
    assert {e["event_id"] for e in d1} & {e["event_id"] for e in d2} == set()
    assert len({e["event_id"] for e in d1}) == len(d1) == 8
    assert len({e["event_id"] for e in d2}) == len(d2) == 4


@pytest.mark.spark
def test_the_same_file_collected_again_renamed_or_gzipped_keeps_its_ids(runs: dict[str, Any]) -> None:
    d1, again, catch_up = ids(runs["d1"]), ids(runs["d1_again"]), ids(runs["d1_from_d2"])
    assert again == d1  # re-ingesting a date gives the same ids
    # day 1's lines as found in day 2's folder: host1's log as rocketmq_client.log.1.gz, the trace file as
    # trace/old/t.trace.1; host2's log rolled (other lines, nothing of day 1 in it)
    assert sorted(catch_up) == [
        ("rocketmq_client", 2, "U1"),
        ("rocketmq_client", 3, "U2"),
        ("t", 1, "M1"),
        ("t", 1, "M2"),
        ("t", 2, "M3"),
        ("t", 2, "M4"),
        ("t", 2, "M5"),
    ]
    assert {k: d1[k] for k in catch_up} == catch_up
    sources = {e["msg_id"]: e["source_file"] for e in runs["d1_from_d2"]["events"]}
    assert (sources["U1"], sources["M1"]) == ("host1/rocketmq_client.log.1.gz", "trace/old/t.trace.1")


@pytest.mark.spark
def test_a_file_present_twice_in_one_day_is_written_once_and_counted(runs: dict[str, Any]) -> None:
    run = runs["dup"]
    events = sorted((e["source_file"], e["line_no"], e["msg_id"]) for e in run["events"])
    # each line of h once, under the first file by source_file; the grown copy adds its new line; the look-alike
    # opens with the same line but its own lines are its own events (U2 too: another line, at the same number);
    # another host's lines are its own, however alike
    assert events == [
        ("h/backup/rocketmq_client.log.1", 2, "U1"),
        ("h/backup/rocketmq_client.log.1", 3, "U2"),
        ("h/copy/rocketmq_client.log.2", 4, "U4"),
        ("h/other/rocketmq_client.log", 2, "U9"),
        ("h/other/rocketmq_client.log", 3, "U2"),
        ("h2/rocketmq_client.log", 2, "U1"),
        ("h2/rocketmq_client.log", 3, "U2"),
    ]
    assert len({e["event_id"] for e in run["events"]}) == len(run["events"])
    report = {
        f: (r["file_status"], r["lines_read"], r["events"], r["event_rows"], r["duplicate_events"], r["duplicate_of"])
        for f, r in run["report"].items()
    }
    assert report == {
        "h/backup/rocketmq_client.log.1": ("read", 3, 2, 2, 0, None),
        "h/copy/rocketmq_client.log.2": ("read", 4, 3, 1, 2, ["h/backup/rocketmq_client.log.1"]),
        "h/cut/rocketmq_client.log.3.gz": ("quarantined", 0, 0, 0, 0, None),
        "h/other/rocketmq_client.log": ("read", 3, 2, 2, 0, None),
        "h/rocketmq_client.log": ("read", 3, 2, 0, 2, ["h/backup/rocketmq_client.log.1"]),
        "h2/rocketmq_client.log": ("read", 3, 2, 2, 0, None),
    }
    assert "event rows not written again (the same lines read from another file of the day): 4" in run["summary"]
    assert "h/rocketmq_client.log: same lines as h/backup/rocketmq_client.log.1" in run["summary"]


@pytest.mark.spark
def test_no_duplicate_counted_on_a_day_without_copies(runs: dict[str, Any]) -> None:
    for name in ("d1", "d2"):
        rows = runs[name]["report"].values()
        assert all(r["duplicate_events"] == 0 and r["duplicate_of"] is None for r in rows)
        assert sum(r["event_rows"] for r in rows) == len(runs[name]["events"])
