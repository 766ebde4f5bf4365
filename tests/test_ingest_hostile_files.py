"""Hostile files on a landing day: links out of the landing root, damaged or huge gzip files, over-long lines.

Each case is a tiny literal landing run through the real job (``run_ingest`` or the spark-submit entry's
``cli``); the good files of the day must come through untouched.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import pathlib
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir

DS = "2026-11-21"
SECRET = "TOP-SECRET-d41d8cd9"
GOOD = (
    "2026-11-21 23:25:01,000 WARN RocketmqClient - consumeMessage return null, Group: GID_a Msgs: [MessageExt "
    "[brokerName=b, queueId=0, msgId=0A, reconsumeTimes=0, toString()=Message{{topic='T', flag=0, "
    "properties={{UNIQ_KEY=U{n}, KEYS=K{n}}}, body=[104, 105], transactionId='null'}}]] MQ: MessageQueue "
    "[topic=T, brokerName=b, queueId=0]"
)
NOISE = "2026-11-21 23:25:02,000 INFO RocketmqClient - heartbeat {n}"
SOURCES = [{"format": "rocketmq-client-4x", "path": "**/*.log*", "timezone": "UTC"}]


def _tables(spark: Any, wh: pathlib.Path) -> dict[str, list[dict[str, Any]]]:
    return {
        t: [r.asDict(recursive=True) for r in spark.read.parquet(str(partition_dir(wh, t, DS))).collect()]
        for t in ("events", "quarantine", "ingest_report", "bindings")
    }


@pytest.fixture(scope="module")
def linked(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from rocketmq_retry.jobs.ingest.job import format_report, run_ingest

    root = tmp_path_factory.mktemp("links")
    outside = root / "outside"
    (outside / "dir").mkdir(parents=True)
    secret_lines = f"{SECRET} line one\n\tat {SECRET}.frame(X.java:1)\n"
    (outside / "secret.txt").write_text(secret_lines)
    (outside / "dir" / "stolen.log").write_text(secret_lines)
    landing = root / "landing"
    (landing / "app1").mkdir(parents=True)
    (landing / "app1" / "client.log").write_text(GOOD.format(n=1) + "\n" + NOISE.format(n=1) + "\n")
    os.symlink(outside / "secret.txt", landing / "app1" / "evil.log")  # a file link out of the root
    os.symlink(outside / "dir", landing / "app2")  # a directory link out of the root (an instance or day folder)
    os.symlink(landing / "app1" / "client.log", landing / "app1" / "alias.log")  # a link inside: read once
    wh = root / "wh"
    config = parse_config({"timezone": "UTC", "sources": SOURCES})
    result = run_ingest(spark, config, DS, str(landing), str(wh))
    return {"result": result, "tables": _tables(spark, wh), "summary": format_report(result.report)}


@pytest.mark.spark
def test_links_out_of_the_landing_root_are_refused_and_counted(linked: dict[str, Any]) -> None:
    result = linked["result"]
    files = {r["source_file"]: (r["file_status"], r["file_reason"], r["lines_read"]) for r in result.report}
    refused = "real path leaves the landing root (symbolic link)"
    assert files == {
        "app1/client.log": ("read", None, 2),
        "app1/evil.log": ("refused", refused, 0),
        "app2/stolen.log": ("refused", refused, 0),
    }
    assert result.files_refused == 2
    assert "files refused: 2" in linked["summary"]
    assert f"app2/stolen.log (rocketmq-client-4x): {refused}" in linked["summary"]
    assert [e["msg_id"] for e in linked["tables"]["events"]] == ["U1"]


@pytest.mark.spark
def test_secret_behind_a_link_is_in_no_table(linked: dict[str, Any]) -> None:
    for table, rows in linked["tables"].items():
        assert SECRET not in repr(rows), table
    assert linked["tables"]["quarantine"] == []


@pytest.fixture(scope="module")
def damaged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A day with a gzip bomb, a truncated .gz, a non-gzip .gz and an over-long line, run as spark-submit does."""
    from rocketmq_retry.jobs.ingest.job import cli

    root = tmp_path_factory.mktemp("damaged")
    landing = root / "landing" / "app"
    landing.mkdir(parents=True)
    (landing / "current.log").write_text(GOOD.format(n=1) + "\n" + NOISE.format(n=1) + "\n")
    with gzip.open(landing / "good.log.1.gz", "wt") as fh:
        fh.write(GOOD.format(n=2) + "\n")
    # 3 MB of one line compress to a few kB: past the 1 MB expanded-size cap configured below
    (landing / "bomb.log.2.gz").write_bytes(gzip.compress(b"x" * (3 << 20) + b"\n"))
    whole = gzip.compress((GOOD.format(n=3) + "\n").encode() * 50)
    (landing / "cut.log.3.gz").write_bytes(whole[: len(whole) // 2])
    (landing / "plain.log.4.gz").write_text(GOOD.format(n=4) + "\n")  # not gzip at all
    # a 300 kB line between two good lines, over the 64 kB line cap configured below
    long_line = "2026-11-21 23:25:03,000 INFO RocketmqClient - " + "y" * 300_000
    lines = [GOOD.format(n=5), long_line, GOOD.format(n=6)]
    (landing / "long.log").write_text("\n".join(lines) + "\n")
    cfg = root / "config.yaml"
    cfg.write_text(
        "timezone: UTC\n"
        "sources:\n  - {format: rocketmq-client-4x, path: '**/*.log*', timezone: UTC}\n"
        "ingest: {max_expanded_bytes: 1048576, max_line_bytes: 65536}\n"
    )
    wh = root / "wh"
    args = ["--date", DS, "--landing", str(root / "landing"), "--warehouse", str(wh), "--config", str(cfg)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(args)
    return {"code": code, "out": out.getvalue(), "tables": _tables(spark, wh), "long_offset": len(GOOD.format(n=5)) + 1}


@pytest.mark.spark
def test_damaged_gzip_files_are_quarantined_whole_and_the_day_goes_on(damaged: dict[str, Any]) -> None:
    assert damaged["code"] == 0
    out, tables = damaged["out"], damaged["tables"]
    assert sorted((e["source_file"], e["line_no"], e["msg_id"]) for e in tables["events"]) == [
        ("app/current.log", 1, "U1"),
        ("app/good.log.1.gz", 1, "U2"),
        ("app/long.log", 1, "U5"),
        ("app/long.log", 3, "U6"),  # numbered as in the file, after the line the reader skipped
    ]
    whole_files = {
        q["source_file"]: (q["line_no"], q["raw"], q["reason"]) for q in tables["quarantine"] if q["line_no"] is None
    }
    assert whole_files == {
        "app/bomb.log.2.gz": (None, None, "gzip file expands past 1048576 bytes (ingest.max_expanded_bytes)"),
        "app/cut.log.3.gz": (None, None, "truncated gzip file (member 1 ends before its trailer)"),
        "app/plain.log.4.gz": (None, None, "not a gzip file"),
    }
    status = {r["source_file"]: (r["file_status"], r["file_reason"]) for r in tables["ingest_report"]}
    assert status["app/bomb.log.2.gz"][0] == status["app/cut.log.3.gz"][0] == "quarantined"
    assert status["app/current.log"] == ("read", None)
    assert "files quarantined whole (not read): 3" in out
    for name, reason in whole_files.items():
        assert f"{name} (rocketmq-client-4x): {reason[2]}" in out


@pytest.mark.spark
def test_over_long_line_is_quarantined_with_file_and_offset(damaged: dict[str, Any]) -> None:
    tables = damaged["tables"]
    rows = [q for q in tables["quarantine"] if q["line_no"] is not None]
    assert [(q["source_file"], q["line_no"], q["reason"], q["byte_offset"]) for q in rows] == [
        ("app/long.log", 2, "line of 65536 bytes or more", damaged["long_offset"])
    ]
    assert rows[0]["raw"] == ("2026-11-21 23:25:03,000 INFO RocketmqClient - " + "y" * 300_000)[:4096]
    report = {r["source_file"]: r for r in tables["ingest_report"]}["app/long.log"]
    assert (report["lines_read"], report["events"], report["quarantined"]) == (3, 2, 1)
    assert report["quarantined_by_reason"] == {"line of 65536 bytes or more": 1}


def test_configuration_errors_exit_not_retryable(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE
    from rocketmq_retry.jobs.ingest.job import cli

    cfg = tmp_path / "c.yaml"
    cfg.write_text("timezone: UTC\n")  # no sources
    args = ["--date", DS, "--landing", str(tmp_path), "--warehouse", str(tmp_path / "wh"), "--config", str(cfg)]
    assert cli(args) == NOT_RETRYABLE_EXIT_CODE == 65
    assert "no sources configured" in capsys.readouterr().err


def test_spark_job_operator_fails_without_retries_on_the_not_retryable_exit(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator runs the real spark-submit hook; only the process it starts is a stand-in that exits 65
    (or 1, a failure that may be transient and keeps Airflow's retries)."""
    from airflow.exceptions import AirflowException
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.airflow.operators import RocketMQSparkJobOperator

    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "ingest.py").write_text("")
    fake = tmp_path / "spark-submit"
    fake.write_text('#!/bin/sh\necho fake spark-submit\nexit "$FAKE_EXIT"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(SparkSubmitHook, "_resolve_connection", lambda self: {
        "master": "local[1]", "spark_binary": str(fake), "deploy_mode": None, "queue": None,
        "namespace": None, "principal": None, "keytab": None, "rest_scheme": "http", "rest_port": 6066,
        "rest_endpoint": None,
    })  # fmt: skip

    class TI:
        def xcom_pull(self, task_ids: str) -> dict[str, str]:
            return {"ds": DS, "landing": str(tmp_path), "warehouse": str(tmp_path / "wh"), "config": ""}

    def run(code: str) -> None:
        monkeypatch.setenv("FAKE_EXIT", code)
        op = RocketMQSparkJobOperator(
            task_id="ingest", job="ingest", apps_dir=str(apps), package_dir=str(tmp_path / "dist"), needs_landing=True
        )
        op.execute({"ti": TI()})

    with pytest.raises(AirflowFailException, match="not retryable"):
        run("65")
    with pytest.raises(AirflowException) as caught:
        run("1")
    assert not isinstance(caught.value, AirflowFailException)
