"""Real processes racing for the same dead letters, on a SQLite file and on the local PostgreSQL:
every handler effect must happen exactly once. And a worker killed between claim and completion: once its
lease expires another worker completes the dead letter, exactly once."""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import signal
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from rocketmq_retry.compensation.batches import Batch
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import State
from rocketmq_retry.config import CompensationConfig
from test_compensation_support import (
    EffectServer,
    crash_worker,
    dead_letter_rows,
    die_before_complete_worker,
    effects,
    pg_schema_url,
    race_worker,
    solo_worker,
    write_config,
    write_partition,
)

CLAIM_CHUNK = CompensationConfig().claim_chunk  # the default the workers run with
PROCESSES = 4
MESSAGES = 200
DATE = "2026-11-20"
FIGURES = pathlib.Path(__file__).resolve().parents[1] / ".pytest-airflow" / "compensation-concurrency.jsonl"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/ledger.db"
    else:
        with pg_schema_url() as url:
            yield url


def _workers() -> multiprocessing.context.BaseContext:
    """Separate interpreters, like Airflow workers, but forked from a clean server process that imported the
    code once: four concurrent cold starts cost a minute on a busy 2-core machine. Nothing of the test process
    (its HTTP server thread, its database connections) is inherited."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["rocketmq_retry.compensation.batches", "test_compensation_support", "httpx", "psycopg"])
    return ctx


def _batch(warehouse: pathlib.Path, config: pathlib.Path) -> Batch:
    # Every worker gets the SAME whole partition: they all race for every dead letter.
    return Batch(warehouse=str(warehouse), config=str(config), dates=[DATE], shard=0, shards=1, only=None, notes=[])


def test_processes_racing_for_the_same_dead_letters_fire_each_effect_once(
    ledger_url: str, tmp_path: pathlib.Path
) -> None:
    warehouse = tmp_path / "wh"
    write_partition(warehouse, DATE, dead_letter_rows(MESSAGES, DATE, groups=("order-consumer", "pay-consumer")))
    ctx = _workers()
    with EffectServer(status=201) as server:
        config = write_config(
            tmp_path / "config.yaml",
            {
                "ledger_url": ledger_url,  # a fresh database: the workers also race to create the schema
                "lease_seconds": 120,
                "routes": [{"handler": "refund-api"}],
                "handlers": {"refund-api": {"type": "http", "url": server.url, "timeout_seconds": 10}},
            },
        )
        barrier = ctx.Barrier(PROCESSES)
        results = ctx.Queue()
        procs = [
            ctx.Process(
                target=race_worker,
                args=(dict(_batch(warehouse, config)), f"race_{i}", str(config), barrier, results),
            )
            for i in range(PROCESSES)
        ]
        started = time.monotonic()
        for p in procs:
            p.start()
        # Generous: four interpreters importing SQLAlchemy, pyarrow and pydantic on a busy 2-core machine.
        summaries = [results.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        elapsed = time.monotonic() - started
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    executed = [s["executed"] for s in summaries]
    figures = {
        "database": ledger_url.split(":", 1)[0],
        "processes": PROCESSES,
        "messages": MESSAGES,
        "posts_received": server.total,
        "distinct_idempotency_keys": len(server.requests),
        "max_posts_per_key": max(server.requests.values()),
        "executed_per_process": executed,
        "held_or_done_per_process": [s["already_done"] + s["held_elsewhere"] for s in summaries],
        "batch_seconds_per_process": [s["seconds"] for s in summaries],
        "wall_seconds_with_process_start": round(elapsed, 1),
    }
    FIGURES.parent.mkdir(exist_ok=True)
    with FIGURES.open("a") as fh:
        fh.write(json.dumps(figures) + "\n")
    print(figures)
    # Each dead letter's effect happened once: 200 POSTs, 200 keys, none twice.
    assert server.total == MESSAGES
    assert len(server.requests) == MESSAGES and set(server.requests.values()) == {1}
    assert sum(executed) == MESSAGES and sum(s["done"] for s in summaries) == MESSAGES
    # Everything a worker did not execute, it found done or held by another worker.
    for s in summaries:
        assert s["dead_letters"] == MESSAGES
        assert s["executed"] + s["already_done"] + s["held_elsewhere"] == MESSAGES
        assert s["lost_lease"] == s["failed"] == 0
    with Ledger.open(ledger_url) as ledger:
        assert ledger.counts() == {"DONE": MESSAGES}
        assert {r.attempts for r in ledger.rows()} == {1}
        assert {r.airflow_run_id for r in ledger.rows()} <= {f"race_{i}" for i in range(PROCESSES)}


def test_a_worker_killed_after_its_claim_is_completed_by_another_once_the_lease_expires(
    ledger_url: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = 20
    lease = 5
    warehouse = tmp_path / "wh"
    write_partition(warehouse, DATE, dead_letter_rows(messages, DATE))
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.log"))
    config = write_config(
        tmp_path / "config.yaml",
        {
            "ledger_url": ledger_url,
            "lease_seconds": lease,
            "routes": [{"handler": "record"}],
            "handlers": {"record": {"type": "python", "callable": "test_compensation_support:record_effect"}},
        },
    )
    batch = _batch(warehouse, config)
    marker = tmp_path / "claimed"
    ctx = _workers()
    victim = ctx.Process(target=crash_worker, args=(dict(batch), "run_crashed", str(config), str(marker)))
    victim.start()
    deadline = time.monotonic() + 180
    while not marker.exists():
        assert victim.is_alive() and time.monotonic() < deadline, "the worker never claimed anything"
        time.sleep(0.05)
    os.kill(victim.pid, signal.SIGKILL)  # dies inside the handler: claimed, effect not applied, nothing recorded
    victim.join(timeout=10)
    assert victim.exitcode == -signal.SIGKILL
    hung_group, hung_id = marker.read_text().strip().split("/")
    killed_at = time.monotonic()
    with Ledger.open(ledger_url) as ledger:
        # The victim had claimed a chunk (CLAIM_CHUNK rows in one statement) and was running the first of it.
        stranded = {(r.consumer_group, r.msg_id) for r in ledger.rows(states=[State.CLAIMED])}
    assert len(stranded) == min(CLAIM_CHUNK, messages) and (hung_group, hung_id) in stranded
    assert not effects()

    from rocketmq_retry.compensation.batches import compensate_batch

    # Right away, a second worker does all the others and leaves the stranded claims alone: their lease is live.
    first = compensate_batch(batch, "run_second", str(config))
    assert time.monotonic() - killed_at < lease, "machine too slow for this lease; raise it"
    assert (first["executed"], first["held_elsewhere"]) == (messages - len(stranded), len(stranded))
    with Ledger.open(ledger_url) as ledger:
        row = ledger.get(hung_group, hung_id)
        assert row is not None and row.state == State.CLAIMED and row.airflow_run_id == "run_crashed"
    assert sum(effects().values()) == messages - len(stranded)

    # After the lease, the next worker (a retry of the task, a backfill) takes them over and completes them.
    time.sleep(max(0.0, lease + 0.2 - (time.monotonic() - killed_at)))
    second = compensate_batch(batch, "run_third", str(config))
    assert (second["executed"], second["done"], second["already_done"]) == (
        len(stranded),
        len(stranded),
        messages - len(stranded),
    )
    assert effects() == Counter({f"order-consumer/{r['msg_id']}": 1 for r in dead_letter_rows(messages, DATE)})
    with Ledger.open(ledger_url) as ledger:
        row = ledger.get(hung_group, hung_id)
        assert row is not None
        assert (row.state, row.attempts, row.airflow_run_id) == (State.DONE, 2, "run_third")
        assert ledger.counts() == {"DONE": messages}
    # And a further run does nothing new.
    third = compensate_batch(batch, "run_fourth", str(config))
    assert (third["executed"], third["already_done"]) == (0, messages)
    assert sum(effects().values()) == messages


def test_a_worker_outliving_its_lease_cannot_record_and_the_receiver_sees_one_effect(
    ledger_url: str, tmp_path: pathlib.Path
) -> None:
    """Worker A is frozen (SIGSTOP: a VM pause, a stop-the-world stall; its heartbeat freezes with it) while its
    request is in flight, past its lease; worker B takes over and calls again with the same Idempotency-Key.
    The receiver applies one effect (409 for B), B records DONE, and A's late answer is fenced off."""
    from rocketmq_retry.compensation.batches import compensate_batch

    lease = 3
    warehouse = tmp_path / "wh"
    write_partition(warehouse, DATE, dead_letter_rows(1, DATE))
    ctx = _workers()
    with EffectServer(status=201, dedupe=True, first_delay=1.0) as server:
        config = write_config(
            tmp_path / "config.yaml",
            {
                "ledger_url": ledger_url,
                "lease_seconds": lease,
                "routes": [{"handler": "refund-api"}],
                "handlers": {"refund-api": {"type": "http", "url": server.url, "timeout_seconds": 2.5}},
            },
        )
        batch = _batch(warehouse, config)
        results = ctx.Queue()
        worker_a = ctx.Process(target=solo_worker, args=(dict(batch), "run_a", str(config), results))
        worker_a.start()
        deadline = time.monotonic() + 180
        while server.total == 0:
            assert worker_a.is_alive() and time.monotonic() < deadline, "worker A never called the receiver"
            time.sleep(0.01)
        os.kill(worker_a.pid, signal.SIGSTOP)  # the receiver holds A's answer for 1 s: A is frozen mid-call
        try:
            with Ledger.open(ledger_url) as ledger:
                deadline = time.monotonic() + 3 * lease
                while not ledger.is_claimable(ledger.rows()[0]):
                    assert time.monotonic() < deadline, "A's lease never expired"
                    time.sleep(0.1)
            fast = compensate_batch(batch, "run_b", str(config))
        finally:
            os.kill(worker_a.pid, signal.SIGCONT)
        slow = results.get(timeout=60)
        worker_a.join(timeout=30)
    assert (fast["executed"], fast["done"]) == (1, 1)
    assert (slow["executed"], slow["done"], slow["lost_lease"]) == (1, 0, 1)
    assert slow["notes"] and "was not recorded" in slow["notes"][0]
    assert server.total == 2 and sum(server.accepted.values()) == 1  # two calls, one effect
    with Ledger.open(ledger_url) as ledger:
        (row,) = ledger.rows()
        assert (row.state, row.attempts, row.airflow_run_id) == (State.DONE, 2, "run_b")
        assert row.result == "HTTP 409 (receiver already had this idempotency key)"


