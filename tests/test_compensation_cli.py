"""``rocketmq-retry compensate`` and ``rocketmq-retry compensation list|show|retry|migrate``, through the
top-level dispatcher as a user runs them."""

from __future__ import annotations

import json
import pathlib

import pytest

from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.contract import partition_dir
from test_compensation_support import EffectServer, dead_letter_rows, write_config, write_partition

DATE = "2026-11-20"


@pytest.fixture
def warehouse(tmp_path: pathlib.Path) -> pathlib.Path:
    wh = tmp_path / "wh"
    write_partition(wh, DATE, dead_letter_rows(12, DATE, groups=("order-consumer", "pay-consumer", "audit-consumer")))
    return wh


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = rocketmq_retry(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compensate_twice_executes_once(warehouse: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compensate", "--date", DATE, "--warehouse", str(warehouse))
    assert code == 0
    assert "12 dead letters; executed 12 (done 12, failed 0, gave up 0)" in out
    assert "handler log-only: done 12" in out
    assert "  reasons: ok 12" in out.splitlines()
    code, out, _ = run(capsys, "compensate", "--date", DATE, "--warehouse", str(warehouse), "--format", "json")
    assert code == 0
    summary = json.loads(out)
    assert (summary["executed"], summary["already_done"]) == (0, 12)
    code, out, _ = run(capsys, "compensation", "list", "--warehouse", str(warehouse), "--limit", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["dlq_date", "consumer_group", "msg_id", "state", "reason", "loops"]
    assert len(lines) == 5 and lines[-2:] == ["2 row(s) shown; ledger: 12 (DONE 12)", "by reason: ok 12"]
    code, out, _ = run(
        capsys, "compensation", "list", "--warehouse", str(warehouse), "--format", "json", "--date", DATE
    )
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 12 and {r["state"] for r in rows} == {"DONE"}
    assert {r["result"] for r in rows} == {"logged"} and all(r["completed_at"] for r in rows)


def test_http_failures_then_operator_retry(
    warehouse: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with EffectServer(status=201) as server:
        config = write_config(
            tmp_path / "c.yaml",
            {
                "business_key": {"from": "body", "json_path": "$.orderId"},
                "routes": [
                    {"topic": "orders", "group": "order-consumer", "handler": "refund-api"},
                    {"topic": "payments", "handler": "tickets"},
                ],
                "handlers": {
                    "refund-api": {"type": "http", "url": server.url, "rate_per_second": 200},
                    "tickets": {"type": "sql", "url": f"sqlite:///{tmp_path}/tickets.db", "table": "dlq_tickets"},
                },
            },
        )
        server.status = 422  # the refund API rejects everything: permanent, GAVE_UP at once
        code, out, _ = run(capsys, "compensate", "--date", DATE, "--warehouse", str(warehouse), "--config", str(config))
        assert code == 1
        assert "executed 8 (done 4, failed 0, gave up 4), skipped 4" in out
        assert server.total == 4

        code, out, _ = run(
            capsys, "compensation", "list", "--warehouse", str(warehouse), "--config", str(config), "--state", "GAVE_UP"
        )
        assert "4 row(s) shown" in out and "HTTP 422" in out
        msg_id = dead_letter_rows(1, DATE)[0]["msg_id"]
        code, out, _ = run(
            capsys, "compensation", "show", msg_id, "--warehouse", str(warehouse), "--config", str(config)
        )
        assert code == 0
        fields = dict(line.split(None, 1) for line in out.splitlines())
        assert fields["state"] == "GAVE_UP" and fields["handler"] == "refund-api"
        assert fields["business_key"] == "O100000" and fields["last_error"].startswith("HTTP 422")

        # The API is fixed; the operator re-drives the date's GAVE_UP rows, then one DONE row by id.
        server.status = 201
        code, out, _ = run(
            capsys,
            "compensation",
            "retry",
            "--date",
            DATE,
            "--state",
            "GAVE_UP",
            "--warehouse",
            str(warehouse),
            "--config",
            str(config),
        )
        assert code == 0, out
        assert "re-drove 4 dead letter(s)" in out and "executed 4 (done 4" in out
        assert server.total == 8 and len(server.accepted) == 4
        done_id = dead_letter_rows(2, DATE)[1]["msg_id"]  # pay-consumer -> tickets, DONE already
        code, out, _ = run(
            capsys, "compensation", "retry", done_id, "--warehouse", str(warehouse), "--config", str(config)
        )
        assert code == 0 and "already DONE, not re-driven" in out and "executed 0" in out
        code, out, _ = run(
            capsys, "compensation", "show", msg_id, "--warehouse", str(warehouse), "--config", str(config)
        )
        fields = dict(line.split(None, 1) for line in out.splitlines())
        assert (fields["state"], fields["redrives"], fields["attempts"]) == ("DONE", "1", "1")
    assert server.total == 8


def test_operator_errors_are_one_line(warehouse: pathlib.Path, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "compensation", "list")
    assert code == 2 and err.strip().endswith("pass --warehouse (or set ledger_url)")
    code, _, err = run(capsys, "compensate", "--date", "2026-11-19", "--warehouse", str(warehouse))
    assert code == 3 and "no dead_letters partition" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "compensation", "show", "nope", "--warehouse", str(warehouse))
    assert code == 2 and f"no compensation ledger at {warehouse}/compensation.db" in err  # looking creates none
    assert not (warehouse / "compensation.db").exists()
    assert run(capsys, "compensation", "migrate", "--warehouse", str(warehouse))[0] == 0
    code, _, err = run(capsys, "compensation", "show", "nope", "--warehouse", str(warehouse))
    assert code == 2 and "'nope' is not in the ledger" in err
    code, _, err = run(capsys, "compensation", "retry", "--warehouse", str(warehouse))
    assert code == 2 and "name MSG_IDs" in err
    code, _, err = run(capsys, "compensate", "--date", "2026-13-01", "--warehouse", str(warehouse))
    assert code == 2 and "does not exist" in err


def test_migrate_reports_revisions(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    code, out, _ = run(capsys, "compensation", "migrate", "--ledger-url", url)
    assert code == 0 and out.strip().endswith("revision none -> 0003")
    code, out, _ = run(capsys, "compensation", "migrate", "--ledger-url", url)
    assert out.strip().endswith("revision 0003 -> 0003")


def test_dead_letters_held_for_review_never_reach_a_handler(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dead letter the reconstruction did not mark compensable is listed for review, not registered or executed."""
    wh = tmp_path / "wh"
    rows = dead_letter_rows(3, DATE)
    held = "DLQ inferred, but the failure of the last delivery was not observed"
    rows[1].update(compensable=False, review_reason=held)
    write_partition(wh, DATE, rows)
    code, out, _ = run(capsys, "compensate", "--date", DATE, "--warehouse", str(wh))
    assert code == 0
    assert "2 dead letters; executed 2 (done 2" in out
    assert f"note: 1 dead letter(s) of {DATE} held for review, not compensated" in out
    code, out, _ = run(capsys, "compensation", "list", "--warehouse", str(wh), "--format", "json")
    assert sorted(json.loads(line)["msg_id"] for line in out.splitlines()) == [rows[0]["msg_id"], rows[2]["msg_id"]]
    code, out, _ = run(capsys, "compensation", "review", "--date", DATE, "--warehouse", str(wh))
    assert code == 0
    assert out.splitlines() == [
        f"1 dead letter(s) of {DATE} held for review (not compensated):",
        f"  order-consumer  {rows[1]['msg_id']}  orders  {held}",
    ]
    code, out, _ = run(capsys, "compensation", "review", "--date", DATE, "--warehouse", str(wh), "--format", "json")
    [item] = json.loads(out)
    assert (item["msg_id"], item["review_reason"]) == (rows[1]["msg_id"], held)


def test_dead_letters_written_before_compensation_safety_are_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = partition_dir(tmp_path / "wh", "dead_letters", DATE)
    path.mkdir(parents=True)
    pq.write_table(pa.table({"consumer_group": ["g"], "msg_id": ["m"]}), path / "part-0.parquet")
    code, _, err = run(capsys, "compensate", "--date", DATE, "--warehouse", str(tmp_path / "wh"))
    assert code == 3 and "has no column compensable; re-run `rocketmq-retry reconstruct" in err


def test_a_receiver_throttling_with_429_leaves_the_row_failed_not_gave_up(
    warehouse: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with EffectServer(status=429, reply_headers={n: {"Retry-After": "0"} for n in range(1, 4)}) as server:
        handler = {"type": "http", "url": server.url, "max_tries": 2, "backoff_seconds": 0, "timeout_seconds": 2}
        config = write_config(tmp_path / "c.yaml", {"routes": [{"handler": "api"}], "handlers": {"api": handler}})
        code, out, _ = run(capsys, "compensate", "--date", DATE, "--warehouse", str(warehouse), "--config", str(config))
    assert code == 1 and server.total == 24  # 12 dead letters, 2 tries each
    assert "executed 12 (done 0, failed 12, gave up 0)" in out
    code, out, _ = run(capsys, "compensation", "list", "--warehouse", str(warehouse), "--config", str(config))
    assert out.splitlines()[-2:] == ["12 row(s) shown; ledger: 12 (FAILED 12)", "by reason: http_429 12"]


def test_url_credentials_appear_nowhere(
    warehouse: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handler URL with userinfo, a receiver failing (and echoing what it got): not the ledger, not the logs,
    not the command output shows the password."""
    import logging

    from rocketmq_retry.compensation.ledger import Ledger

    caplog.set_level(logging.DEBUG)
    with EffectServer(status=500, echo=True) as server:
        url = f"http://user:secret@127.0.0.1:{server.port}/x"
        handler = {"type": "http", "url": url, "max_tries": 2, "backoff_seconds": 0, "timeout_seconds": 2}
        config = write_config(tmp_path / "c.yaml", {"routes": [{"handler": "api"}], "handlers": {"api": handler}})
        outputs = []
        for argv in (
            ["compensate", "--date", DATE, "--warehouse", str(warehouse), "--config", str(config), "-v"],
            ["compensate", "--date", DATE, "--warehouse", str(warehouse), "--config", str(config), "--format", "json"],
            ["compensation", "list", "--warehouse", str(warehouse), "--config", str(config)],
            ["compensation", "list", "--warehouse", str(warehouse), "--config", str(config), "--format", "json"],
            ["compensation", "show", dead_letter_rows(1, DATE)[0]["msg_id"], "--warehouse", str(warehouse)],
        ):
            _code, out, err = run(capsys, *argv)
            outputs.append(out + err)
    # two compensate runs, 12 dead letters, 2 tries each; the credentials still authenticated every call
    assert server.total == 48 and all("Basic " in h["Authorization"] for h in server.headers)
    assert "HTTP 500 from http://127.0.0.1" in outputs[3]  # the error is there, without the userinfo
    with Ledger.open(f"sqlite:///{warehouse}/compensation.db") as ledger:
        rows = ledger.rows()
    assert len(rows) == 12 and {r.state.value for r in rows} == {"FAILED"}
    stored = json.dumps([r.as_dict() for r in rows])
    for text in (*outputs, caplog.text, stored):
        assert "secret" not in text
        assert "dXNlcjpzZWNyZXQ" not in text  # base64 of user:secret, as the echoed Authorization carries it
