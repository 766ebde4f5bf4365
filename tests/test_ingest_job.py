"""The ingest job end to end: hostile files, idempotent re-runs, atomic partition swap, CLI errors, real samples."""

from __future__ import annotations

import csv
import gzip
import pathlib
import shutil
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir
from rocketmq_retry.errors import InputError, UserError

DS = "2026-11-21"
HEAD = "2026-11-21 23:25:0{}.000 WARN RocketmqClient - "
LC2 = (
    "consumeMessage return null, Group: GID_a Msgs: [MessageExt [brokerName=b, queueId=0, msgId=0A, "
    "reconsumeTimes={r}, toString()=Message{{topic='T', flag=0, properties={{UNIQ_KEY=U{n}, KEYS=K{n}}}, "
    "body=[104, 105], transactionId='null'}}]] MQ: MessageQueue [topic=T, brokerName=b, queueId=0]"
)


def _line(sec: int, n: int, r: int = 0) -> bytes:
    return (HEAD.format(sec).replace(".000", ",000") + LC2.format(n=n, r=r)).encode()


def _hostile_landing(root: pathlib.Path) -> pathlib.Path:
    # Hadoop glob characters (Spark expands read paths as globs), a quote (the file catalog is an inline SQL
    # table), a space and a non-ASCII letter
    d = root / "app's [1] {a,b} \\ été" / "logs"
    d.mkdir(parents=True)
    crlf = b"\r\n"
    current = [
        _line(1, 1),
        b"2026-11-21 23:25:02,000 INFO RocketmqClient - bad \xff\xfe bytes",  # invalid UTF-8
        b"2026-11-21 23:25:03,000 INFO RocketmqClient - a NUL \x00 here",
        b"2026-11-21 23:25:04,000 INFO RocketmqClient - " + b"x" * (1 << 20),  # a 1 MB line
        _line(6, 2),
        _line(5, 3),  # out of timestamp order
        _line(5, 3),  # duplicated line: kept, its own line number and event_id
        b"\tat frame.after(Duplicate.java:1)",
        b"2026-11-22 23:59:59,000 INFO RocketmqClient - next day",  # another date's line in the same file
        _line(7, 4)[:120],  # truncated write: cut inside the statement, no newline at the end
    ]
    (d / "rocketmq_client.log").write_bytes(crlf.join(current))
    rotated = [b"\tat orphan.frame(X.java:1)", _line(0, 0, r=1)]
    with gzip.open(d / "rocketmq_client.log.1.gz", "wb") as fh:
        fh.write(b"\n".join(rotated) + b"\n")
    return root


