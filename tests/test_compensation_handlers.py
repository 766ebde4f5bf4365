"""Handlers against real things: a local HTTP server, a SQLite file and PostgreSQL, dotted-path callables;
plus the rate limiter, business keys and routes."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from rocketmq_retry.airflow.connections import airflow_connection
from rocketmq_retry.compensation.handlers import HttpHandler, PythonHandler, SqlHandler, build_handler, log_only
from rocketmq_retry.compensation.model import DeadLetter, PermanentFailure, RetryableFailure
from rocketmq_retry.compensation.ratelimit import RateLimiter
from rocketmq_retry.config import CompensationConfig, HandlerConfig, RouteConfig
from rocketmq_retry.errors import ConfigError
from rocketmq_retry.routing import handler_for, route_for
from test_compensation_support import EffectServer, pg_schema_url

LETTER = DeadLetter(
    consumer_group="order-consumer",
    msg_id="7F00000100002A9F0000000000000001",
    dlq_date="2026-11-20",
    original_topic="orders",
    dlq_at=dt.datetime(2026, 11, 20, 2, 0, tzinfo=dt.UTC),
    reconsume_times=16,
    keys="ORD-1 trace-1",
    tags="TagA",
    business_key="ORD-1",
    body='{"orderId": "O1"}',
)


def http(url: str, **kw: object) -> HttpHandler:
    pauses: list[float] = []
    handler = HttpHandler(
        "refund-api", HandlerConfig(type="http", url=url, timeout_seconds=1), sleep=pauses.append, **kw
    )  # type: ignore[arg-type]
    handler.pauses = pauses  # type: ignore[attr-defined]
    return handler


def test_http_posts_json_with_a_stable_idempotency_key() -> None:
    with EffectServer(status=201) as server:
        handler = http(server.url)
        assert handler(LETTER) == "HTTP 201"
        handler.close()
    assert server.total == 1
    headers = server.headers[0]
    assert headers["Idempotency-Key"] == LETTER.idempotency_key
    assert headers["Content-Type"] == "application/json"
    body = server.bodies[0]
    assert body["msg_id"] == LETTER.msg_id and body["business_key"] == "ORD-1"
    assert body["dlq_at"] == "2026-11-20T02:00:00+00:00" and body["idempotency_key"] == LETTER.idempotency_key


def test_http_409_means_the_receiver_already_has_it() -> None:
    with EffectServer(status=201, dedupe=True) as server:
        handler = http(server.url)
        assert handler(LETTER) == "HTTP 201"
        assert handler(LETTER).startswith("HTTP 409")
        handler.close()
    assert server.requests[LETTER.idempotency_key] == 2
    assert server.accepted[LETTER.idempotency_key] == 1  # one effect


@pytest.mark.parametrize("status", [400, 404, 422])
def test_http_other_4xx_is_permanent_and_not_retried(status: int) -> None:
    with EffectServer(status=status) as server:
        handler = http(server.url)
        with pytest.raises(PermanentFailure, match=f"HTTP {status}"):
            handler(LETTER)
        handler.close()
    assert server.total == 1


def test_http_5xx_is_retried_with_exponential_back_off() -> None:
    with EffectServer(status=200, script={1: 503, 2: 500, 3: 502}) as server:
        handler = http(server.url, max_tries=4, backoff_seconds=0.5, backoff_max_seconds=8)
        assert handler(LETTER) == "HTTP 200"
        handler.close()
    assert server.total == 4
    assert handler.pauses == [0.5, 1.0, 2.0]  # type: ignore[attr-defined]


def test_http_still_failing_after_the_last_try_is_retryable_later() -> None:
    with EffectServer(status=503) as server:
        handler = http(server.url, max_tries=3, backoff_seconds=1, backoff_max_seconds=1.5)
        with pytest.raises(RetryableFailure, match=r"HTTP 503 .*after 3 tries"):
            handler(LETTER)
        handler.close()
    assert server.total == 3
    assert handler.pauses == [1, 1.5]  # type: ignore[attr-defined]


def test_http_timeouts_are_retried() -> None:
    with EffectServer(status=201, delay=1.5) as server:
        handler = http(server.url, max_tries=2, backoff_seconds=0)
        with pytest.raises(RetryableFailure, match="timeout"):
            handler(LETTER)
        handler.close()
    assert server.total == 2


def test_http_connection_refused_is_retryable() -> None:
    with EffectServer() as server:
        url = server.url
    handler = http(url, max_tries=2, backoff_seconds=0)
    with pytest.raises(RetryableFailure, match="ConnectError"):
        handler(LETTER)


def test_http_through_an_airflow_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    with EffectServer(status=202) as server:
        conn = {
            "conn_type": "http",
            "host": "127.0.0.1",
            "port": server.port,
            "schema": "http",
            "login": "svc-compensation",
            "password": "s3cret-token",
            "extra": {"headers": {"X-Team": "payments"}},
        }
        monkeypatch.setenv("AIRFLOW_CONN_REFUND_API", json.dumps(conn))
        cfg = HandlerConfig(type="http", conn_id="refund_api", url="/compensations")
        handler = build_handler("refund-api", cfg, airflow_connection)
        assert handler(LETTER) == "HTTP 202"
        handler.close()
    headers = server.headers[0]
    assert headers["X-Team"] == "payments" and headers["Authorization"].startswith("Basic ")
    assert headers["Idempotency-Key"] == LETTER.idempotency_key


def test_a_missing_airflow_connection_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no_such_conn"):
        build_handler("x", HandlerConfig(type="http", conn_id="no_such_conn"), airflow_connection)


def test_a_connection_without_airflow_is_a_config_error_that_says_what_to_do() -> None:
    expected = r"'crm', and Airflow's connections cannot be read here .*give the handler a url"
    with pytest.raises(ConfigError, match=expected):
        build_handler("tickets", HandlerConfig(type="sql", conn_id="crm", table="tickets"))


@pytest.fixture(params=["sqlite", "postgresql"])
def target_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/tickets.db"
    else:
        with pg_schema_url() as url:
            yield url


def test_sql_inserts_one_row_per_dead_letter(target_url: str) -> None:
    handler = SqlHandler("tickets", HandlerConfig(type="sql", url=target_url, table="dlq_tickets"))
    try:
        assert handler(LETTER) == "inserted into dlq_tickets"
        assert handler(LETTER) == "row already present"  # a re-execution never makes a second ticket
    finally:
        handler.close()
    engine = create_engine(target_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT idempotency_key, msg_id, business_key, body FROM dlq_tickets")).all()
    engine.dispose()
    assert rows == [(LETTER.idempotency_key, LETTER.msg_id, "ORD-1", '{"orderId": "O1"}')]


def test_sql_through_an_airflow_connection_into_an_existing_table(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "crm.db"
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE tickets (idempotency_key TEXT PRIMARY KEY, msg_id TEXT, business_key TEXT)"))
    monkeypatch.setenv("AIRFLOW_CONN_CRM", json.dumps({"conn_type": "sqlite", "host": str(db)}))
    handler = build_handler("tickets", HandlerConfig(type="sql", conn_id="crm", table="tickets"), airflow_connection)
    assert handler(LETTER) == "inserted into tickets"
    handler.close()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT msg_id, business_key FROM tickets")).all() == [(LETTER.msg_id, "ORD-1")]
    engine.dispose()


def test_sql_table_without_idempotency_key_is_refused(tmp_path) -> None:
    db = tmp_path / "crm.db"
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE tickets (msg_id TEXT)"))
    engine.dispose()
    with pytest.raises(ConfigError, match="idempotency_key"):
        SqlHandler("t", HandlerConfig(type="sql", url=f"sqlite:///{db}", table="tickets"))


def test_python_handlers_by_dotted_path() -> None:
    handler = PythonHandler(
        "log-only", HandlerConfig(type="python", callable="rocketmq_retry.compensation.handlers:log_only")
    )
    assert handler(LETTER) == "logged" == log_only(LETTER)
    refuse = PythonHandler("refuse", HandlerConfig(type="python", callable="test_compensation_support.refuse"))
    with pytest.raises(PermanentFailure, match="ORD-1"):
        refuse(LETTER)
    for bad in ("nosuchmodule_xyz:f", "rocketmq_retry.compensation.handlers:nope", "justaname"):
        with pytest.raises(ConfigError):
            PythonHandler("bad", HandlerConfig(type="python", callable=bad))


def test_rate_limiter_spaces_calls() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(4, clock=lambda: now[0], sleep=sleep)
    for _ in range(9):
        limiter.acquire()
    # 9 calls at 4/s: the first is free, the other 8 take 2 s of tokens.
    assert now[0] == pytest.approx(2.0)


def test_rate_limiter_in_real_time() -> None:
    limiter = RateLimiter(20)
    start = time.monotonic()
    for _ in range(11):
        limiter.acquire()
    assert 0.45 <= time.monotonic() - start < 1.5


def test_routes_first_match_wins() -> None:
    cfg = CompensationConfig(
        routes=[
            RouteConfig(topic="payments", group="*", handler="refund"),
            RouteConfig(topic="order-*", group="order-consumer", handler="tickets"),
        ],
        handlers={
            "refund": HandlerConfig(type="http", url="http://127.0.0.1:1/x"),
            "tickets": HandlerConfig(type="sql", url="sqlite:////tmp/x.db", table="t"),
        },
    )
    assert route_for(cfg, "payments", "any") == "refund"
    assert route_for(cfg, "order-events", "order-consumer") == "tickets"
    assert route_for(cfg, "order-events", "other") is None
    assert handler_for(cfg, "orders", "g") == (None, "no compensation route matches topic 'orders', group 'g'")
    assert handler_for(cfg, "payments", "g") == ("refund", "route")


# --- 429 / 408 and Retry-After -------------------------------------------------------------------------


def test_http_429_waits_what_retry_after_asks_then_retries() -> None:
    with EffectServer(status=201, script={1: 429}, reply_headers={1: {"Retry-After": "2"}}) as server:
        handler = HttpHandler("refund-api", HandlerConfig(type="http", url=server.url, timeout_seconds=1))
        assert handler(LETTER) == "HTTP 201"
        handler.close()
    assert server.total == 2
    assert server.arrivals[1] - server.arrivals[0] >= 2.0  # the default back-off alone would be 0.5 s


def test_http_408_is_retried_and_an_http_date_retry_after_is_honoured() -> None:
    import email.utils

    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    with EffectServer(status=201, script={1: 408}, reply_headers={1: {"Retry-After": when}}) as server:
        handler = http(server.url, backoff_seconds=0.5)
        assert handler(LETTER) == "HTTP 201"
        handler.close()
    assert server.total == 2
    (pause,) = handler.pauses  # type: ignore[attr-defined]
    assert 1.5 <= pause <= 3.0  # the date has whole seconds: 2 to 3 s away when the answer came


def test_http_retry_after_is_capped_and_429_that_persists_is_retryable_not_permanent() -> None:
    with EffectServer(status=429, reply_headers={1: {"Retry-After": "3600"}, 2: {"Retry-After": "1"}}) as server:
        handler = http(server.url, max_tries=3, backoff_seconds=0.25, retry_after_max_seconds=5)
        with pytest.raises(RetryableFailure, match=r"HTTP 429 .*after 3 tries"):
            handler(LETTER)
        handler.close()
    assert server.total == 3
    assert handler.pauses == [5, 1]  # type: ignore[attr-defined]  # capped at 5; then 1 s beats 0.5 s back-off


def test_retry_after_forms() -> None:
    from rocketmq_retry.compensation.handlers import retry_after_seconds

    now = dt.datetime(2026, 11, 20, 8, 0, tzinfo=dt.UTC)
    assert retry_after_seconds("120") == 120
    assert retry_after_seconds("Fri, 20 Nov 2026 08:00:30 GMT", lambda: now) == 30
    assert retry_after_seconds("Fri, 20 Nov 2026 07:00:00 GMT", lambda: now) == 0  # in the past: now
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


# --- secrets ---------------------------------------------------------------------------------------------


def test_credentials_in_the_url_travel_as_basic_auth_and_never_in_messages() -> None:
    with EffectServer(status=400, echo=True) as server:
        url = server.url.replace("http://", "http://user:secret@")
        handler = http(url)
        with pytest.raises(PermanentFailure) as failure:
            handler(LETTER)
        handler.close()
    assert server.headers[0]["Authorization"].startswith("Basic ")  # the receiver still authenticates us
    assert "secret" not in str(failure.value) and "dXNlcjpzZWNyZXQ" not in str(failure.value)
    assert f"http://127.0.0.1:{server.port}/compensations" in str(failure.value)


def test_connection_headers_are_masked_when_a_receiver_echoes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    with EffectServer(status=503, echo=True) as server:
        conn = {
            "conn_type": "http",
            "host": "127.0.0.1",
            "port": server.port,
            "login": "svc",
            "password": "pw-hunter2",
            "extra": {"headers": {"X-Api-Key": "k-12345678", "X-Tenant-Token": "tt-87654321"}},
        }
        monkeypatch.setenv("AIRFLOW_CONN_REFUND_API", json.dumps(conn))
        handler = build_handler(
            "refund-api", HandlerConfig(type="http", conn_id="refund_api", max_tries=1), airflow_connection
        )
        with pytest.raises(RetryableFailure) as failure:
            handler(LETTER)
        handler.close()
    message = str(failure.value)
    assert "you_sent" in message  # the echo is there ...
    for secret in ("pw-hunter2", "k-12345678", "tt-87654321", "c3ZjOnB3LWh1bnRlcjI"):
        assert secret not in message  # ... but none of what authenticates us


def test_redact_patterns() -> None:
    from rocketmq_retry.compensation.redact import redact

    assert redact("POST https://a:b@h:1/x failed") == "POST https://***@h:1/x failed"
    assert redact("{'Authorization': 'Bearer abc.def', 'X-Api-Key': 'k1'}") == (
        "{'Authorization': '***', 'X-Api-Key': '***'}"
    )
    assert redact("Cookie: sid=42; x=1") == "Cookie: ***; x=1"
    assert redact("token tok-123 here", ["tok-123"]) == "token *** here"
    assert redact("http://127.0.0.1:8000/x") == "http://127.0.0.1:8000/x"


# --- time limits -----------------------------------------------------------------------------------------


def test_a_python_handler_past_its_time_limit_is_a_transient_failure_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RMQ_TEST_SLEEP", "5")
    handler = PythonHandler(
        "slow", HandlerConfig(type="python", callable="test_compensation_support:sleepy", timeout_seconds=0.5)
    )
    started = time.monotonic()
    with pytest.raises(RetryableFailure, match=r"time limit of 0.5s"):
        handler(LETTER)
    assert time.monotonic() - started < 2


def test_sql_statements_and_lock_waits_are_bounded_by_the_timeout(target_url: str) -> None:
    import threading

    handler = SqlHandler("tickets", HandlerConfig(type="sql", url=target_url, table="dlq_tickets", timeout_seconds=1))
    blocker = create_engine(target_url)
    outcome: dict[str, object] = {}
    try:
        with blocker.connect() as conn:
            # Another session holds the table: an INSERT waits for it until its timeout.
            if blocker.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                conn.exec_driver_sql(
                    "INSERT INTO dlq_tickets (idempotency_key, consumer_group, msg_id) VALUES ('x', 'g', 'm')"
                )
            else:
                conn.execute(text("LOCK TABLE dlq_tickets IN ACCESS EXCLUSIVE MODE"))

            def call() -> None:
                try:
                    outcome["result"] = handler(LETTER)
                except Exception as exc:
                    outcome["error"] = exc

            started = time.monotonic()
            caller = threading.Thread(target=call, daemon=True)
            caller.start()
            caller.join(timeout=15)
            waited = time.monotonic() - started
            conn.rollback()
        caller.join(timeout=120)
    finally:
        handler.close()
        blocker.dispose()
    assert waited < 10, f"the insert waited {waited:.0f}s for the lock"
    assert isinstance(outcome.get("error"), RetryableFailure), outcome
    assert "slower than 1s" in str(outcome["error"])


def test_a_timeout_must_be_shorter_than_the_lease() -> None:
    from pydantic import ValidationError

    python = {"type": "python", "callable": "rocketmq_retry.compensation.handlers:log_only"}
    with pytest.raises(ValidationError, match=r"handlers.slow.timeout_seconds \(10\) must be shorter than lease"):
        CompensationConfig.model_validate(
            {
                "lease_seconds": 5,
                "routes": [{"handler": "slow"}],
                "handlers": {"slow": {**python, "timeout_seconds": 10}},
            }
        )
    # Left at its default, the timeout follows a short lease instead.
    cfg = CompensationConfig.model_validate(
        {"lease_seconds": 5, "routes": [{"handler": "slow"}], "handlers": {"slow": python}}
    )
    assert cfg.handlers["slow"].timeout_seconds == 2.5
    assert CompensationConfig().handlers["log-only"].timeout_seconds == 10
