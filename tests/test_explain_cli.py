"""``rocketmq-retry explain`` through the top-level dispatcher, on the literal warehouse of tests/explore_literal.py:
the text a person reads (hops, evidence file:line, dead letter, compensation), the JSON a script reads, and the
one-line errors (exit 2) naming what was searched."""

from __future__ import annotations

import json
import pathlib

import pytest

import explore_literal as L
from rocketmq_retry.cli import main as rocketmq_retry


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    return L.build(tmp_path_factory.mktemp("explain"))


def run(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path], *argv: str) -> tuple[int, str, str]:
    where = ["--warehouse", str(built["warehouse"]), "--config", str(built["config"])]
    code = rocketmq_retry(["explain", *argv, *where])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_story(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]) -> None:
    code, out, err = run(capsys, built, "M1", "--group", "G1")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "msg_id M1, consumer group G1 (date 2026-11-20)"
    assert "  final state           DEAD_LETTERED (the engine expects DEAD_LETTERED)" in lines
    start = lines.index("hops (UTC; * = inferred: not seen in the logs, the engine proves it happened):")
    hops = [line.split() for line in lines[start + 2 : start + 11]]
    assert [h[0] for h in hops] == ["0", "1", "2*", "3", "4", "5", "6", "7*", "8"]
    assert hops[3] == ["3", "SENT_BACK", "->", "SCHEDULED", "SCHEDULE_TOPIC_XXXX", "q2", "3", "1", "2026-11-20",
                       "01:00:00.060", "2026-11-20", "01:00:00.050", "+10ms"]  # fmt: skip
    assert hops[5][-1] == "+2.44s" and hops[8][-1] == "+100ms" and hops[2][-1] == "-"
    start = lines.index("evidence lines:")
    evidence = [line.split() for line in lines[start + 1 : start + 7]]
    assert [e[3] for e in evidence] == [
        "trace/t.trace:3",
        "app1/logs/rocketmq_client.log:17",
        "dumps/schedule.jsonl:1",
        "dumps/retry.jsonl:1",
        "trace/t.trace:9",
        "broker-a/logs/broker.log:42",
    ]
    assert evidence[4][-2:] == ["5,", "6"]  # one line behind two hops
    assert "  final: DEAD_LETTERED in %DLQ%G1 after 3 deliveries, 40s of retry delays" in lines
    assert "dead letter: %DLQ%G1 at 2026-11-20 01:00:12.700, reconsume times 2, compensable" in lines
    assert any(
        line.startswith("compensation: DONE after 2 attempt(s), handler log-only, last attempt ") for line in lines
    )
    assert "  result: logged" in lines


def test_two_groups_two_stories(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]) -> None:
    code, out, _ = run(capsys, built, "M1", "--date", L.D1)
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("msg_id ")]
    assert heads == ["msg_id M1, consumer group G1 (date 2026-11-20)", "msg_id M1, consumer group G2 (date 2026-11-20)"]


def test_json_story(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]) -> None:
    code, out, _ = run(capsys, built, "M1", "--format", "json", "--from", L.D1, "--to", L.D2)
    assert code == 0
    stories = json.loads(out)
    assert [(s["consumer_group"], s["final_state"]) for s in stories] == [("G1", "DEAD_LETTERED"), ("G2", "CONSUMED")]
    g1 = stories[0]
    assert [h["to_state"] for h in g1["hops"]][-1] == "DEAD_LETTERED"
    assert g1["hops"][4]["drift_ms"] == 1940 and g1["hops"][4]["expected_at"] == "2026-11-20T01:00:10.060000Z"
    assert g1["evidence"][1] == {
        "event_id": "e2", "event_time": "2026-11-20T01:00:00.050000Z",
        "event_type": "CONSUME_FAILED", "source": "rocketmq-client-4x",
        "source_file": "app1/logs/rocketmq_client.log", "line_no": 17, "topic": None, "reconsume_times": None,
        "delay_level": None, "thread": "ConsumeMessageThread_G1_1", "client_host": None, "broker": None,
        "detail": None, "date": "2026-11-20",
    }  # fmt: skip
    assert g1["dead_letter"]["compensation_state"] == "DONE" and g1["compensation"]["attempts"] == 2
    assert g1["expected_path"]["final"] == "DEAD_LETTERED" and stories[1]["dead_letter"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["M404"], "msg_id 'M404' not found in lifecycles of every date under "),
        (["M1", "--group", "G9"], "msg_id 'M1' not found for group 'G9' in lifecycles of every date"),
        (["M1", "--date", "2026-12-01"], "no reconstructed dates (date 2026-12-01) under "),
        (["M1", "--date", L.D1, "--from", L.D1], "use --date or --from/--to, not both"),
        (["M1", "--from", L.D2, "--to", L.D1], "date range 2026-11-21..2026-11-20 is empty"),
    ],
)
def test_errors_exit_2_naming_the_search(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, built, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("rocketmq-retry explain: ") and message in err and err.count("\n") == 1


def test_bad_date_and_missing_warehouse(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    with pytest.raises(SystemExit) as exc:
        rocketmq_retry(["explain", "M1", "--date", "../../etc"])
    assert exc.value.code == 2 and "is not a date" in capsys.readouterr().err
    assert rocketmq_retry(["explain", "M1", "--warehouse", str(tmp_path / "none")]) == 2
    assert f"no warehouse at {tmp_path / 'none'}" in capsys.readouterr().err
