"""The production line mix (benchmarks/topologies/production.yaml): Spring Boot hosts that print their banner and
framework lines, log their own work around every delivery and throw through a @Transactional service's proxy
(traces of 27 to 80 lines), beside plain 4.x workers and a 5.x client. The simulator writes those lines, and the
ingest reads them all: no normal line quarantined, one fingerprint per outage however deep its traces."""

from __future__ import annotations

import csv
import gzip
import pathlib
import re
from collections import defaultdict
from typing import Any

import pytest

from rocketmq_retry.contract import OUTAGE, partition_dir
from rocketmq_retry.errors import UserError
from rocketmq_retry.simulate.cli import main as simulate
from rocketmq_retry.simulate.scenario import load_scenario

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOPOLOGY = ROOT / "benchmarks" / "topologies" / "production.yaml"
SCENARIO = ROOT / "benchmarks" / "topologies" / "production-scenario.yaml"
DAY = "2026-11-20"
HEAD = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:")


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("production") / "landing"
    args = ["--date", DAY, "--out", str(out), "--config", str(TOPOLOGY), "--scenario", str(SCENARIO),
            "--messages", "400", "--noise", "0.01", "--seed", "3", "--quiet"]  # fmt: skip
    assert simulate(args) == 0
    return out


def _lines(landing: pathlib.Path, rel: str) -> list[str]:
    return (landing / rel).read_text(encoding="utf-8").splitlines()


def _traces(lines: list[str]) -> list[list[str]]:
    """The runs of lines without a head after each container failure line (the %wEx blank lines dropped)."""
    runs: list[list[str]] = []
    for i, line in enumerate(lines):
        if "consume message failed. messageId:" in line:
            run = []
            for nxt in lines[i + 1 :]:
                if HEAD.match(nxt):
                    break
                if nxt.strip():
                    run.append(nxt)
            runs.append(run)
    return runs


def test_the_production_keys_belong_to_spring_applications(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("groups:\n  GID_a: {topic: A, app_lines: 4}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"groups\.GID_a\.app_lines: only a rocketmq-spring application"):
        load_scenario(bad)
    bad.write_text("groups:\n  GID_a: {topic: A, app: spring, app_lines: 51}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"app_lines: expected an integer in 0\.\.50, got 51"):
        load_scenario(bad)
    bad.write_text("groups:\n  GID_a: {topic: A, app: spring, service_proxy: 'yes'}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"service_proxy: expected true or false, got 'yes'"):
        load_scenario(bad)


def test_a_console_capture_opens_with_the_banner_and_framework_lines(landing: pathlib.Path) -> None:
    stdout = _lines(landing, "default-order-service-01/logs/stdout.log")
    assert stdout[0] == ""
    assert stdout[1] == "  .   ____          _            __ _ _"
    assert stdout[7] == " :: Spring Boot ::                (v3.2.5)"
    assert stdout[8] == ""
    assert "c.e.o.OrderServiceApplication" in stdout[9] and ": Starting OrderServiceApplication" in stdout[9]
    assert any("o.a.c.c.C.[Tomcat].[localhost].[/]       : Initializing Spring embedded" in ln for ln in stdout)
    # the file appender of a Boot 2 application never sees what System.out prints; it rolled the start at midnight
    rolled = landing / "default-payment-service-01/logs/app.log.2026-11-19.0.gz"
    app_log = gzip.decompress(rolled.read_bytes()).decode("utf-8").splitlines()
    assert HEAD.match(app_log[0]) and "Spring Boot ::" not in "\n".join(app_log)
    assert any("o.s.b.w.embedded.tomcat.TomcatWebServer  : Tomcat started on port 8080" in ln for ln in app_log)


def test_listeners_log_their_work_and_throw_through_the_service_proxy(landing: pathlib.Path) -> None:
    stdout = _lines(landing, "default-order-service-01/logs/stdout.log")
    received = [ln for ln in stdout if "c.e.orderservice.OrderAuditListener      : received ORDER_CREATED msgId=" in ln]
    assert len(received) > 50
    traces = _traces(stdout)
    assert traces and all(any("OrderAuditService$$SpringCGLIB$$0.handle(<generated>)" in f for f in t) or
                          any("OrderNotifyService$$SpringCGLIB$$0.handle(<generated>)" in f for f in t)
                          for t in traces)  # fmt: skip
    # 27 lines for an exception thrown in the service, up to 80 with a driver's Caused by chain under it
    sizes = sorted(len(t) for t in traces)
    assert sizes[0] >= 27 and sizes[-1] <= 80 and sizes[-1] >= 50, sizes
    boot2 = _traces(_lines(landing, "default-payment-service-01/logs/app.log"))
    proxy = re.compile(r"PaymentSettleService\$\$EnhancerBySpringCGLIB\$\$[0-9a-f]{8}\.handle")
    assert boot2 and all(proxy.search("\n".join(t)) for t in boot2)


@pytest.fixture(scope="module")
def warehouse(spark: Any, landing: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    from rocketmq_retry.jobs.ingest import job as ingest

    wh = tmp_path_factory.mktemp("production-wh") / "wh"
    argv = ["--date", DAY, "--landing", str(landing), "--warehouse", str(wh), "--config", str(TOPOLOGY)]
    assert ingest.main(argv) == 0
    return wh


@pytest.mark.spark
def test_every_line_of_a_production_day_is_read(spark: Any, landing: pathlib.Path, warehouse: pathlib.Path) -> None:
    quarantined = spark.read.parquet(str(partition_dir(warehouse, "quarantine", DAY)))
    assert quarantined.select("source_file", "line_no", "reason").collect() == []
    # the banners (tests/test_ingest_startup_lines.py) are dated by the head line after them: the 19th here
    report = spark.read.parquet(str(partition_dir(warehouse, "ingest_report", DAY)))
    stdout = report.filter("source_file = 'default-order-service-01/logs/stdout.log'").first()
    assert stdout is not None and stdout["other_date"] >= 9
    # one outage, one fingerprint: the proxy's frames (a stable CGLIB name per service) do not split a cause
    with (landing / "_truth" / "lifecycles.csv").open(encoding="utf-8", newline="") as fh:
        outage = {r["msg_id"]: r["incident_id"] for r in csv.DictReader(fh) if r["true_kind"] == OUTAGE}
    events = spark.read.parquet(str(partition_dir(warehouse, "events", DAY)))
    prints: defaultdict[str, set[str]] = defaultdict(set)
    for e in events.filter("fingerprint IS NOT NULL").select("msg_id", "fingerprint").collect():
        if e["msg_id"] in outage:
            prints[outage[e["msg_id"]]].add(e["fingerprint"])
    assert prints and all(len(p) == 1 for p in prints.values()), prints
