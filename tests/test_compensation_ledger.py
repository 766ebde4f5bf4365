"""The ledger's schema history and state machine, on a real SQLite file and the real local PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from sqlalchemy import inspect, text

from rocketmq_retry.compensation.database import (
    create_ledger_engine,
    current_revision,
    head_revision,
    resolve_ledger_url,
    upgrade,
)
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import Registration, State, idempotency_key
from rocketmq_retry.compensation.schema import TABLE_NAME, VERSION_TABLE, metadata
from rocketmq_retry.errors import ConfigError
from test_compensation_support import pg_schema_url


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/ledger.db"
    else:
        with pg_schema_url() as url:
            yield url


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 21, 1, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


def reg(msg_id: str, group: str = "order-consumer", handler: str | None = "log-only") -> Registration:
    return Registration(group, msg_id, "2026-11-20", "orders", handler, f"ORD-{msg_id}")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(ledger_url: str, clock: Clock) -> Iterator[Ledger]:
    with Ledger.open(ledger_url, lease_seconds=30, max_attempts=3, clock=clock) as led:
        yield led


def test_fresh_database_is_migrated_to_head_and_matches_the_model(ledger_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_ledger_engine(ledger_url)
    try:
        assert current_revision(engine) is None
        assert upgrade(engine) == (None, head_revision())
        assert upgrade(engine) == (head_revision(), head_revision())  # second open: nothing to do
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            diff = compare_metadata(context, metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_an_existing_revision_0001_ledger_is_upgraded_with_its_rows(ledger_url: str) -> None:
    engine = create_ledger_engine(ledger_url)
    try:
        assert upgrade(engine, "0001") == (None, "0001")
        with engine.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {TABLE_NAME} (consumer_group, msg_id, state, attempts, handler, first_seen) "
                    "VALUES ('g', 'm1', 'DONE', 1, 'log-only', :t)"
                ),
                {"t": dt.datetime(2026, 11, 1)},
            )
        assert "dlq_date" not in {c["name"] for c in inspect(engine).get_columns(TABLE_NAME)}
        assert upgrade(engine) == ("0001", head_revision())
        columns = {c["name"] for c in inspect(engine).get_columns(TABLE_NAME)}
        assert {"dlq_date", "original_topic", "redrives", "result"} <= columns
    finally:
        engine.dispose()
    with Ledger.open(ledger_url) as led:
        row = led.get("g", "m1")
        assert row is not None and row.state == State.DONE and row.redrives == 0 and row.dlq_date is None


def test_register_is_idempotent_and_never_touches_existing_rows(ledger: Ledger) -> None:
    assert ledger.register([reg("m1"), reg("m2")]) == 2
    claim = ledger.claim("order-consumer", "m1", worker="w1")
    assert claim is not None
    assert ledger.register([reg("m1"), reg("m2"), reg("m3")]) == 1
    row = ledger.get("order-consumer", "m1")
    assert row is not None and row.state == State.CLAIMED and row.attempts == 1


def test_claim_complete_then_nobody_can_claim_again(ledger: Ledger, clock: Clock) -> None:
    ledger.register([reg("m1")])
    claim = ledger.claim("order-consumer", "m1", worker="w1", run_id="scheduled__2026-11-20", handler="log-only")
    assert claim is not None and claim.attempt == 1
    assert claim.lease_expires_at == clock.now + dt.timedelta(seconds=30)
    assert ledger.claim("order-consumer", "m1", worker="w2") is None  # held
    assert ledger.complete(claim, "HTTP 201")
    clock.advance(3600)
    assert ledger.claim("order-consumer", "m1", worker="w2") is None  # done, even long after
    row = ledger.get("order-consumer", "m1")
    assert row is not None
    assert (row.state, row.attempts, row.result, row.airflow_run_id) == (
        State.DONE,
        1,
        "HTTP 201",
        "scheduled__2026-11-20",
    )
    assert row.completed_at == clock.now - dt.timedelta(seconds=3600)
    assert row.lease_expires_at is None and row.last_error is None


def test_retryable_failures_until_attempts_run_out(ledger: Ledger) -> None:
    ledger.register([reg("m1")])
    for attempt in (1, 2):
        claim = ledger.claim("order-consumer", "m1", worker="w")
        assert claim is not None and claim.attempt == attempt
        assert ledger.fail(claim, "HTTP 503", permanent=False) == State.FAILED
        row = ledger.get("order-consumer", "m1")
        assert row is not None and row.state == State.FAILED and row.last_error == "HTTP 503"
    claim = ledger.claim("order-consumer", "m1", worker="w")
    assert claim is not None and claim.attempt == 3
    assert ledger.fail(claim, "HTTP 503", permanent=False) == State.GAVE_UP
    row = ledger.get("order-consumer", "m1")
    assert row is not None and row.state == State.GAVE_UP and row.last_error == "gave up after 3 attempts: HTTP 503"
    assert ledger.claim("order-consumer", "m1", worker="w") is None


def test_permanent_failure_gives_up_at_once(ledger: Ledger) -> None:
    ledger.register([reg("m1")])
    claim = ledger.claim("order-consumer", "m1", worker="w")
    assert claim is not None
    assert ledger.fail(claim, "HTTP 422", permanent=True) == State.GAVE_UP
    assert ledger.claim("order-consumer", "m1", worker="w") is None


def test_an_expired_lease_is_claimable_and_fences_the_old_holder(ledger: Ledger, clock: Clock) -> None:
    ledger.register([reg("m1")])
    old = ledger.claim("order-consumer", "m1", worker="crashed")
    assert old is not None
    clock.advance(29)
    assert ledger.claim("order-consumer", "m1", worker="w2") is None
    clock.advance(2)
    new = ledger.claim("order-consumer", "m1", worker="w2")
    assert new is not None and new.attempt == 2
    # The slow first worker wakes up: it can no longer record anything over the new claim.
    assert not ledger.complete(old, "late")
    assert ledger.fail(old, "late", permanent=True) is None
    assert ledger.complete(new, "ok")
    row = ledger.get("order-consumer", "m1")
    assert row is not None and (row.state, row.claimed_by, row.result) == (State.DONE, "w2", "ok")


def test_a_lost_last_attempt_ends_in_gave_up(ledger: Ledger, clock: Clock) -> None:
    ledger.register([reg("m1")])
    for _ in range(3):
        assert ledger.claim("order-consumer", "m1", worker="dies") is not None
        clock.advance(31)
    assert ledger.claim("order-consumer", "m1", worker="w") is None
    row = ledger.get("order-consumer", "m1")
    assert row is not None and row.state == State.GAVE_UP and row.attempts == 3
    assert row.last_error == "lease expired on the last attempt (worker lost?)"


def test_skip_and_reopen_but_never_reopen_done(ledger: Ledger) -> None:
    ledger.register([reg("m1", handler=None), reg("m2")])
    c1 = ledger.claim("order-consumer", "m1", worker="w")
    assert c1 is not None and ledger.skip(c1, "no compensation route matches")
    c2 = ledger.claim("order-consumer", "m2", worker="w")
    assert c2 is not None and ledger.complete(c2)
    rows = ledger.rows(date_from="2026-11-20", date_to="2026-11-20")
    assert [(r.msg_id, r.state) for r in rows] == [("m1", State.SKIPPED), ("m2", State.DONE)]
    reopened = ledger.reopen(rows, note="operator")
    assert [r.msg_id for r in reopened] == ["m1"]
    m1 = ledger.get("order-consumer", "m1")
    assert m1 is not None and (m1.state, m1.attempts, m1.redrives) == (State.PENDING, 0, 1)
    assert m1.last_error == "operator (was SKIPPED after 1 attempts): no compensation route matches"
    assert ledger.counts() == {"PENDING": 1, "DONE": 1}


def test_rows_filters(ledger: Ledger) -> None:
    ledger.register([reg("a"), reg("b", group="pay-consumer"), Registration("g", "c", "2026-11-21", "t", "h", None)])
    assert [r.msg_id for r in ledger.rows(consumer_group="pay-consumer")] == ["b"]
    assert [r.msg_id for r in ledger.rows(date_from="2026-11-21")] == ["c"]
    assert [r.msg_id for r in ledger.rows(msg_ids=["a", "c"])] == ["a", "c"]
    assert [r.msg_id for r in ledger.rows(states=[State.DONE])] == []
    assert len(ledger.rows(limit=2)) == 2
    assert set(ledger.states([("order-consumer", "a"), ("g", "c"), ("g", "missing")])) == {
        ("order-consumer", "a"),
        ("g", "c"),
    }


def test_ledger_url_and_idempotency_key(tmp_path) -> None:
    assert (
        resolve_ledger_url("sqlite:///{warehouse}/compensation.db", tmp_path) == f"sqlite:///{tmp_path}/compensation.db"
    )
    with pytest.raises(ConfigError, match="--warehouse"):
        resolve_ledger_url("sqlite:///{warehouse}/c.db", None)
    with pytest.raises(ConfigError, match="must be a file"):
        create_ledger_engine("sqlite://")
    engine = create_ledger_engine("postgresql://postgres@127.0.0.1:5432/test")  # no connection is made here
    assert engine.dialect.driver == "psycopg"  # SQLAlchemy 2.1's default: psycopg 3, which the project installs
    engine.dispose()
    key = idempotency_key("order-consumer", "7F00000100002A9F")
    assert key == idempotency_key("order-consumer", "7F00000100002A9F")
    assert key != idempotency_key("other-consumer", "7F00000100002A9F")
    # Pinned: receivers deduplicate on this value, so it must never change between releases.
    assert key == "7434eb24-46bc-5854-a1c3-c43df278520e"


def test_lease_expiry_is_database_time_so_a_skewed_worker_cannot_steal_a_live_lease(
    ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker A claims with a 30 s lease. Worker B's clock runs an hour ahead: judged by B's clock A's lease
    is long over, but the database's clock says it is live, and the database's clock is the one used."""
    import types

    from rocketmq_retry.compensation import ledger as ledger_module

    with Ledger.open(ledger_url, lease_seconds=30) as a:
        a.register([reg("1")])
        claim = a.claim("order-consumer", "1", worker="a")
        assert claim is not None
        db_now = a.now()
        assert abs((claim.lease_expires_at - db_now).total_seconds() - 30) < 5

        class AnHourAhead(dt.datetime):
            @classmethod
            def now(cls, tz: dt.tzinfo | None = None) -> AnHourAhead:  # type: ignore[override]
                return super().now(tz) + dt.timedelta(hours=1)

        monkeypatch.setattr(
            ledger_module, "dt", types.SimpleNamespace(datetime=AnHourAhead, timedelta=dt.timedelta, UTC=dt.UTC)
        )
        with Ledger.open(ledger_url, lease_seconds=30) as b:
            assert b.claim("order-consumer", "1", worker="b") is None
            row = b.get("order-consumer", "1")
            assert row is not None and b.is_claimable(row) is False
        assert (row.state, row.claimed_by, row.attempts) == (State.CLAIMED, "a", 1)
        assert a.complete(claim, "ok")


def test_extend_renews_only_claims_still_held(ledger: Ledger, clock: Clock) -> None:
    ledger.register([reg("1"), reg("2")])
    claims, _ = ledger.claim_many([("order-consumer", "1"), ("order-consumer", "2")], worker="a")
    first, second = claims[("order-consumer", "1")], claims[("order-consumer", "2")]
    assert ledger.complete(second, "ok")
    clock.advance(20)
    assert ledger.extend([first, second]) == {("order-consumer", "2")}  # finished: no longer held
    clock.advance(20)  # 40 s after the claim, 20 s after the renewal: still live
    assert ledger.claim("order-consumer", "1", worker="b") is None
    clock.advance(11)
    taken = ledger.claim("order-consumer", "1", worker="b")
    assert taken is not None
    assert ledger.extend([first]) == {("order-consumer", "1")}  # taken over: lost
    assert not ledger.complete(first, "late")
