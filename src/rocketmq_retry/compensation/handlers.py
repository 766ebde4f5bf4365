"""Compensation handlers (DESIGN §6 ``compensation.handlers``): ``python``, ``http`` and ``sql``.

A handler turns one dead letter into one business effect. It returns a short result for the ledger, raises
``PermanentFailure`` when retrying cannot help (the row goes to GAVE_UP) and anything else for a transient
failure (the row goes to FAILED and a later run or re-drive tries again). Every effect carries the dead
letter's idempotency key, so that the receiver can drop a duplicate when a worker dies between the effect and
recording DONE, or a frozen worker loses its lease mid-call (docs/compensation.md "Guarantees").

Every call is bounded by the handler's ``timeout_seconds``: per HTTP request, per SQL statement and connect,
and for a whole python call. Every text a handler produces passes through ``redact`` first, so credentials of
its URL or connection never reach the ledger, a log or a terminal.

A handler that names an Airflow connection (``conn_id``) is handed a ``Connections`` lookup by whoever runs it
(``airflow/connections.py`` in a task, the console script when Airflow is installed): this package never imports
Airflow, and the connection is read when the handler is first built, never at import or DAG-parse time.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import importlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from rocketmq_retry.compensation.model import DeadLetter, PermanentFailure, Reason, RetryableFailure
from rocketmq_retry.compensation.redact import (
    basic_auth_secrets,
    redact,
    redact_url,
    secret_variants,
    split_userinfo,
)
from rocketmq_retry.config import HandlerConfig
from rocketmq_retry.errors import ConfigError

log = logging.getLogger("rocketmq_retry.compensation")

# Statuses worth another try: the receiver is overloaded (429, 503), timed the request out (408) or failed (5xx).
RETRY_STATUSES = frozenset({408, 429})


class Connection(Protocol):
    """What a handler reads of an Airflow connection (the fields of Airflow's ``Connection``)."""

    conn_type: str | None
    host: str | None
    schema: str | None
    port: int | None
    login: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...

    def get_uri(self) -> str: ...


# conn_id -> its connection; raises ConfigError when there is none.
Connections = Callable[[str], Connection]


class Handler(Protocol):
    name: str
    rate_per_second: float | None

    def __call__(self, letter: DeadLetter) -> str | None: ...

    def close(self) -> None: ...

    def redact(self, text: str | None) -> str | None: ...


class _Secrets:
    """The literal secrets a handler knows; ``redact`` masks them and the generic patterns."""

    _secrets: frozenset[str] = frozenset()

    def _keep_secret(self, values: Iterable[str]) -> None:
        self._secrets = self._secrets | frozenset(values)

    def redact(self, text: str | None) -> str | None:
        return redact(text, self._secrets)


def log_only(letter: DeadLetter) -> str:
    """The default handler: records that the dead letter was seen, changes nothing anywhere."""
    log.info(
        "dead letter %s/%s (topic %s, business key %s, %s reconsumes): log-only, no business effect",
        letter.consumer_group,
        letter.msg_id,
        letter.original_topic,
        letter.business_key,
        letter.reconsume_times,
    )
    return "logged"


def load_callable(dotted: str) -> Callable[..., Any]:
    """``pkg.module:function`` (or ``pkg.module.function``)."""
    module_name, sep, attr = dotted.partition(":")
    if not sep:
        module_name, _, attr = dotted.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"handler callable {dotted!r}: use 'package.module:function'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"handler callable {dotted!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"handler callable {dotted!r}: {module_name!r} has no {attr!r}")
    if not callable(target):
        raise ConfigError(f"handler callable {dotted!r} is not callable")
    return target


class PythonHandler(_Secrets):
    """``function(letter)`` in a thread of its own, given at most ``timeout_seconds``. A call that exceeds it is
    a transient failure; Python cannot stop a thread, so the call is abandoned (a daemon thread) and may still
    finish later: the callable must be idempotent on ``letter.idempotency_key`` (docs/compensation.md)."""

    def __init__(self, name: str, cfg: HandlerConfig) -> None:
        self.name = name
        self.rate_per_second = cfg.rate_per_second
        self.timeout_seconds = cfg.timeout_seconds
        assert cfg.callable
        self._fn = load_callable(cfg.callable)

    def __call__(self, letter: DeadLetter) -> str | None:
        outcome: dict[str, Any] = {}
        finished = threading.Event()

        def call() -> None:
            try:
                outcome["result"] = self._fn(letter)
            except BaseException as exc:  # handed to the worker's thread, which classifies it
                outcome["error"] = exc
            finally:
                finished.set()

        thread = threading.Thread(target=call, name=f"compensation-{self.name}-{letter.msg_id}", daemon=True)
        thread.start()
        if not finished.wait(self.timeout_seconds):
            raise RetryableFailure(
                f"python handler {self.name!r} did not return within its time limit of {self.timeout_seconds:g}s "
                "(the call was abandoned and may still complete; the next claim passes the same idempotency key)",
                reason=Reason.TIMEOUT,
            )
        if "error" in outcome:
            raise outcome["error"]
        result = outcome.get("result")
        return None if result is None else str(result)

    def close(self) -> None:
        pass


def _connection(cfg: HandlerConfig, connections: Connections | None) -> Connection:
    assert cfg.conn_id
    if connections is None:
        raise ConfigError(
            f"handler names the Airflow connection {cfg.conn_id!r}, and Airflow's connections cannot be read here "
            "(Airflow is not installed): give the handler a url instead, or run compensation in Airflow"
        )
    return connections(cfg.conn_id)


def http_target(
    cfg: HandlerConfig, connections: Connections | None = None
) -> tuple[str, dict[str, str], tuple[str, str] | None]:
    """(url, extra headers, basic auth). With ``conn_id`` the connection gives scheme, host, port, login and
    ``extra.headers``; ``url`` is then a path (or full URL) joined to it. Credentials in the URL's userinfo
    become the basic auth (unless the connection gives one) and leave the URL."""
    if not cfg.conn_id:
        assert cfg.url
        url, auth = split_userinfo(cfg.url)
        return url, {}, auth
    conn = _connection(cfg, connections)
    host = conn.host or ""
    if "://" in host:
        base = host.rstrip("/")
    else:
        scheme = conn.schema or "http"
        base = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
    extra = conn.extra_dejson or {}
    headers = {str(k): str(v) for k, v in (extra.get("headers") or {}).items()}
    endpoint = extra.get("endpoint") or ""
    url = cfg.url or endpoint
    full = url if url.startswith(("http://", "https://")) else base + ("/" + url.lstrip("/") if url else "")
    auth = (conn.login, conn.password or "") if conn.login else None
    full, url_auth = split_userinfo(full)
    return full, headers, auth or url_auth


def retry_after_seconds(value: str | None, now: Callable[[], dt.datetime] | None = None) -> float | None:
    """A ``Retry-After`` header (RFC 9110 §10.2.3) in seconds: delta-seconds or an HTTP-date (a date in the
    past means "now"). None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = now() if now else dt.datetime.now(dt.UTC)
    return max(0.0, (when - current).total_seconds())


def status_reason(status: int) -> Reason:
    """The reason of an HTTP answer that is not a success (2xx, 409)."""
    if status == 429:
        return Reason.HTTP_429
    if status == 408:
        return Reason.HTTP_408
    if 400 <= status < 500:
        return Reason.HTTP_4XX
    return Reason.HTTP_5XX  # 5xx, and anything outside the classes RFC 9110 defines: the receiver failed


def transport_reason(exc: BaseException) -> Reason:
    """A transport failure's reason from the exception chain's types: httpx wraps the socket's
    ``ConnectionRefusedError`` (ECONNREFUSED) in ``ConnectError``; any other connect or transport failure (DNS,
    TLS, a reset) is a connection error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return Reason.CONNECTION_REFUSED
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return Reason.CONNECTION_ERROR


class HttpHandler(_Secrets):
    """POST the dead letter as JSON with an ``Idempotency-Key`` header. 2xx and 409 (the receiver already has
    it) are done; 408 and 429 (the receiver asks to come back), 5xx, timeouts and connection errors are retried
    with exponential back-off, waiting at least what a ``Retry-After`` asks (up to ``retry_after_max_seconds``);
    any other 4xx is permanent; still failing after the last try, the row is FAILED for a later run."""

    def __init__(
        self,
        name: str,
        cfg: HandlerConfig,
        connections: Connections | None = None,
        *,
        max_tries: int | None = None,
        backoff_seconds: float | None = None,
        backoff_max_seconds: float | None = None,
        retry_after_max_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        self.name = name
        self.rate_per_second = cfg.rate_per_second
        self.url, self._headers, auth = http_target(cfg, connections)
        # Everything that authenticates: the basic-auth password (and its header form), the URL's own userinfo
        # in whatever form the config wrote it, every header a connection configures and known secret headers.
        secrets: set[str] = set()
        if auth:
            secrets |= basic_auth_secrets(*auth)
        secrets |= secret_variants(*self._headers.values())
        self._keep_secret(secrets)
        self.display_url = self.redact(redact_url(self.url)) or ""
        # Explicit arguments (tests) win over the handler's config.
        self.max_tries = max(1, cfg.max_tries if max_tries is None else max_tries)
        self.backoff_seconds = cfg.backoff_seconds if backoff_seconds is None else backoff_seconds
        self.backoff_max_seconds = cfg.backoff_max_seconds if backoff_max_seconds is None else backoff_max_seconds
        self.retry_after_max_seconds = (
            cfg.retry_after_max_seconds if retry_after_max_seconds is None else retry_after_max_seconds
        )
        self._sleep = sleep
        self._client = httpx.Client(timeout=cfg.timeout_seconds, auth=auth)

    def _pause(self, attempt: int, retry_after: float | None) -> float:
        """Exponential back-off, stretched to what the receiver's Retry-After asks (within the cap)."""
        pause = min(self.backoff_max_seconds, self.backoff_seconds * 2 ** (attempt - 1))
        if retry_after is not None:
            pause = max(pause, min(retry_after, self.retry_after_max_seconds))
        return pause

    def __call__(self, letter: DeadLetter) -> str | None:
        import httpx

        headers = {**self._headers, "Content-Type": "application/json", "Idempotency-Key": letter.idempotency_key}
        payload = json.dumps(letter.to_json(), ensure_ascii=False).encode("utf-8")
        last = ""
        reason = Reason.CONNECTION_ERROR
        for attempt in range(1, self.max_tries + 1):
            retry_after: float | None = None
            try:
                response = self._client.post(self.url, content=payload, headers=headers)
            except httpx.TimeoutException as exc:
                last = f"timeout after {self._client.timeout.read}s ({type(exc).__name__})"
                reason = Reason.TIMEOUT
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {self.redact(str(exc))}"
                reason = transport_reason(exc)
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return f"HTTP {status}"
                if status == 409:
                    return "HTTP 409 (receiver already had this idempotency key)"
                snippet = self.redact(response.text[:200].strip())
                reason = status_reason(status)
                if 400 <= status < 500 and status not in RETRY_STATUSES:
                    raise PermanentFailure(f"HTTP {status} from {self.display_url}: {snippet}", reason=reason)
                last = f"HTTP {status} from {self.display_url}: {snippet}"
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            if attempt < self.max_tries:
                self._sleep(self._pause(attempt, retry_after))
        # the last try's reason: what the receiver (or the network) said when the row was given up for this run
        raise RetryableFailure(f"{last} (after {self.max_tries} tries)", reason=reason)

    def close(self) -> None:
        self._client.close()


def sql_url(cfg: HandlerConfig, connections: Connections | None = None) -> str:
    """SQLAlchemy URL from ``url`` or from an Airflow connection (postgres, sqlite, or anything whose URI
    SQLAlchemy reads)."""
    if not cfg.conn_id:
        assert cfg.url
        return cfg.url
    from sqlalchemy.engine import URL

    conn = _connection(cfg, connections)
    kind = (conn.conn_type or "").lower()
    if kind in ("postgres", "postgresql"):
        return URL.create(
            "postgresql+psycopg",
            username=conn.login or None,
            password=conn.password or None,
            host=conn.host or None,
            port=conn.port or None,
            database=conn.schema or None,
        ).render_as_string(hide_password=False)
    if kind == "sqlite":
        return f"sqlite:///{conn.host}"
    return str(conn.get_uri())


class SqlHandler(_Secrets):
    """INSERT the dead letter into ``table`` (created with the columns below if it does not exist).
    ``idempotency_key`` is the table's primary key, so a repeated insert is a no-op, never a second row.
    Connecting and every statement are bounded by ``timeout_seconds`` (PostgreSQL ``connect_timeout`` and
    ``statement_timeout``, SQLite's busy ``timeout``): a locked or hung database is a transient failure."""

    def __init__(self, name: str, cfg: HandlerConfig, connections: Connections | None = None) -> None:
        from sqlalchemy import Column, Integer, MetaData, String, Table, Text, inspect
        from sqlalchemy.engine import make_url

        from rocketmq_retry.compensation.database import create_ledger_engine

        self.name = name
        self.rate_per_second = cfg.rate_per_second
        self.timeout_seconds = cfg.timeout_seconds
        assert cfg.table
        schema, _, table_name = cfg.table.rpartition(".")
        url = sql_url(cfg, connections)
        self._keep_secret(secret_variants(make_url(url).password))
        self.engine = create_ledger_engine(url, timeout=cfg.timeout_seconds)
        md = MetaData(schema=schema or None)
        try:
            if inspect(self.engine).has_table(table_name, schema=schema or None):
                self.table = Table(table_name, md, autoload_with=self.engine)
            else:
                self.table = Table(
                    table_name,
                    md,
                    Column("idempotency_key", String(36), primary_key=True),
                    Column("consumer_group", String(255), nullable=False),
                    Column("msg_id", String(128), nullable=False),
                    Column("original_topic", String(255)),
                    Column("dlq_date", String(10)),
                    Column("dlq_at", String(40)),
                    Column("reconsume_times", Integer),
                    Column("keys", Text),
                    Column("tags", Text),
                    Column("business_key", String(512)),
                    Column("body", Text),
                    Column("created_at", String(40)),
                )
                md.create_all(self.engine, checkfirst=True)
        except Exception:
            self.engine.dispose()
            raise
        if "idempotency_key" not in self.table.c:
            self.engine.dispose()
            raise ConfigError(f"sql handler {name!r}: table {cfg.table!r} needs an idempotency_key column")

    def __call__(self, letter: DeadLetter) -> str | None:
        import datetime as dt

        from sqlalchemy import insert
        from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

        doc = letter.to_json()
        doc["created_at"] = dt.datetime.now(dt.UTC).isoformat()
        row = {k: v for k, v in doc.items() if k in self.table.c}
        dialect = self.engine.dialect.name
        if dialect in ("sqlite", "postgresql"):
            if dialect == "sqlite":
                from sqlalchemy.dialects.sqlite import insert as dialect_insert
            else:
                from sqlalchemy.dialects.postgresql import insert as dialect_insert
            # RETURNING tells "inserted" from "already there"; psycopg reports rowcount -1 for INSERTs here.
            stmt: Any = (
                dialect_insert(self.table)
                .values(row)
                .on_conflict_do_nothing(index_elements=["idempotency_key"])
                .returning(self.table.c.idempotency_key)
            )
        else:
            stmt = insert(self.table).values(row)
        try:
            with self.engine.begin() as conn:
                result = conn.execute(stmt)
                inserted = len(result.all()) if result.returns_rows else result.rowcount
        except IntegrityError as exc:
            if "idempotency_key" in str(exc.orig).lower() or "unique" in str(exc.orig).lower():
                return "row already present"
            raise PermanentFailure(
                f"insert into {self.table.fullname} rejected: {self.redact(str(exc.orig))}", reason=Reason.DB_REJECTED
            ) from None
        except OperationalError as exc:  # includes a statement cancelled by statement_timeout, a busy SQLite file
            raise RetryableFailure(
                f"database unavailable or slower than {self.timeout_seconds:g}s: {self.redact(str(exc.orig))}",
                reason=Reason.DB_UNAVAILABLE,
            ) from None
        except DBAPIError as exc:
            raise PermanentFailure(
                f"insert into {self.table.fullname} failed: {self.redact(str(exc.orig))}", reason=Reason.DB_ERROR
            ) from None
        return f"inserted into {self.table.fullname}" if inserted else "row already present"

    def close(self) -> None:
        self.engine.dispose()


def build_handler(name: str, cfg: HandlerConfig, connections: Connections | None = None) -> Handler:
    """``connections``: how a ``conn_id`` is looked up (None: no Airflow here, a ``conn_id`` is a config error)."""
    if cfg.type == "python":
        return PythonHandler(name, cfg)
    if cfg.type == "http":
        return HttpHandler(name, cfg, connections)
    return SqlHandler(name, cfg, connections)
