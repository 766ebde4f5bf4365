"""Late files (docs/ingest.md "Late files"): re-running a date parses only the files that are new or changed since
its last commit and reuses the rows of the others; the four tables equal a full run's from scratch, row for row.

One tiny landing of three hosts' 4.x client logs (events, a stack trace, a binding, a quarantined line), a trace
file and a damaged ``.gz``, changed step by step; after each step the re-run is compared with a full run of the same
landing into an empty warehouse.
"""

from __future__ import annotations

import pathlib
import re
import shutil
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir

pytestmark = pytest.mark.spark

DS = "2026-11-21"
TABLES = ("events", "quarantine", "ingest_report", "bindings")
HEAD = "2026-11-21 10:00:{sec:02d},000 {level} RocketmqClient - "
LC2 = (
    "consumeMessage return null, Group: GID_a Msgs: [MessageExt [brokerName=b, queueId=0, msgId=0A, "
    "reconsumeTimes=0, toString()=Message{{topic='T', flag=0, properties={{UNIQ_KEY=U{n}, KEYS=K{n}}}, "
    "body=[104, 105], transactionId='null'}}]] MQ: MessageQueue [topic=T, brokerName=b, queueId=0]"
)
LC1 = (
    "consumeMessage exception: java.lang.IllegalStateException: Order {n} not found, Group: GID_a Msgs: "
    "[MessageExt [brokerName=b, queueId=0, msgId=0B, reconsumeTimes=1, toString()=Message{{topic='T', flag=0, "
    "properties={{UNIQ_KEY=V{n}}}, body=[104], transactionId='null'}}]] MQ: MessageQueue [topic=T, brokerName=b, "
    "queueId=0]"
)
PERSIST = (
    "[persistAll] Group: GID_a ClientId: 10.0.1.5@4242#123 updateConsumeOffsetToBroker "
    "MessageQueue [topic=T, brokerName=b, queueId=0] 17"
)
P, S = "\u0001", "\u0002"
SOURCES = [
    {"format": "rocketmq-client-4x", "path": "**/rocketmq_client*", "timezone": "UTC"},
    {"format": "trace", "path": "**/*.trace*"},
]


def client_log(n: int) -> list[str]:
    """A host's day: a binding, two failures (one with its stack trace), a quarantined line."""
    return [
        HEAD.format(sec=1, level="INFO") + PERSIST,
        HEAD.format(sec=2, level="WARN") + LC2.format(n=n),
        HEAD.format(sec=3, level="WARN") + LC1.format(n=n),
        "java.lang.IllegalStateException: Order 1 not found",
        "\tat com.acme.orders.Listener.consume(Listener.java:42)",
        "\tat org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run(X.java:1)",
        "",
        "\x07 not a log line",
        HEAD.format(sec=4, level="INFO") + "client started",
    ]


def trace_line(*msg_ids: str) -> str:
    pub = ["Pub", "1795303505730", "R", "PID_p", "T", "{}", "tag", "K", "127.0.0.1:10911", "1", "2", "0", "OFF", "true"]
    return "".join(P.join(pub).replace("{}", m) + S for m in msg_ids)