@pytest.fixture(scope="module")
def hostile(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from rocketmq_retry.jobs.ingest.job import run_ingest

    root = tmp_path_factory.mktemp("hostile")
    landing = _hostile_landing(root / "landing")
    wh = root / "wh"
    config = parse_config(
        {
            "timezone": "UTC",
            "sources": [{"format": "rocketmq-client-4x", "path": "**/rocketmq_client*.log*", "timezone": "UTC"}],
        }
    )
    first = run_ingest(spark, config, DS, str(landing), str(wh))
    ev1 = sorted(tuple(r) for r in spark.read.parquet(str(partition_dir(wh, "events", DS))).collect())
    q1 = sorted(tuple(r) for r in spark.read.parquet(str(partition_dir(wh, "quarantine", DS))).collect())
    second = run_ingest(spark, config, DS, str(landing), str(wh))  # re-run over its own output
    moved = root / "elsewhere [copy]"  # a landing root that is not a valid glob pattern
    shutil.copytree(landing, moved)
    run_ingest(spark, config, DS, str(moved), str(root / "wh2"))
    return {
        "first": first,
        "second": second,
        "ev1": ev1,
        "q1": q1,
        "wh": wh,
        "ev2": sorted(tuple(r) for r in spark.read.parquet(str(partition_dir(wh, "events", DS))).collect()),
        "q2": sorted(tuple(r) for r in spark.read.parquet(str(partition_dir(wh, "quarantine", DS))).collect()),
        "ev_moved": sorted(
            tuple(r) for r in spark.read.parquet(str(partition_dir(root / "wh2", "events", DS))).collect()
        ),
        "events": spark.read.parquet(str(partition_dir(wh, "events", DS))).collect(),
        "quarantine": spark.read.parquet(str(partition_dir(wh, "quarantine", DS))).collect(),
    }


@pytest.mark.spark
def test_hostile_lines_are_quarantined_with_reasons(hostile: dict[str, Any]) -> None:
    reasons = {(pathlib.Path(r["source_file"]).name, r["line_no"]): r["reason"] for r in hostile["quarantine"]}
    assert reasons == {
        ("rocketmq_client.log", 2): "invalid UTF-8",
        ("rocketmq_client.log", 3): "NUL byte in line",
        ("rocketmq_client.log", 4): "line of 1 MB or more",
        ("rocketmq_client.log", 10): "truncated or malformed L-C2 statement",
        ("rocketmq_client.log.1.gz", 1): "continuation line before any head line in the file",
    }
    raw = {r["line_no"]: r["raw"] for r in hostile["quarantine"]}
    assert len(raw[4]) == 4096  # size-capped
    assert "\ufffd" in raw[2]  # stored as valid text


@pytest.mark.spark
def test_hostile_input_does_not_spoil_other_rows(hostile: dict[str, Any]) -> None:
    got = sorted(
        (pathlib.Path(r["source_file"]).name, r["line_no"], r["msg_id"], r["reconsume_times"], r["body"])
        for r in hostile["events"]
    )
    assert got == [
        ("rocketmq_client.log", 1, "U1", 0, "hi"),
        ("rocketmq_client.log", 5, "U2", 0, "hi"),
        ("rocketmq_client.log", 6, "U3", 0, "hi"),
        ("rocketmq_client.log", 7, "U3", 0, "hi"),
        ("rocketmq_client.log.1.gz", 2, "U0", 1, "hi"),
    ]
    assert len({r["event_id"] for r in hostile["events"]}) == 5


@pytest.mark.spark
def test_hostile_accounting(hostile: dict[str, Any]) -> None:
    rows = {pathlib.Path(r["source_file"]).name: r for r in hostile["first"].report}
    cur = rows["rocketmq_client.log"]
    assert (
        cur["lines_read"],
        cur["events"],
        cur["ignored"],
        cur["continuation"],
        cur["quarantined"],
        cur["other_date"],
    ) == (9, 4, 0, 1, 4, 1)
    gz = rows["rocketmq_client.log.1.gz"]
    assert (gz["lines_read"], gz["events"], gz["quarantined"]) == (2, 1, 1)


@pytest.mark.spark
def test_rerun_is_identical_and_ids_survive_moving_the_landing(hostile: dict[str, Any]) -> None:
    assert hostile["ev1"] == hostile["ev2"]
    assert hostile["q1"] == hostile["q2"]
    assert hostile["ev1"] == hostile["ev_moved"]
    assert hostile["first"].report == hostile["second"].report


@pytest.mark.spark
def test_failed_write_leaves_previous_partition_readable(spark: Any, hostile: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    from rocketmq_retry.warehouse.partitions import write_partition

    wh = hostile["wh"]
    bad = spark.range(3).select(F.when(F.col("id") == 2, F.raise_error(F.lit("crash mid-write"))).alias("x"))
    with pytest.raises(Exception, match="crash mid-write"):
        write_partition(bad, wh, "events", DS)
    again = sorted(tuple(r) for r in spark.read.parquet(str(partition_dir(wh, "events", DS))).collect())
    assert again == hostile["ev1"]


def test_no_sources_is_a_user_error(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.jobs.ingest.job import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text("timezone: UTC\n")
    with pytest.raises(UserError, match="no sources configured"):
        main(["--date", DS, "--landing", str(tmp_path), "--warehouse", str(tmp_path / "wh"), "--config", str(cfg)])


def test_missing_landing_is_an_input_error(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.jobs.ingest.read import resolve_files

    config = parse_config({"sources": [{"format": "broker", "path": "*.log"}]})
    with pytest.raises(InputError, match="landing directory not found"):
        resolve_files(config, tmp_path / "nope", DS)


@pytest.mark.spark
def test_real_samples_accounting_and_ground_truth(
    spark: Any, samples_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Every file of the 4.9.4 samples balances, and every delivery ground-truth.csv lists is an event."""
    from rocketmq_retry.config import load_config
    from rocketmq_retry.jobs.ingest.job import format_report, run_ingest

    config = load_config(pathlib.Path(__file__).parent / "data" / "samples-4.9.4.yaml")
    result = run_ingest(spark, config, DS, str(samples_dir), str(tmp_path / "wh"))
    print(format_report(result.report))
    for r in result.report:
        assert r["lines_read"] == r["events"] + r["ignored"] + r["continuation"] + r["quarantined"], r
        assert r["quarantined"] == 0 and r["other_date"] == 0, r
    events = spark.read.parquet(str(partition_dir(tmp_path / "wh", "events", DS)))
    delivered = {
        (r["consumer_group"], r["msg_id"], r["reconsume_times"])
        for r in events.filter("event_type = 'DELIVERED'").collect()
    }
    dead = {(r["consumer_group"], r["msg_id"]) for r in events.filter("event_type = 'DEAD_LETTERED'").collect()}
    retried = {r["msg_id"] for r in events.filter("event_type = 'PUBLISH_RETRY'").collect()}
    with (samples_dir / "ground-truth.csv").open() as fh:
        truth = list(csv.DictReader(fh))
    missing = []
    for row in truth:
        for rt in filter(None, row["delivery_reconsumeTimes"].split(";")):
            if (row["consumer_group"], row["msgId_uniqKey"], int(rt)) not in delivered:
                missing.append((row["scenario"], row["consumer_group"], row["msgId_uniqKey"], rt))
        if row["final_state"] == "DLQ" and (row["consumer_group"], row["msgId_uniqKey"]) not in dead:
            missing.append((row["scenario"], "DLQ", row["msgId_uniqKey"]))
        if row["final_state"] == "SEND_FAILED_AFTER_3_ATTEMPTS" and row["msgId_uniqKey"] not in retried:
            missing.append((row["scenario"], "PUBLISH_RETRY", row["msgId_uniqKey"]))
    assert missing == []
