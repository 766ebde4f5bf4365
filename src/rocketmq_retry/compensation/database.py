"""The ledger's database (DESIGN §6 ``compensation.ledger_url``): the URL, an engine tuned for short write
transactions from many processes (and bounded by a handler's timeout), the database's clock that every lease is
read from, and the Alembic migrations that every writer runs under a lock (docs/compensation.md "Migrations")."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import math
import os
import pathlib
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy.engine import make_url

from rocketmq_retry.compensation.schema import VERSION_TABLE
from rocketmq_retry.errors import ConfigError

log = logging.getLogger(__name__)

MIGRATIONS_DIR = pathlib.Path(__file__).resolve().parent / "migrations"
# Any constant will do; it only has to be the same for every process that migrates this ledger.
_PG_MIGRATION_LOCK = 0x524D5152_4C454447 & 0x7FFFFFFFFFFFFFFF


def resolve_ledger_url(template: str, warehouse: str | os.PathLike[str] | None) -> str:
    """Fill ``{warehouse}`` (DESIGN §6) with the absolute warehouse path."""
    if "{warehouse}" in template:
        if warehouse is None:
            raise ConfigError(
                f"compensation.ledger_url {template!r} names {{warehouse}}: pass --warehouse (or set ledger_url)"
            )
        template = template.replace("{warehouse}", str(pathlib.Path(warehouse).resolve()))
    return template


def create_ledger_engine(url: str, *, timeout: float | None = None) -> Engine:
    """An engine tuned for many short write transactions from several processes. With ``timeout`` (the sql
    handler's ``timeout_seconds``) connecting and every statement are bounded by it: SQLite waits that long for
    a lock, PostgreSQL gets ``connect_timeout`` and ``statement_timeout``."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            shown = parsed.render_as_string(hide_password=True)
            raise ConfigError(f"ledger_url {shown!r}: an SQLite ledger must be a file so that every worker sees it")
        pathlib.Path(database).parent.mkdir(parents=True, exist_ok=True)
        busy = 60.0 if timeout is None else timeout
        engine = create_engine(url, connect_args={"timeout": busy})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # WAL lets readers (list/show, state checks) proceed while a worker writes.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
            # Durable across process crashes (what leases are about); a power loss may forget the last commits,
            # and then the idempotency key keeps the repeated effect harmless.
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    if timeout is None or parsed.get_backend_name() != "postgresql":
        # No pre-ping: it would add a round trip to every claim; a dropped connection fails one transaction.
        return create_engine(parsed, pool_recycle=1800)
    # libpq counts connect_timeout in whole seconds and treats anything under 2 as 2.
    engine = create_engine(parsed, pool_recycle=1800, connect_args={"connect_timeout": max(2, math.ceil(timeout))})
    statement_ms = max(1, int(timeout * 1000))

    @event.listens_for(engine, "connect")
    def _pg_statement_timeout(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"SET statement_timeout = {statement_ms}")
        cur.close()
        dbapi_conn.commit()  # a session setting, kept across the pool's rollbacks only once committed

    return engine


def database_now(conn: Any) -> dt.datetime:
    """The database server's current time (aware UTC), the one clock every worker shares."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        value = conn.execute(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar_one()
        return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)
    if dialect == "postgresql":
        # clock_timestamp(), not now(): now() is the transaction's start, stale by the transaction's age.
        value = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
    else:
        value = conn.execute(select(func.current_timestamp())).scalar_one()
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _alembic_config(connection: Any) -> Any:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    cfg = _alembic_config(None)
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    lock_path = pathlib.Path(str(engine.url.database) + ".migrate-lock")
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str | None]:
    """Bring the ledger to ``revision``; returns (before, after). Safe when several workers start at once:
    the first migrates under a lock, the others find the work done."""
    from alembic import command

    before = current_revision(engine)
    target = head_revision() if revision == "head" else revision
    if before == target:
        return before, before
    lock = _sqlite_file_lock(engine) if engine.dialect.name == "sqlite" else contextlib.nullcontext()
    with lock, engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        command.upgrade(_alembic_config(conn), revision)
    after = current_revision(engine)
    if before != after:
        log.info("compensation ledger migrated from %s to %s", before or "empty", after)
    return before, after
