"""Outcome reasons: every recorded outcome carries a normalised reason decided from what the handler raised or
the HTTP status it got (never from the error text), on a real SQLite file and the real local PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import socket
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.compensation.database import create_ledger_engine, upgrade
from rocketmq_retry.compensation.handlers import HttpHandler
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import (
    DeadLetter,
    PermanentFailure,
    Reason,
    RetryableFailure,
    exception_reason,
    normalise_reason,
)
from rocketmq_retry.compensation.schema import TABLE_NAME
from rocketmq_retry.config import HandlerConfig
from test_compensation_support import EffectServer, dead_letter_rows, pg_schema_url, write_config, write_partition

DATE = "2026-11-20"
LETTER = DeadLetter("order-consumer", "7F00000100002A9F0000000000000001", DATE, "orders", business_key="O1")


def closed_port() -> int:
    """A port nothing listens on (bound, then released: the kernel answers RST, i.e. ECONNREFUSED)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(url: str, timeout: float = 2) -> HttpHandler:
    return HttpHandler("api", HandlerConfig(type="http", url=url, timeout_seconds=timeout), max_tries=1)


@pytest.mark.parametrize(
    ("status", "kind", "reason"),
    [
        (404, PermanentFailure, "http_4xx"),
        (400, PermanentFailure, "http_4xx"),
        (429, RetryableFailure, "http_429"),
        (408, RetryableFailure, "http_408"),
        (503, RetryableFailure, "http_5xx"),
        (500, RetryableFailure, "http_5xx"),
    ],
)
def test_http_failures_carry_the_reason_of_their_status(status: int, kind: type, reason: str) -> None:
    with EffectServer(status=status) as server:
        handler = http(server.url)
        with pytest.raises(kind) as caught:
            handler(LETTER)
        handler.close()
    assert exception_reason(caught.value) == reason


def test_http_timeout_and_refused_connection_are_told_apart_by_type() -> None:
    with EffectServer(status=201, delay=1.5) as server:
        handler = http(server.url, timeout=0.3)
        with pytest.raises(RetryableFailure) as slow:
            handler(LETTER)
        handler.close()
    handler = http(f"http://127.0.0.1:{closed_port()}/x")
    with pytest.raises(RetryableFailure) as refused:
        handler(LETTER)
    handler.close()
    assert (exception_reason(slow.value), exception_reason(refused.value)) == ("timeout", "connection_refused")
    # a name that does not resolve is a connection failure, but not a refusal
    handler = http("http://no-such-host.invalid/x")
    with pytest.raises(RetryableFailure) as unresolved:
        handler(LETTER)
    handler.close()
    assert exception_reason(unresolved.value) == "connection_error"