def write(path: pathlib.Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def config(**extra: Any) -> Any:
    return parse_config({"timezone": "UTC", "sources": SOURCES, **extra})


def rows(spark: Any, wh: pathlib.Path, table: str) -> list[dict[str, Any]]:
    """The table's rows in a fixed order (maps as sorted items): two tables are equal row for row when == holds."""

    def plain(v: Any) -> Any:
        return tuple(sorted(v.items())) if isinstance(v, dict) else v

    df = spark.read.parquet(str(partition_dir(wh, table, DS)))
    return sorted(({k: plain(v) for k, v in r.asDict().items()} for r in df.collect()), key=repr)


class Day:
    """A landing and the warehouse re-run over it, each re-run checked against a full run from scratch."""

    def __init__(self, spark: Any, root: pathlib.Path) -> None:
        self.spark, self.root = spark, root
        self.landing = root / "landing"
        self.wh = root / "wh"
        self.fresh = 0

    def run(self, cfg: Any = None, reuse: bool = True) -> Any:
        from rocketmq_retry.jobs.ingest.job import run_ingest

        return run_ingest(self.spark, cfg or config(), DS, str(self.landing), str(self.wh), reuse=reuse)

    def full(self, cfg: Any = None) -> pathlib.Path:
        from rocketmq_retry.jobs.ingest.job import run_ingest

        self.fresh += 1
        wh = self.root / f"full-{self.fresh}"
        run_ingest(self.spark, cfg or config(), DS, str(self.landing), str(wh))
        return wh

    def assert_equal_to_full(self, cfg: Any = None) -> dict[str, list[dict[str, Any]]]:
        full = self.full(cfg)
        mine = {t: rows(self.spark, self.wh, t) for t in TABLES}
        for t in TABLES:
            theirs = rows(self.spark, full, t)
            assert mine[t] == theirs, f"{t} differs from a full run"
            schema = self.spark.read.parquet(str(partition_dir(self.wh, t, DS))).schema
            assert schema == self.spark.read.parquet(str(partition_dir(full, t, DS))).schema, t
        return mine


@pytest.fixture(scope="module")
def day(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Day:
    d = Day(spark, tmp_path_factory.mktemp("late"))
    write(d.landing / "host-a" / "rocketmq_client.log", client_log(1))
    write(d.landing / "host-c" / "rocketmq_client.log", client_log(3))
    write(d.landing / "traces" / "a.trace", [trace_line("P1", "P2")])
    (d.landing / "host-c" / "rocketmq_client.log.1.gz").write_bytes(b"not gzip at all\n")
    first = d.run()
    assert (first.files_parsed, first.files_reused, first.files_removed) == (4, 0, 0)
    assert first.plan == "0 file(s) reused, 4 parsed (4 no reusable last run)"
    return d


def files_of(tables: dict[str, list[dict[str, Any]]], table: str) -> set[str]:
    return {r["source_file"] for r in tables[table]}


def test_late_file_is_the_only_one_parsed(day: Day) -> None:
    write(day.landing / "host-b" / "rocketmq_client.log", client_log(2))
    result = day.run()
    assert (result.files_parsed, result.files_reused, result.files_removed) == (1, 4, 0)
    assert result.plan == "4 file(s) reused, 1 parsed (1 new)"
    tables = day.assert_equal_to_full()
    assert "host-b/rocketmq_client.log" in files_of(tables, "events")
    assert "host-b/rocketmq_client.log" in files_of(tables, "bindings")
    # the damaged file's whole-file quarantine row was reused, not dropped
    assert any(
        r["source_file"] == "host-c/rocketmq_client.log.1.gz" and r["reason"] == "not a gzip file"
        for r in tables["quarantine"]
    )
    assert result.files_quarantined == 1


def test_nothing_changed_writes_nothing(day: Day) -> None:
    before = {t: rows(day.spark, day.wh, t) for t in TABLES}
    result = day.run()
    assert result.run_id is None
    assert (result.files_parsed, result.files_reused) == (0, 5)
    assert {t: rows(day.spark, day.wh, t) for t in TABLES} == before


def test_changed_file_is_parsed_again(day: Day) -> None:
    # the collector fetched host-a's log again after it grew
    write(
        day.landing / "host-a" / "rocketmq_client.log",
        [*client_log(1), HEAD.format(sec=9, level="WARN") + LC2.format(n=9)],
    )
    result = day.run()
    assert (result.files_parsed, result.files_reused) == (1, 4)
    assert result.plan == "4 file(s) reused, 1 parsed (1 changed)"
    tables = day.assert_equal_to_full()
    assert any(r["source_file"] == "host-a/rocketmq_client.log" and r["msg_id"] == "U9" for r in tables["events"])


def test_deleted_file_rows_are_gone(day: Day) -> None:
    (day.landing / "traces" / "a.trace").unlink()
    result = day.run()
    assert (result.files_parsed, result.files_reused, result.files_removed) == (0, 4, 1)
    tables = day.assert_equal_to_full()
    for t in TABLES:
        assert "traces/a.trace" not in files_of(tables, t), t


def test_same_content_twice_is_parsed_with_its_copy(day: Day) -> None:
    # a copy of host-a's log in its backup folder: the two share event ids, so both are de-duplicated together
    shutil.copy(day.landing / "host-a" / "rocketmq_client.log", day.landing / "host-a" / "rocketmq_client.log.bak")
    result = day.run()
    assert (result.files_parsed, result.files_reused) == (2, 3)
    assert "1 same first line as another file" in result.plan
    tables = day.assert_equal_to_full()
    bak = next(r for r in tables["ingest_report"] if r["source_file"] == "host-a/rocketmq_client.log.bak")
    assert bak["duplicate_events"] == 3 and bak["duplicate_of"] == ["host-a/rocketmq_client.log"]
    # the copy removed again: the original, de-duplicated with it last time, is parsed again too
    (day.landing / "host-a" / "rocketmq_client.log.bak").unlink()
    result = day.run()
    assert (result.files_parsed, result.files_reused, result.files_removed) == (1, 3, 1)
    day.assert_equal_to_full()


def test_config_change_parses_every_file(day: Day) -> None:
    cfg = config(causes={"framework_packages": ["java.", "org.apache.rocketmq.", "com.acme.orders."]})
    result = day.run(cfg)
    assert (result.files_parsed, result.files_reused) == (4, 0)
    assert result.plan == "0 file(s) reused, 4 parsed (4 config or parser changed)"
    tables = day.assert_equal_to_full(cfg)
    # the app frame moved past the listener, now a framework package
    assert {r["app_frame"] for r in tables["events"] if r["exception_class"]} == {None}
    forced = day.run(cfg, reuse=False)
    assert forced.plan == "0 file(s) reused, 4 parsed (4 --reparse)"


def test_the_job_reads_only_the_hashed_config() -> None:
    """Every config value the ingest modules read is in the manifest's key, except the Spark settings (how, not
    what) and the catch-up's look-back (which dates, not which rows)."""
    from rocketmq_retry.jobs.ingest import incremental

    src = pathlib.Path(incremental.__file__).parent
    used = {
        m for f in src.glob("*.py") for m in re.findall(r"\bconfig\.([a-z_]+(?:\.[a-z_]+)?)(?![\w(])", f.read_text())
    }
    hashed = set(incremental.CONFIG_KEYS)
    allowed = {"spark", "attribution.lookback_days"}
    unhashed = {u for u in used if not any(u == k or u.startswith(k + ".") for k in hashed | allowed)}
    assert not unhashed, f"ingest reads config values the late-file manifest does not hash: {sorted(unhashed)}"


def test_parser_key_is_the_same_from_the_zip_spark_submit_ships(tmp_path: pathlib.Path) -> None:
    """spark-submit imports the package from a zip (``--py-files``): the code part of the key must read the modules
    there too, and give the same key as the installed package (a run from either reuses the other's rows)."""
    import subprocess
    import sys
    import zipfile

    from rocketmq_retry.jobs.ingest import incremental

    package = pathlib.Path(incremental.__file__).resolve().parents[2]
    archive = tmp_path / "package.zip"  # the --py-files archive (its name is not a module)
    with zipfile.ZipFile(archive, "w") as zf:
        for f in package.rglob("*.py"):
            zf.write(f, f.relative_to(package.parent).as_posix())
    code = (
        f"import sys; sys.path.insert(0, {str(archive)!r}); from rocketmq_retry.jobs.ingest import incremental as i; "
        "assert '.zip' in i.__file__, i.__file__; print(i._code_digest())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == incremental._code_digest()
