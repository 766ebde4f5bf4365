"""The real RocketMQ 5.2.0 proxy sample (tests/data/rocketmq-5.2.0-proxy): Python SDK clients behind a gRPC proxy.

Issue 31's done-when: with every source, the lifecycles, their final states and delivery counts and the dead
letters equal the sample's ground truth, and every line is accounted for; with the clients' logs and the topic
dumps withheld, every dead letter is still found from the broker's lines, and the lifecycles whose deliveries no
collected source records keep an empty count (never a guessed one) that the run summary names.
"""

from __future__ import annotations

import csv
import pathlib
from typing import Any

import pytest

from rocketmq_retry.contract import partition_dir

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "rocketmq-5.2.0-proxy"
CONFIG = ROOT / "tests" / "data" / "samples-5.2.0-proxy.yaml"
DATE = "2026-11-27"
STATE = {"CONSUMED": "CONSUMED", "DLQ": "DEAD_LETTERED", "IN_RETRY_AT_END_OF_OBSERVATION": "IN_RETRY"}
# The FIFO consumer's local retry of a listener that returned FAILURE once: the SDK logs nothing for it (§5.7), it
# makes no broker copy and no proxy call, so no file of the estate records its second delivery.
UNRECORDED = {("GID_fifo_state_machine", "01C31BD72CF06C63030B1B41D60000001A"): ("CONSUMED", 1)}


def truth() -> dict[tuple[str, str], dict[str, Any]]:
    with (SAMPLE / "ground-truth.csv").open(newline="") as fh:
        return {
            (r["consumer_group"], r["msgId_uniqKey"]): {
                "state": STATE[r["final_state"]],
                "deliveries": int(r["deliveries_observed"]),
                "topic": r["topic"],
                "scenario": r["scenario"],
            }
            for r in csv.DictReader(fh)
        }


def _run(spark: Any, tmp: pathlib.Path, withhold: tuple[str, ...] = ()) -> pathlib.Path:
    """Ingest and reconstruct the sample with the config's sources minus those whose format is in ``withhold``."""
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.reconstruct import job as reconstruct

    lines = CONFIG.read_text().splitlines(keepends=True)
    cfg = tmp / "sample.yaml"
    cfg.write_text("".join(x for x in lines if not any(f"format: {fmt}," in x for fmt in withhold)))
    wh = tmp / "wh"
    args = ["--date", DATE, "--warehouse", str(wh), "--config", str(cfg)]
    assert ingest.main([*args, "--landing", str(SAMPLE)]) == 0
    assert reconstruct.main(args) == 0
    return wh


def _rows(spark: Any, wh: pathlib.Path, table: str) -> list[Any]:
    return spark.read.parquet(str(partition_dir(wh, table, DATE))).collect()


@pytest.fixture(scope="module")
def every_source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return _run(spark, tmp_path_factory.mktemp("proxy-all"))


@pytest.mark.spark
def test_every_source_gives_the_ground_truth(spark: Any, every_source: pathlib.Path) -> None:
    want = truth()
    assert len(want) == 68
    got = {
        (r["consumer_group"], r["msg_id"]): (r["final_state"], r["deliveries"], r["original_topic"])
        for r in _rows(spark, every_source, "lifecycles")
    }
    assert set(got) == set(want)
    assert {k: v[0] for k, v in got.items()} == {k: v["state"] for k, v in want.items()}
    assert {k: v[2] for k, v in got.items()} == {k: v["topic"] for k, v in want.items()}
    wrong = {k: got[k][:2] for k, v in want.items() if got[k][1] != v["deliveries"]}
    assert wrong == UNRECORDED
    dead = {(r["consumer_group"], r["msg_id"]): r["original_topic"] for r in _rows(spark, every_source, "dead_letters")}
    assert dead == {k: v["topic"] for k, v in want.items() if v["state"] == "DEAD_LETTERED"}
    assert len(dead) == 15