def test_an_exception_without_a_reason_is_named_by_its_class_and_reasons_stay_one_token() -> None:
    assert exception_reason(ValueError("amount = 'x'")) == "handler_exception:ValueError"
    assert exception_reason(PermanentFailure("gone")) == "handler_exception:PermanentFailure"
    assert exception_reason(PermanentFailure("no body", reason=Reason.BODY_MISSING)) == "body_missing"
    assert normalise_reason("my reason <script>") == "my_reason__script_"
    assert len(normalise_reason("x" * 500)) == 128


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = rocketmq_retry(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def test_a_day_with_failing_handlers_records_and_counts_each_reason(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = ("ok-consumer", "bug-consumer", "down-consumer", "gone-consumer", "off-consumer", "nobody-consumer")
    rows = dead_letter_rows(7, DATE, groups=(*groups, "unrouted-consumer"))
    rows[5]["body"] = None  # nobody-consumer: the logs carried no body
    wh = tmp_path / "wh"
    write_partition(wh, DATE, rows)
    refused = f"http://127.0.0.1:{closed_port()}/x"
    with EffectServer(status=503) as down, EffectServer(status=404) as gone:
        fast = {"max_tries": 1, "timeout_seconds": 2}
        config = write_config(
            tmp_path / "c.yaml",
            {
                "routes": [
                    {"group": "ok-consumer", "handler": "log-only"},
                    {"group": "bug-consumer", "handler": "buggy"},
                    {"group": "down-consumer", "handler": "down"},
                    {"group": "gone-consumer", "handler": "gone"},
                    {"group": "off-consumer", "handler": "off"},
                    {"group": "nobody-consumer", "handler": "body"},
                ],
                "handlers": {
                    "log-only": {"type": "python", "callable": "rocketmq_retry.compensation.handlers:log_only"},
                    "buggy": {"type": "python", "callable": "test_compensation_support:broken"},
                    "down": {"type": "http", "url": down.url, **fast},
                    "gone": {"type": "http", "url": gone.url, **fast},
                    "off": {"type": "http", "url": refused, **fast},
                    "body": {"type": "python", "callable": "test_compensation_support:needs_body"},
                },
            },
        )
        code, out = run(capsys, "compensate", "--date", DATE, "--warehouse", str(wh), "--config", str(config))
    assert code == 1
    assert (
        "  reasons: body_missing 1, connection_refused 1, handler_exception:ValueError 1, http_4xx 1, http_5xx 1, "
        "ok 1, route_missing 1"
    ) in out.splitlines()
    code, out = run(capsys, "compensation", "list", "--warehouse", str(wh), "--config", str(config), "--format", "json")
    got = {json.loads(line)["consumer_group"]: json.loads(line) for line in out.splitlines()}
    assert {g: (r["state"], r["reason"]) for g, r in got.items()} == {
        "ok-consumer": ("DONE", "ok"),
        "bug-consumer": ("FAILED", "handler_exception:ValueError"),
        "down-consumer": ("FAILED", "http_5xx"),
        "gone-consumer": ("GAVE_UP", "http_4xx"),
        "off-consumer": ("FAILED", "connection_refused"),
        "nobody-consumer": ("GAVE_UP", "body_missing"),
        "unrouted-consumer": ("SKIPPED", "route_missing"),
    }
    # the redacted text stays beside the reason
    assert got["bug-consumer"]["last_error"] == "ValueError: cannot parse amount of O100001"
    assert got["gone-consumer"]["last_error"].startswith("HTTP 404 from http://127.0.0.1:")
    code, out = run(capsys, "compensation", "list", "--warehouse", str(wh), "--config", str(config))
    assert out.splitlines()[-1] == (
        "by reason: body_missing 1, connection_refused 1, handler_exception:ValueError 1, http_4xx 1, http_5xx 1, "
        "ok 1, route_missing 1"
    )
    # an operator's re-drive says so in the reason, and the old reason stays readable in last_error
    code, out = run(
        capsys,
        "compensation",
        "retry",
        "--warehouse",
        str(wh),
        "--config",
        str(config),
        "--date",
        DATE,
        "--state",
        "GAVE_UP",
        "--no-run",
    )
    code, out = run(capsys, "compensation", "list", "--warehouse", str(wh), "--config", str(config), "--format", "json")
    again = {json.loads(line)["consumer_group"]: json.loads(line) for line in out.splitlines()}
    assert (again["gone-consumer"]["state"], again["gone-consumer"]["reason"]) == ("PENDING", "redriven")
    assert again["gone-consumer"]["last_error"].startswith(
        "re-driven by operator (was GAVE_UP after 1 attempts): HTTP 404"
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/ledger.db"
    else:
        with pg_schema_url() as url:
            yield url


def test_revision_0003_keeps_rows_and_admits_the_new_state_only(ledger_url: str) -> None:
    engine = create_ledger_engine(ledger_url)
    try:
        upgrade(engine, "0002")
        with engine.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {TABLE_NAME} (consumer_group, msg_id, state, attempts, handler, first_seen, "
                    "redrives) VALUES ('g', 'm1', 'FAILED', 1, 'api', :t, 0)"
                ),
                {"t": dt.datetime(2026, 11, 1)},
            )
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(text(f"UPDATE {TABLE_NAME} SET state = 'HELD_FOR_REVIEW' WHERE msg_id = 'm1'"))
        with pytest.raises(Exception, match=r"(?i)check|constraint"), engine.begin() as conn:
            conn.execute(text(f"UPDATE {TABLE_NAME} SET state = 'BOGUS' WHERE msg_id = 'm1'"))
    finally:
        engine.dispose()
    with Ledger.open(ledger_url) as led:
        row = led.get("g", "m1")
        assert row is not None and (row.state.value, row.reason, row.loops) == ("HELD_FOR_REVIEW", None, 0)


def test_an_sql_insert_the_table_refuses_is_db_rejected(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.compensation.handlers import SqlHandler

    url = f"sqlite:///{tmp_path}/t.db"
    engine = create_ledger_engine(url)
    with engine.begin() as conn:  # an existing table with a column the handler does not fill
        conn.execute(text("CREATE TABLE tickets (idempotency_key TEXT PRIMARY KEY, owner TEXT NOT NULL)"))
    engine.dispose()
    handler = SqlHandler("tickets", HandlerConfig(type="sql", url=url, table="tickets"))
    with pytest.raises(PermanentFailure) as caught:
        handler(LETTER)
    handler.close()
    assert exception_reason(caught.value) == "db_rejected"
    assert "NOT NULL constraint failed: tickets.owner" in str(caught.value)