def test_the_heartbeat_keeps_a_slow_call_s_claim_from_a_second_worker(ledger_url: str, tmp_path: pathlib.Path) -> None:
    """A's call (three tries against a slow, failing receiver) takes twice its lease. The heartbeat renews the
    lease while it runs, so B, starting after the first lease would have ended, finds the row held."""
    import threading

    from rocketmq_retry.compensation.batches import compensate_batch

    lease = 2
    warehouse = tmp_path / "wh"
    write_partition(warehouse, DATE, dead_letter_rows(1, DATE))
    with EffectServer(status=201, script={1: 503, 2: 503}, delay=1.2) as server:
        config = write_config(
            tmp_path / "config.yaml",
            {
                "ledger_url": ledger_url,
                "lease_seconds": lease,
                "routes": [{"handler": "refund-api"}],
                "handlers": {
                    "refund-api": {
                        "type": "http",
                        "url": server.url,
                        "timeout_seconds": 1.5,
                        "max_tries": 3,
                        "backoff_seconds": 0.2,
                    }
                },
            },
        )
        batch = _batch(warehouse, config)
        slow: dict[str, object] = {}
        worker_a = threading.Thread(target=lambda: slow.update(compensate_batch(batch, "run_a", str(config))))
        worker_a.start()
        deadline = time.monotonic() + 60
        while server.total == 0:
            assert worker_a.is_alive() and time.monotonic() < deadline, "worker A never called the receiver"
            time.sleep(0.01)
        time.sleep(lease + 0.5)  # A's first lease is over; its call is still going (about 4 s in all)
        assert worker_a.is_alive()
        second = compensate_batch(batch, "run_b", str(config))
        worker_a.join(timeout=30)
    assert (second["executed"], second["held_elsewhere"]) == (0, 1)
    assert (slow["executed"], slow["done"], slow["lost_lease"]) == (1, 1, 0)
    assert server.total == 3 and sum(server.accepted.values()) == 1  # A's three tries, nobody else's
    with Ledger.open(ledger_url) as ledger:
        (row,) = ledger.rows()
        assert (row.state, row.attempts, row.airflow_run_id) == (State.DONE, 1, "run_a")


