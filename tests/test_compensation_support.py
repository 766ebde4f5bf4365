"""Shared helpers for the compensation tests (no tests here): a counting HTTP server, PostgreSQL schemas,
dead-letter partitions, and the functions worker processes run. Kept importable by name so that
``multiprocessing`` spawn children and ``python`` handlers (``test_compensation_support:...``) find them."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import json
import os
import pathlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import yaml

PG_BASE_URL = os.environ.get("ROCKETMQ_RETRY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


# --- PostgreSQL ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def pg_schema_url() -> Iterator[str]:
    """A ledger URL whose search_path is a fresh schema, dropped afterwards: runs never collide."""
    import pytest
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    schema = f"crt_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_BASE_URL)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.fail(
            f"PostgreSQL is not reachable at {PG_BASE_URL} ({exc.orig}). CI starts it in .ci/run; locally run "
            "`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` "
            "or set ROCKETMQ_RETRY_TEST_PG_URL"
        )
    try:
        yield f"{PG_BASE_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


# --- a real HTTP receiver -----------------------------------------------------------------------------


class EffectServer:
    """``http.server`` on 127.0.0.1 (ephemeral port) that counts every POST by Idempotency-Key.

    ``script`` maps a request number (1-based, per key) to a status, e.g. {1: 503} fails the first try.
    ``dedupe`` answers 409 to a key it already accepted, like a well-behaved idempotent API.
    ``reply_headers`` maps a request number (per key) to extra response headers, e.g. {1: {"Retry-After": "2"}};
    ``echo`` puts the request's headers into the response body (a receiver that leaks what it got).
    """

    def __init__(
        self,
        *,
        status: int = 201,
        script: dict[int, int] | None = None,
        dedupe: bool = False,
        delay: float = 0,
        first_delay: float = 0,
        reply_headers: dict[int, dict[str, str]] | None = None,
        echo: bool = False,
    ):
        self.status = status
        self.script = script or {}
        self.dedupe = dedupe
        self.delay = delay
        self.first_delay = first_delay  # only the very first request is slow
        self.reply_headers = reply_headers or {}
        self.echo = echo
        self.arrivals: list[float] = []  # time.monotonic() of every POST, in order
        self.requests: Counter[str] = Counter()  # key -> POSTs received
        self.accepted: Counter[str] = Counter()  # key -> effects applied (2xx answered)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                key = self.headers.get("Idempotency-Key") or ""
                with server._lock:
                    server.arrivals.append(time.monotonic())
                    server.requests[key] += 1
                    n = server.requests[key]
                    first = server.total == 1
                    server.headers.append(dict(self.headers.items()))
                    try:
                        server.bodies.append(json.loads(raw))
                    except ValueError:
                        server.bodies.append({"raw": raw.decode("utf-8", "replace")})
                    status = server.script.get(n, server.status)
                    if status < 300 and server.dedupe and server.accepted[key]:
                        status = 409
                    if 200 <= status < 300:
                        server.accepted[key] += 1
                pause = server.first_delay if first and server.first_delay else server.delay
                if pause:
                    time.sleep(pause)
                doc: dict[str, Any] = {"status": status}
                if server.echo:
                    # Last sent first: the credentials and custom headers come after httpx's defaults, and an
                    # error body is cut short where it is quoted.
                    doc["you_sent"] = dict(reversed(self.headers.items()))
                body = json.dumps(doc).encode()
                self.send_response(status)
                for name, value in server.reply_headers.get(n, {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/compensations"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> EffectServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def total(self) -> int:
        return sum(self.requests.values())


# --- data ---------------------------------------------------------------------------------------------


def dead_letter_rows(
    n: int, date: str = "2026-11-20", groups: tuple[str, ...] = ("order-consumer",)
) -> list[dict[str, Any]]:
    base = dt.datetime.fromisoformat(date).replace(hour=2, tzinfo=dt.UTC)
    rows = []
    for i in range(n):
        group = groups[i % len(groups)]
        rows.append(
            {
                "consumer_group": group,
                "msg_id": f"7F00000100002A9F0000{date.replace('-', '')}{i:06X}",
                "original_topic": {"order-consumer": "orders", "pay-consumer": "payments"}.get(group, "audit"),
                "dlq_at": base + dt.timedelta(seconds=i),
                "reconsume_times": 16,
                "keys": f"ORD-{100000 + i} trace-{i}",
                "tags": "TagA",
                # as reconstruction writes it under business_key {from: body, json_path: "$.orderId"}
                "business_key": f"O{100000 + i}",
                "body": json.dumps({"orderId": f"O{100000 + i}", "amount": i}),
                "compensation_handler": None,
                "attribution": ["line"],
                "compensable": True,
                "review_reason": None,
            }
        )
    return rows


def write_partition(warehouse: pathlib.Path, date: str, rows: list[dict[str, Any]]) -> pathlib.Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketmq_retry import contract

    path = contract.partition_dir(warehouse, "dead_letters", date)
    path.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("consumer_group", pa.string()),
            ("msg_id", pa.string()),
            ("original_topic", pa.string()),
            ("dlq_at", pa.timestamp("us", tz="UTC")),
            ("reconsume_times", pa.int32()),
            ("keys", pa.string()),
            ("tags", pa.string()),
            ("business_key", pa.string()),
            ("body", pa.string()),
            ("compensation_handler", pa.string()),
            ("attribution", pa.list_(pa.string())),
            ("compensable", pa.bool_()),
            ("review_reason", pa.string()),
        ]
    )
    # the columns compensation reads, a subset of the contract's in its order (a rename there fails here)
    assert schema.names == [c for c in contract.columns("dead_letters") if c in schema.names]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path / "part-00000.parquet")
    (path / "_SUCCESS").touch()
    return path


def write_config(path: pathlib.Path, compensation: dict[str, Any]) -> pathlib.Path:
    path.write_text(yaml.safe_dump({"compensation": compensation}), encoding="utf-8")
    return path


# --- what worker processes run ------------------------------------------------------------------------


def race_worker(batch: dict[str, Any], run_id: str, config: str, barrier: Any, results: Any) -> None:
    """One competing worker: wait for the others, then compensate the same batch they all got."""
    from rocketmq_retry.compensation.batches import compensate_batch

    barrier.wait(timeout=240)
    results.put(compensate_batch(batch, run_id, config))


def solo_worker(batch: dict[str, Any], run_id: str, config: str, results: Any) -> None:
    """One worker process compensating a batch; its summary goes to ``results``."""
    from rocketmq_retry.compensation.batches import compensate_batch

    results.put(compensate_batch(batch, run_id, config))


def die_before_complete_worker(batch: dict[str, Any], run_id: str, config: str, env: dict[str, str]) -> None:
    """A worker whose process dies right after a handler's effect, before the ledger records DONE.
    (``env``: a forkserver child has the environment of the server, not of the test that starts it.)"""
    os.environ.update(env)
    from rocketmq_retry.compensation.batches import compensate_batch
    from rocketmq_retry.compensation.ledger import Ledger

    def die(*_args: Any, **_kwargs: Any) -> bool:
        os._exit(70)

    Ledger.complete = die  # type: ignore[method-assign]
    compensate_batch(batch, run_id, config)


def crash_worker(batch: dict[str, Any], run_id: str, config: str, hang_marker: str) -> None:
    """A worker that claims one dead letter and then hangs inside its handler until it is killed."""
    os.environ["RMQ_TEST_HANG_MARKER"] = hang_marker
    from rocketmq_retry.compensation.batches import compensate_batch

    compensate_batch(batch, run_id, config)


def effect_file() -> pathlib.Path:
    return pathlib.Path(os.environ["RMQ_TEST_EFFECTS"])


def record_effect(letter: Any) -> str:
    """A python handler whose effect is a line appended to $RMQ_TEST_EFFECTS (O_APPEND: safe across processes).
    With $RMQ_TEST_HANG_MARKER set it announces its claim and hangs before the effect, like a crashing worker."""
    marker = os.environ.get("RMQ_TEST_HANG_MARKER")
    if marker:
        # renamed into place: the test polls for the marker and kills this process as soon as it sees it, which
        # could otherwise be between the file's creation and its write (an empty marker)
        staged = pathlib.Path(marker + ".part")
        staged.write_text(f"{letter.consumer_group}/{letter.msg_id}\n")
        os.replace(staged, marker)
        time.sleep(600)
    fd = os.open(effect_file(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{letter.consumer_group}/{letter.msg_id}\n".encode())
    finally:
        os.close(fd)
    return "recorded"


def effects() -> Counter[str]:
    path = effect_file()
    return Counter(path.read_text().split()) if path.exists() else Counter()


def flaky(letter: Any) -> str:
    """Fails while $RMQ_TEST_FLAKY is set, then records the effect."""
    if os.environ.get("RMQ_TEST_FLAKY"):
        raise RuntimeError("downstream unavailable")
    return record_effect(letter)


def record_key(letter: Any) -> str:
    """A python handler whose effect is the letter's idempotency key appended to $RMQ_TEST_EFFECTS."""
    fd = os.open(effect_file(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{letter.idempotency_key}\n".encode())
    finally:
        os.close(fd)
    return "recorded"


def sleepy(letter: Any) -> str:
    """A python handler that takes $RMQ_TEST_SLEEP seconds (default 5)."""
    time.sleep(float(os.environ.get("RMQ_TEST_SLEEP", "5")))
    return "slept"


def refuse(letter: Any) -> str:
    from rocketmq_retry.compensation.model import PermanentFailure

    raise PermanentFailure(f"order of {letter.business_key} no longer exists")


def broken(letter: Any) -> str:
    """A python handler with a bug: every call raises ValueError."""
    raise ValueError(f"cannot parse amount of {letter.business_key}")


def needs_body(letter: Any) -> str:
    """A python handler that cannot act without the message body, and says so with its reason."""
    from rocketmq_retry.compensation.model import PermanentFailure, Reason

    if letter.body is None:
        raise PermanentFailure("the logs carried no body for this dead letter", reason=Reason.BODY_MISSING)
    return record_effect(letter)