@pytest.mark.spark
def test_every_line_of_the_sample_is_accounted_for(spark: Any, every_source: pathlib.Path) -> None:
    report = _rows(spark, every_source, "ingest_report")
    assert len(report) == 17  # 5 Python client logs, 8 proxy/broker files, 4 dumps
    for r in report:
        parts = r["events"] + r["ignored"] + r["continuation"] + r["quarantined"] + r["other_date"]
        assert parts == r["lines_read"], r["source_file"]
    assert sum(r["quarantined"] for r in report) == 0
    # the Python SDK's listener lines name no group: ingest leaves it open, the reconstruction settles every one
    assert sum(r["unattributed_events"] for r in report) == 12
    assert _rows(spark, every_source, "unattributed") == []
    by_file = {r["source_file"]: r for r in report}
    assert by_file["push-inventory/logs/rocketmq_python/rocketmq_client.log"]["events"] == 12
    assert by_file["fifo-state/logs/rocketmq_python/rocketmq_client.log"]["events"] == 1
    assert by_file["proxy-a/logs/rocketmqlogs/proxy.log"]["quarantined"] == 0


@pytest.mark.spark
def test_python_listener_failures_are_attributed_and_give_their_cause(spark: Any, every_source: pathlib.Path) -> None:
    from rocketmq_retry.contract import EventType

    events = [r for r in _rows(spark, every_source, "events") if r["source"] == "rocketmq-python-client"]
    failed = [r for r in events if r["event_type"] == EventType.CONSUME_FAILED]
    # P_THROW: 3 messages x 4 deliveries, each raising RuntimeError("downstream unavailable for key=…")
    assert len(failed) == 12
    # the line names no group (and ORDER_EVENTS has two gRPC groups): the instance's own SDK lines bind it
    assert {(r["consumer_group"], r["instance"]) for r in failed} == {(None, "push-inventory")}
    assert {r["exception_message"].rsplit("=", 1)[0] for r in failed} == {"downstream unavailable for key"}
    assert {r["exception_class"] for r in failed} == {None}  # the SDK logs str(e): no class, no trace
    assert len({r["fingerprint"] for r in failed}) == 1  # the keys differ only in their digits
    (dlq,) = [r for r in events if r["event_type"] == EventType.DEAD_LETTERED]
    assert (dlq["consumer_group"], dlq["msg_id"], dlq["topic"]) == (
        "GID_fifo_state_machine",
        "01C31BD72CF06C63030B1B41D500000014",
        "ORDER_STATUS_FIFO",
    )
    fails = [r for r in _rows(spark, every_source, "failures") if r["consumer_group"] == "GID_push_inventory"]
    thrown = [r for r in fails if r["cause"] == failed[0]["fingerprint"]]
    assert len(thrown) == 12
    assert {r["event_id"] for r in thrown} == {r["event_id"] for r in failed}
    assert {r["cause_evidence"] for r in thrown} == {"exception-message"}
    p_throw = {k for k, v in truth().items() if v["scenario"] == "P_THROW"}
    life = {(r["consumer_group"], r["msg_id"]): r for r in _rows(spark, every_source, "lifecycles")}
    assert {tuple(life[k]["attribution"]) for k in p_throw} == {("client-log", "line")}  # + the DLQ line


@pytest.mark.spark
def test_from_the_broker_alone_every_dead_letter_and_no_guessed_delivery(
    spark: Any, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wh = _run(spark, tmp_path, withhold=("rocketmq-python-client", "message-dump"))
    want = {k: v for k, v in truth().items() if v["state"] == "DEAD_LETTERED"}
    dead = {(r["consumer_group"], r["msg_id"]): r["original_topic"] for r in _rows(spark, wh, "dead_letters")}
    assert dead == {k: v["topic"] for k, v in want.items()}
    life = {(r["consumer_group"], r["msg_id"]): r for r in _rows(spark, wh, "lifecycles")}
    assert set(life) == set(want)
    assert {r["final_state"] for r in life.values()} == {"DEAD_LETTERED"}
    assert {r["deliveries"] for r in life.values()} == {None}
    out = capsys.readouterr().out
    assert "deliveries not established: 15 lifecycles {'DEAD_LETTERED': 15}" in out