@pytest.mark.parametrize("kind", ["http", "sql", "python"])
def test_a_crash_between_the_effect_and_done_repeats_no_business_effect(
    kind: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The effect happens, the worker's process dies before recording DONE. After the lease, the next run
    calls the handler again with the same idempotency key: the http receiver and the sql table dedupe on it
    (one business effect); a python callable is handed the same key again (docs/compensation.md)."""
    from sqlalchemy import create_engine, text

    from rocketmq_retry.compensation.batches import compensate_batch
    from rocketmq_retry.compensation.model import idempotency_key

    lease = 2
    ledger_url = f"sqlite:///{tmp_path}/ledger.db"
    warehouse = tmp_path / "wh"
    (letter,) = dead_letter_rows(1, DATE)
    key = idempotency_key("order-consumer", letter["msg_id"])
    write_partition(warehouse, DATE, [letter])
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.log"))
    tickets = f"sqlite:///{tmp_path}/tickets.db"
    with EffectServer(status=201, dedupe=True) as server:
        handler = {
            "http": {"type": "http", "url": server.url, "timeout_seconds": 1},
            "sql": {"type": "sql", "url": tickets, "table": "dlq_tickets", "timeout_seconds": 1},
            "python": {"type": "python", "callable": "test_compensation_support:record_key", "timeout_seconds": 1},
        }[kind]
        config = write_config(
            tmp_path / "config.yaml",
            {
                "ledger_url": ledger_url,
                "lease_seconds": lease,
                "routes": [{"handler": "h"}],
                "handlers": {"h": handler},
            },
        )
        batch = _batch(warehouse, config)
        victim = _workers().Process(
            target=die_before_complete_worker,
            args=(dict(batch), "run_dies", str(config), {"RMQ_TEST_EFFECTS": os.environ["RMQ_TEST_EFFECTS"]}),
        )
        victim.start()
        victim.join(timeout=180)
        assert victim.exitcode == 70  # died inside complete(), after the effect
        with Ledger.open(ledger_url) as ledger:
            (row,) = ledger.rows()
            assert (row.state, row.airflow_run_id) == (State.CLAIMED, "run_dies")
            deadline = time.monotonic() + 3 * lease
            while not ledger.is_claimable(ledger.rows()[0]):
                assert time.monotonic() < deadline
                time.sleep(0.1)
        again = compensate_batch(batch, "run_next", str(config))
    assert (again["executed"], again["done"]) == (1, 1)
    with Ledger.open(ledger_url) as ledger:
        (row,) = ledger.rows()
    assert (row.state, row.attempts) == (State.DONE, 2)
    if kind == "http":
        assert server.requests == Counter({key: 2}) and server.accepted == Counter({key: 1})
        assert row.result == "HTTP 409 (receiver already had this idempotency key)"
    elif kind == "sql":
        engine = create_engine(tickets)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT idempotency_key FROM dlq_tickets")).all() == [(key,)]
        engine.dispose()
        assert row.result == "row already present"
    else:
        assert effects() == Counter({key: 2})  # called twice, both times with the same key
        assert row.result == "recorded"
