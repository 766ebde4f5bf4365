"""The job around the transforms: partitions read (look-back), atomic idempotent writes, exit codes."""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pytest
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.contract import partition_dir
from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE
from rocketmq_retry.jobs.reconstruct import job as reconstruct
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA

D = "2026-11-21"
CONFIG = """
timezone: UTC
brokers: {default: {message_delay_level: "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"}}
groups: {G: {max_reconsume_times: 1}}
"""


def _event(eid: str, when: dt.datetime, et: str, msg: str, r: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {f.name: None for f in EVENTS_SCHEMA.fields}
    row.update(event_id=eid, event_time=when, source="trace", source_file="f", line_no=1, event_type=et,
               consumer_group="G", msg_id=msg, reconsume_times=r)  # fmt: skip
    return row


def test_parse_duration() -> None:
    assert reconstruct.parse_duration_ms("4h46m") == 17_160_000
    assert reconstruct.parse_duration_ms("90") == 90_000
    with pytest.raises(reconstruct.UserError):
        reconstruct.parse_duration_ms("soon")


def test_bad_date_and_missing_partition(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert reconstruct.main(["--date", "2026-13-01", "--warehouse", str(tmp_path)]) == 2
    assert reconstruct.main(["--date", D, "--warehouse", str(tmp_path)]) == 3
    assert "run ingest first" in capsys.readouterr().err
    # what spark-submit exits with: the operator fails the task without retries on it, as for the ingest
    assert reconstruct.cli(["--date", "2026-13-01", "--warehouse", str(tmp_path)]) == NOT_RETRYABLE_EXIT_CODE
    assert reconstruct.cli(["--date", D, "--warehouse", str(tmp_path)]) == NOT_RETRYABLE_EXIT_CODE
    assert "run ingest first" in capsys.readouterr().err


@pytest.mark.spark
def test_lookback_and_idempotent_rerun(spark: Any, tmp_path: pathlib.Path) -> None:
    wh = tmp_path / "wh"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    prev = dt.datetime(2026, 11, 20, 23, 59, 50)
    schema = T.StructType(EVENTS_SCHEMA.fields)
    # M-old: began 30 min before midnight, outside a 10-minute look-back: its D-1 events are not read.
    # M-new: began 10 s before midnight and finished on D: completed through the look-back.
    d1 = [
        _event("o1", prev - dt.timedelta(minutes=30), "DELIVERED", "M-old", 0),
        _event("o2", prev - dt.timedelta(minutes=30), "CONSUME_FAILED", "M-old", 0),
        _event("n1", prev, "DELIVERED", "M-new", 0),
        _event("n2", prev, "CONSUME_FAILED", "M-new", 0),
    ]
    d0 = [
        _event("o3", prev + dt.timedelta(seconds=20), "DELIVERED", "M-old", 1),
        _event("o4", prev + dt.timedelta(seconds=20, milliseconds=5), "CONSUME_OK", "M-old", None),
        _event("n3", prev + dt.timedelta(seconds=13), "DELIVERED", "M-new", 1),
        _event("n4", prev + dt.timedelta(seconds=13, milliseconds=5), "CONSUME_OK", "M-new", None),
    ]
    spark.createDataFrame(d1, schema).write.parquet(str(partition_dir(wh, "events", "2026-11-20")))
    spark.createDataFrame(d0, schema).write.parquet(str(partition_dir(wh, "events", D)))
    args = ["--date", D, "--warehouse", str(wh), "--config", str(cfg), "--lookback", "10m"]
    assert reconstruct.main(args) == 0
    first = {t: spark.read.parquet(str(partition_dir(wh, t, D))).collect() for t in reconstruct.TABLES}
    life = {r["msg_id"]: r for r in first["lifecycles"]}
    assert life["M-new"]["first_seen"] == prev and life["M-new"]["deliveries"] == 2
    assert life["M-old"]["first_seen"] == prev + dt.timedelta(seconds=20)  # attempt 0 inferred, not read
    assert life["M-old"]["deliveries"] == 2 and life["M-old"]["final_state"] == "CONSUMED"
    assert reconstruct.main(args) == 0
    for table in reconstruct.TABLES:
        assertDataFrameEqual(spark.read.parquet(str(partition_dir(wh, table, D))).collect(), first[table])
    leftovers = [p.name for t in reconstruct.TABLES for p in (wh / t).iterdir() if p.name.startswith(".")]
    assert leftovers == []
