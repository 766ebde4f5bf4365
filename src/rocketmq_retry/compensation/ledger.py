"""The compensation ledger: one row per (consumer_group, msg_id), in any SQLAlchemy database.

Every state change is one conditional ``UPDATE`` (or ``INSERT … ON CONFLICT DO NOTHING``) whose ``WHERE``
clause states the transition it makes, so two workers can never both win: the database decides. A claim
carries a lease; a worker that dies keeps its claim only until the lease expires, then any worker may take
it again. Outcomes are fenced by the claim's token, so a worker whose lease was taken over cannot overwrite
the newer claim's result. A worker keeps a claim alive while its handler runs by extending the lease
(``extend``, the heartbeat). Every lease time is the database's own clock, read in the transaction that uses
it: workers whose clocks disagree still agree on whose lease is live.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Engine, and_, case, func, insert, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from rocketmq_retry.compensation.database import (
    create_ledger_engine,
    current_revision,
    database_now,
    head_revision,
    upgrade,
)
from rocketmq_retry.compensation.model import (
    REOPENABLE,
    Claim,
    LedgerRow,
    Reason,
    Registration,
    State,
    normalise_reason,
)
from rocketmq_retry.compensation.redact import redact
from rocketmq_retry.compensation.schema import TABLE_NAME, ledger
from rocketmq_retry.errors import UserError

log = logging.getLogger(__name__)

_INSERT_CHUNK = 500


def _claimable(now: dt.datetime, max_attempts: int) -> Any:
    t = ledger.c
    return and_(
        t.attempts < max_attempts,
        or_(
            t.state.in_([State.PENDING.value, State.FAILED.value]),
            and_(t.state == State.CLAIMED.value, t.lease_expires_at < now),
        ),
    )


def _key(consumer_group: str, msg_id: str) -> Any:
    return and_(ledger.c.consumer_group == consumer_group, ledger.c.msg_id == msg_id)


def _truncate(value: str | None, limit: int = 4000) -> str | None:
    if value is None or len(value) <= limit:
        return value
    return value[: limit - 1] + "…"


def _message(value: str | None) -> str | None:
    """``last_error`` / ``result`` as stored. The last line of defence: whatever a handler or caller wrote, no
    URL userinfo or secret header value reaches the ledger (handlers already mask their own secrets)."""
    return _truncate(redact(value))


def in_range(stmt: Any, date_from: str | None, date_to: str | None, consumer_group: str | None) -> Any:
    """``stmt`` kept to the ledger rows whose dead-letter date is in the range (an empty bound: no bound), of one
    consumer group or all: the one reading of a range the ledger's queries and the pages' share."""
    t = ledger.c
    if date_from:
        stmt = stmt.where(t.dlq_date >= date_from)
    if date_to:
        stmt = stmt.where(t.dlq_date <= date_to)
    if consumer_group:
        stmt = stmt.where(t.consumer_group == consumer_group)
    return stmt


class Ledger:
    def __init__(
        self,
        engine: Engine,
        *,
        lease_seconds: int = 300,
        max_attempts: int = 5,
        max_loops: int | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        """``clock`` is a test hook standing in for the database's clock; without it (always, in production)
        every lease time is the database server's. ``max_loops`` (compensation.max_loops): a dead letter whose
        business key was compensated on that many earlier dates is registered HELD_FOR_REVIEW; None counts the
        loops and holds nothing."""
        self.engine = engine
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.max_loops = max_loops
        self.clock = clock

    def _now(self, conn: Any) -> dt.datetime:
        return self.clock() if self.clock is not None else database_now(conn)

    def now(self) -> dt.datetime:
        """The ledger's time: the database server's clock (or the test clock)."""
        if self.clock is not None:
            return self.clock()
        with self.engine.connect() as conn:
            return database_now(conn)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        lease_seconds: int = 300,
        max_attempts: int = 5,
        max_loops: int | None = None,
        migrate: bool = True,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> Ledger:
        engine = create_ledger_engine(url)
        try:
            if migrate:
                upgrade(engine)
            elif current_revision(engine) != head_revision():
                raise UserError(
                    f"compensation ledger at {engine.url!r} is not at revision {head_revision()}: run "
                    "'rocketmq-retry compensation migrate' first (opening it without migrating never changes it)"
                )
        except Exception as exc:
            engine.dispose()
            if isinstance(exc, UserError):
                raise
            from sqlalchemy.exc import OperationalError

            if isinstance(exc, OperationalError):
                raise UserError(f"cannot open compensation ledger {engine.url!r}: {exc.orig}") from None
            raise
        return cls(engine, lease_seconds=lease_seconds, max_attempts=max_attempts, max_loops=max_loops, clock=clock)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- registration -------------------------------------------------------------------------

    def register(self, entries: Iterable[Registration]) -> int:
        """Insert dead letters not yet in the ledger; existing rows are left exactly as they are.
        Returns how many rows were new.

        A new row whose business key was compensated (DONE) on ``loops`` earlier dates in its group is a re-drive
        loop: it is registered with that count, and HELD_FOR_REVIEW (reason ``redrive_loop``) once the count
        reaches ``max_loops``, so no handler runs for it until an operator re-drives it."""
        entries = list(entries)
        now = self.now()
        earlier = self._compensated_dates(entries)
        rows = []
        for e in entries:
            business_key = _truncate(e.business_key, 512)
            loops = sum(1 for d in earlier.get((e.consumer_group, business_key), ()) if e.dlq_date and d < e.dlq_date)
            held = self.max_loops is not None and loops >= self.max_loops
            rows.append(
                {
                    "consumer_group": e.consumer_group,
                    "msg_id": e.msg_id,
                    # Even without a handler the row starts PENDING: the batch that reaches it records SKIPPED
                    # through a claim, so a run reports what it skipped and a re-run reports it as already skipped.
                    "state": State.HELD_FOR_REVIEW.value if held else State.PENDING.value,
                    "attempts": 0,
                    "handler": e.handler,
                    "business_key": business_key,
                    "first_seen": now,
                    "dlq_date": e.dlq_date,
                    "original_topic": e.original_topic,
                    "redrives": 0,
                    "loops": loops,
                    "reason": Reason.REDRIVE_LOOP.value if held else None,
                    "last_error": (
                        f"re-drive loop: business key {business_key!r} was compensated on {loops} earlier date(s) "
                        f"(compensation.max_loops {self.max_loops}); held for review"
                        if held
                        else None
                    ),
                }
            )
        inserted = 0
        dialect = self.engine.dialect.name
        for start in range(0, len(rows), _INSERT_CHUNK):
            chunk = rows[start : start + _INSERT_CHUNK]
            if dialect in ("sqlite", "postgresql"):
                if dialect == "sqlite":
                    from sqlalchemy.dialects.sqlite import insert as dialect_insert
                else:
                    from sqlalchemy.dialects.postgresql import insert as dialect_insert
                # RETURNING counts the rows really inserted; executemany's rowcount is -1 on some drivers.
                stmt = (
                    dialect_insert(ledger)
                    .values(chunk)
                    .on_conflict_do_nothing(index_elements=["consumer_group", "msg_id"])
                    .returning(ledger.c.msg_id)
                )
                with self.engine.begin() as conn:
                    inserted += len(conn.execute(stmt).all())
            else:  # other databases: one row at a time, a duplicate key means "already there"
                for row in chunk:
                    try:
                        with self.engine.begin() as conn:
                            conn.execute(insert(ledger), row)
                        inserted += 1
                    except IntegrityError:
                        pass
        return inserted

    def _compensated_dates(self, entries: Sequence[Registration]) -> dict[tuple[str, str], set[str]]:
        """(consumer_group, business_key) -> the dead-letter dates on which a row of that key is DONE."""
        wanted = sorted({(e.consumer_group, _truncate(e.business_key, 512)) for e in entries if e.business_key})
        out: dict[tuple[str, str], set[str]] = {}
        t = ledger.c
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), _INSERT_CHUNK):
                chunk = wanted[start : start + _INSERT_CHUNK]
                stmt = (
                    select(t.consumer_group, t.business_key, t.dlq_date)
                    .where(tuple_(t.consumer_group, t.business_key).in_(chunk), t.state == State.DONE.value)
                    .distinct()
                )
                for group, key, date in conn.execute(stmt):
                    if date:
                        out.setdefault((group, key), set()).add(date)
        return out

    # --- claiming -----------------------------------------------------------------------------

    def claim(
        self,
        consumer_group: str,
        msg_id: str,
        *,
        worker: str,
        run_id: str | None = None,
        handler: str | None = None,
    ) -> Claim | None:
        """Atomically take the row if it is claimable (PENDING, FAILED, or CLAIMED with an expired lease,
        and attempts left). None: someone else holds it, or it is finished."""
        claims, _ = self.claim_many([(consumer_group, msg_id)], worker=worker, run_id=run_id, handler=handler)
        return claims.get((consumer_group, msg_id))

    def claim_many(
        self,
        keys: Sequence[tuple[str, str]],
        *,
        worker: str,
        run_id: str | None = None,
        handler: str | None = None,
    ) -> tuple[dict[tuple[str, str], Claim], dict[tuple[str, str], LedgerRow]]:
        """Claim every claimable row of ``keys`` in ONE conditional UPDATE (one commit for a chunk instead of
        one per message). Returns (claims won, current rows of the keys not won). On PostgreSQL the rows are
        picked ``FOR UPDATE SKIP LOCKED``: racing workers split a chunk instead of waiting or deadlocking;
        SQLite serialises writers, so its plain conditional UPDATE is already atomic."""
        if not keys:
            return {}, {}
        t = ledger.c
        token = uuid.uuid4().hex
        wanted = tuple_(t.consumer_group, t.msg_id).in_([tuple(k) for k in keys])
        with self.engine.begin() as conn:
            # Read in the claiming transaction, right before the UPDATE: the database's time, not this worker's.
            now = self._now(conn)
            expires = now + dt.timedelta(seconds=self.lease_seconds)
            values: dict[str, Any] = {
                "state": State.CLAIMED.value,
                "attempts": t.attempts + 1,
                "claimed_by": _truncate(worker, 255),
                "claim_token": token,
                "lease_expires_at": expires,
                "last_attempt_at": now,
                "airflow_run_id": run_id,
            }
            if handler is not None:
                values["handler"] = handler
            if self.engine.dialect.name == "postgresql":
                lockable = (
                    select(t.consumer_group, t.msg_id)
                    .where(wanted, _claimable(now, self.max_attempts))
                    .order_by(t.consumer_group, t.msg_id)
                    .with_for_update(skip_locked=True)
                )
                target = tuple_(t.consumer_group, t.msg_id).in_(lockable)
            else:
                target = wanted
            stmt = (
                update(ledger)
                .where(target, _claimable(now, self.max_attempts))
                .values(**values)
                .returning(t.consumer_group, t.msg_id, t.attempts)
            )
            won = {(g, m): Claim(g, m, token, int(a), expires) for g, m, a in conn.execute(stmt)}
        lost = [k for k in keys if tuple(k) not in won]
        others = self.states(lost) if lost else {}
        exhausted = [
            k
            for k, row in others.items()
            if row.attempts >= self.max_attempts
            and (row.state == State.FAILED or (row.state == State.CLAIMED and not self._lease_live(row, now)))
        ]
        for k in exhausted:
            self._give_up_exhausted(*k, now)
        if exhausted:
            others.update(self.states(exhausted))
        return won, others

    @staticmethod
    def _lease_live(row: LedgerRow, now: dt.datetime) -> bool:
        return row.lease_expires_at is not None and row.lease_expires_at >= now

    def extend(self, claims: Iterable[Claim]) -> set[tuple[str, str]]:
        """The heartbeat: push the lease of each claim still held to the database's now + lease_seconds.
        Returns the keys whose claim is held no longer (finished, or taken over after it expired): those must
        not be recorded by this worker."""
        by_token: dict[str, list[tuple[str, str]]] = {}
        for c in claims:
            by_token.setdefault(c.token, []).append((c.consumer_group, c.msg_id))
        if not by_token:
            return set()
        t = ledger.c
        held: set[tuple[str, str]] = set()
        with self.engine.begin() as conn:
            now = self._now(conn)
            for token, keys in by_token.items():
                stmt = (
                    update(ledger)
                    .where(
                        tuple_(t.consumer_group, t.msg_id).in_(keys),
                        t.state == State.CLAIMED.value,
                        t.claim_token == token,
                    )
                    .values(lease_expires_at=now + dt.timedelta(seconds=self.lease_seconds))
                    .returning(t.consumer_group, t.msg_id)
                )
                held |= {(g, m) for g, m in conn.execute(stmt)}
        return {k for keys in by_token.values() for k in keys} - held

    def release(self, claim: Claim) -> bool:
        """Give a claim back unused (no handler ran): the attempt is not counted."""
        return self._finish(
            claim, state=State.PENDING.value, attempts=ledger.c.attempts - 1, claimed_by=None, quiet=True
        )

    def _give_up_exhausted(self, consumer_group: str, msg_id: str, now: dt.datetime) -> None:
        """A row out of attempts that is still FAILED (max_attempts was lowered) or CLAIMED with a dead lease
        (its last worker was lost) is finished: say so instead of leaving it looking in progress."""
        t = ledger.c
        stmt = (
            update(ledger)
            .where(
                _key(consumer_group, msg_id),
                t.attempts >= self.max_attempts,
                or_(t.state == State.FAILED.value, and_(t.state == State.CLAIMED.value, t.lease_expires_at < now)),
            )
            .values(
                state=State.GAVE_UP.value,
                claim_token=None,
                lease_expires_at=None,
                last_error=func.coalesce(t.last_error, "lease expired on the last attempt (worker lost?)"),
                # beside last_error: the failure it keeps, or the lost lease
                reason=case((t.last_error.is_(None), Reason.LEASE_EXPIRED.value), else_=t.reason),
            )
        )
        with self.engine.begin() as conn:
            conn.execute(stmt)

    def _finish(self, claim: Claim, *, quiet: bool = False, **values: Any) -> bool:
        stmt = (
            update(ledger)
            .where(
                _key(claim.consumer_group, claim.msg_id),
                ledger.c.state == State.CLAIMED.value,
                ledger.c.claim_token == claim.token,
            )
            .values(claim_token=None, lease_expires_at=None, **values)
        )
        with self.engine.begin() as conn:
            ok = conn.execute(stmt).rowcount == 1
        if not ok and not quiet:
            log.warning(
                "lost the claim on %s/%s before recording its outcome (lease of %ss expired?)",
                claim.consumer_group,
                claim.msg_id,
                self.lease_seconds,
            )
        return ok

    def complete(self, claim: Claim, result: str | None = None, *, handler: str | None = None) -> bool:
        """Record DONE. False if the claim was lost (its lease expired and another worker took it)."""
        extra = {"handler": handler} if handler else {}
        return self._finish(
            claim,
            state=State.DONE.value,
            completed_at=self.now(),
            last_error=None,
            result=_message(result),
            reason=Reason.OK.value,
            **extra,
        )

    def fail(
        self,
        claim: Claim,
        error: str,
        *,
        permanent: bool,
        handler: str | None = None,
        reason: str | None = None,
    ) -> State | None:
        """Record a failure: GAVE_UP if permanent or out of attempts, else FAILED (claimable again). ``reason``:
        its normalised Reason (``model.exception_reason`` of what the handler raised)."""
        exhausted = claim.attempt >= self.max_attempts
        state = State.GAVE_UP if permanent or exhausted else State.FAILED
        if exhausted and not permanent:
            error = f"gave up after {claim.attempt} attempts: {error}"
        extra = {"handler": handler} if handler else {}
        stored = normalise_reason(reason) if reason else None
        ok = self._finish(claim, state=state.value, last_error=_message(error), reason=stored, **extra)
        return state if ok else None

    def skip(self, claim: Claim, why: str, *, reason: str = Reason.ROUTE_MISSING.value) -> bool:
        return self._finish(claim, state=State.SKIPPED.value, last_error=_message(why), reason=reason)

    # --- reading ------------------------------------------------------------------------------

    def get(self, consumer_group: str, msg_id: str) -> LedgerRow | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(ledger).where(_key(consumer_group, msg_id))).mappings().first()
        return LedgerRow.from_mapping(row) if row else None

    def find(self, msg_id: str) -> list[LedgerRow]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(ledger).where(ledger.c.msg_id == msg_id)).mappings().all()
        return [LedgerRow.from_mapping(r) for r in rows]

    def rows(
        self,
        *,
        states: Sequence[State] | None = None,
        date_from: str | None = None,
        date_to: str | None = None,
        consumer_group: str | None = None,
        msg_ids: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[LedgerRow]:
        t = ledger.c
        stmt = select(ledger)
        if states:
            stmt = stmt.where(t.state.in_([s.value for s in states]))
        stmt = in_range(stmt, date_from, date_to, consumer_group)
        if msg_ids:
            stmt = stmt.where(t.msg_id.in_(list(msg_ids)))
        stmt = stmt.order_by(t.dlq_date, t.consumer_group, t.msg_id)
        if limit:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [LedgerRow.from_mapping(r) for r in conn.execute(stmt).mappings()]

    def states(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], LedgerRow]:
        """Ledger rows for ``keys`` (missing keys are absent from the answer)."""
        wanted = set(keys)
        groups = sorted({g for g, _ in wanted})
        out: dict[tuple[str, str], LedgerRow] = {}
        t = ledger.c
        with self.engine.connect() as conn:
            for group in groups:
                ids = sorted(m for g, m in wanted if g == group)
                for start in range(0, len(ids), _INSERT_CHUNK):
                    stmt = select(ledger).where(
                        t.consumer_group == group, t.msg_id.in_(ids[start : start + _INSERT_CHUNK])
                    )
                    for r in conn.execute(stmt).mappings():
                        row = LedgerRow.from_mapping(r)
                        out[(row.consumer_group, row.msg_id)] = row
        return out

    def is_claimable(self, row: LedgerRow, now: dt.datetime | None = None) -> bool:
        """``now``: the ledger's time (``now()``), read once by a caller checking many rows."""
        if row.attempts >= self.max_attempts:
            return False
        if row.state in (State.PENDING, State.FAILED):
            return True
        if row.state != State.CLAIMED:
            return False
        return row.lease_expires_at is None or row.lease_expires_at < (self.now() if now is None else now)

    def reason_counts(
        self, *, date_from: str | None = None, date_to: str | None = None
    ) -> dict[tuple[str, str | None], int]:
        """(state, reason) -> rows, for the dead-letter dates in the range (reason None: no outcome yet)."""
        t = ledger.c
        stmt = select(t.state, t.reason, func.count()).group_by(t.state, t.reason)
        if date_from:
            stmt = stmt.where(t.dlq_date >= date_from)
        if date_to:
            stmt = stmt.where(t.dlq_date <= date_to)
        with self.engine.connect() as conn:
            return {(state, reason): int(n) for state, reason, n in conn.execute(stmt)}

    def counts(self, *, date_from: str | None = None, date_to: str | None = None) -> dict[str, int]:
        t = ledger.c
        stmt = select(t.state, func.count()).group_by(t.state)
        if date_from:
            stmt = stmt.where(t.dlq_date >= date_from)
        if date_to:
            stmt = stmt.where(t.dlq_date <= date_to)
        with self.engine.connect() as conn:
            return {state: int(n) for state, n in conn.execute(stmt)}

    # --- operators ----------------------------------------------------------------------------

    def reopen(self, rows: Iterable[LedgerRow], *, note: str = "re-driven") -> list[LedgerRow]:
        """Send FAILED / GAVE_UP / SKIPPED rows back to PENDING with a fresh attempt budget.
        DONE rows are never reopened: their effect already happened. Returns the rows reopened."""
        reopened: list[LedgerRow] = []
        t = ledger.c
        for row in rows:
            if row.state not in REOPENABLE:
                continue
            error = f"{note} (was {row.state.value} after {row.attempts} attempts)" + (
                f": {row.last_error}" if row.last_error else ""
            )
            stmt = (
                update(ledger)
                .where(_key(row.consumer_group, row.msg_id), t.state.in_([s.value for s in REOPENABLE]))
                .values(
                    state=State.PENDING.value,
                    attempts=0,
                    redrives=t.redrives + 1,
                    claim_token=None,
                    lease_expires_at=None,
                    last_error=_message(error),
                    reason=Reason.REDRIVEN.value,
                )
            )
            with self.engine.begin() as conn:
                if conn.execute(stmt).rowcount == 1:
                    reopened.append(row)
        return reopened


__all__ = [
    "TABLE_NAME",
    "Claim",
    "Ledger",
    "LedgerRow",
    "Registration",
]
