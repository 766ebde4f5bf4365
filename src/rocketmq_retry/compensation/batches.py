"""What the Airflow DAGs map (and the command line runs in a loop): plan a bounded number of batches,
compensate one batch, summarize the batches.

A batch is a small JSON-able dict, never the dead letters themselves: it names the partitions and either a
shard of them (``crc32(group, msg_id) % shards == shard``) or an explicit list of ledger keys (re-drives).
Every batch task reads its partition itself, registers what is missing, and claims row by row, so batches
may run in parallel, be retried, or race a backfill of the same date: the ledger lets each effect happen once.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
import socket
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from rocketmq_retry.compensation.database import resolve_ledger_url
from rocketmq_retry.compensation.deadletters import check_date, held_for_review, read_dead_letters
from rocketmq_retry.compensation.handlers import Connections, Handler, build_handler
from rocketmq_retry.compensation.heartbeat import Heartbeat, lease_needed
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import (
    Claim,
    DeadLetter,
    LedgerRow,
    PermanentFailure,
    Reason,
    Registration,
    State,
    exception_reason,
    normalise_reason,
)
from rocketmq_retry.compensation.ratelimit import RateLimiter
from rocketmq_retry.compensation.redact import redact
from rocketmq_retry.config import Config, load_config
from rocketmq_retry.errors import UserError
from rocketmq_retry.routing import handler_for

log = logging.getLogger("rocketmq_retry.compensation")


ConfigLike = Config | str | os.PathLike[str] | None


class Batch(TypedDict):
    warehouse: str
    config: str | None
    dates: list[str]
    shard: int
    shards: int
    only: list[list[str]] | None  # [[consumer_group, msg_id], ...] for re-drives; None = the whole shard
    notes: list[str]


SUMMARY_COUNTS = (
    "dead_letters",
    "executed",
    "done",
    "failed",
    "gave_up",
    "skipped",
    "already_done",
    "already_gave_up",
    "already_skipped",
    "held_elsewhere",
    "lost_lease",
    "held_loop",
)


def _config(config: ConfigLike) -> Config:
    if isinstance(config, Config):
        return config
    return load_config(config)


def _config_ref(config: ConfigLike) -> str | None:
    """What a batch carries to find the config again in another process."""
    if config is None or isinstance(config, Config):
        return os.environ.get("ROCKETMQ_RETRY_CONFIG") if config is None else None
    return str(os.path.abspath(config))


def open_ledger(cfg: Config, warehouse: str | os.PathLike[str] | None) -> Ledger:
    comp = cfg.compensation
    return Ledger.open(
        resolve_ledger_url(comp.ledger_url, warehouse),
        lease_seconds=comp.lease_seconds,
        max_attempts=comp.max_attempts,
        max_loops=comp.max_loops,
    )


def shard_of(consumer_group: str, msg_id: str, shards: int) -> int:
    return zlib.crc32(f"{consumer_group}\x00{msg_id}".encode()) % shards


def prepare(cfg: Config, letters: Iterable[DeadLetter]) -> list[tuple[DeadLetter, Registration]]:
    """Each dead letter with its handler resolved by the routes in force, and how it enters the ledger (its
    business key is the ``dead_letters`` column: reconstruction decides it)."""
    comp = cfg.compensation
    out = []
    for letter in letters:
        handler, why = handler_for(comp, letter.original_topic, letter.consumer_group)
        out.append(
            (
                letter,
                Registration(
                    consumer_group=letter.consumer_group,
                    msg_id=letter.msg_id,
                    dlq_date=letter.dlq_date,
                    original_topic=letter.original_topic,
                    handler=handler,
                    business_key=letter.business_key,
                    skip_reason=None if handler else why,
                ),
            )
        )
    return out


def _batches(warehouse: str, config: ConfigLike, dates: list[str], n: int, notes: list[str]) -> list[Batch]:
    return [
        Batch(
            warehouse=str(warehouse),
            config=_config_ref(config),
            dates=dates,
            shard=i,
            shards=n,
            only=None,
            notes=notes if i == 0 else [],
        )
        for i in range(n)
    ]


def plan_batches(
    date: str,
    warehouse: str | os.PathLike[str],
    config: ConfigLike = None,
    max_batches: int | None = None,
    batch_size: int | None = None,
) -> list[Batch]:
    """Register the date's dead letters in the ledger and split the outstanding ones into at most
    ``max_batches`` shards (at least one, so a run with nothing new still reports that). Both default to the
    config's ``compensation.max_batches`` / ``compensation.batch_size``."""
    check_date(date)
    cfg = _config(config)
    max_batches = cfg.compensation.max_batches if max_batches is None else max_batches
    batch_size = cfg.compensation.batch_size if batch_size is None else batch_size
    if max_batches < 1 or batch_size < 1:
        raise UserError("max_batches and batch_size must be at least 1")
    warehouse = os.path.abspath(warehouse)
    prepared = prepare(cfg, read_dead_letters(warehouse, date))
    with open_ledger(cfg, warehouse) as ledger:
        new = ledger.register(reg for _, reg in prepared)
        rows = ledger.states((r.consumer_group, r.msg_id) for _, r in prepared)
        now = ledger.now()
        outstanding = sum(1 for row in rows.values() if ledger.is_claimable(row, now))
        looped = sorted(
            (r for r in rows.values() if r.state == State.HELD_FOR_REVIEW and r.reason == Reason.REDRIVE_LOOP),
            key=lambda r: (r.consumer_group, r.msg_id),
        )
    shards = max(1, min(max_batches, math.ceil(outstanding / batch_size)))
    log.info(
        "compensation plan %s: %d dead letters, %d new in the ledger, %d outstanding -> %d batch(es)",
        date,
        len(prepared),
        new,
        outstanding,
        shards,
    )
    held = held_for_review(warehouse, date)
    notes = (
        [
            f"{len(held)} dead letter(s) of {date} held for review, not compensated "
            f"(`rocketmq-retry compensation review --date {date}` lists them)"
        ]
        if held
        else []
    ) + [
        f"{r.consumer_group}/{r.msg_id}: business key {r.business_key!r} compensated on {r.loops} earlier date(s); "
        f"held for review as a re-drive loop (compensation.max_loops {cfg.compensation.max_loops})"
        for r in looped
    ]
    return _batches(warehouse, config, [date], shards, notes)


def plan_redrive(
    warehouse: str | os.PathLike[str],
    config: ConfigLike = None,
    *,
    date_from: str | None = None,
    date_to: str | None = None,
    msg_ids: Sequence[str] = (),
    consumer_group: str | None = None,
    states: Sequence[str] = (State.FAILED.value,),
    max_batches: int | None = None,
    note: str = "re-driven by operator",
) -> list[Batch]:
    """Reopen chosen ledger rows (``msg_ids``, optionally one group) or every row in ``states`` for the date
    range, and batch them for execution. DONE rows are refused: their effect already happened. ``note`` is what
    each reopened row's ``last_error`` says of the re-drive (who approved it, from the redrive DAG)."""
    for d in (date_from, date_to):
        if d:
            check_date(d)
    wanted_states = [State(s.upper()) for s in states]
    cfg = _config(config)
    max_batches = cfg.compensation.max_batches if max_batches is None else max_batches
    warehouse = os.path.abspath(warehouse)
    notes: list[str] = []
    with open_ledger(cfg, warehouse) as ledger:
        if msg_ids:
            rows = ledger.rows(msg_ids=msg_ids, consumer_group=consumer_group, date_from=date_from, date_to=date_to)
            found = {r.msg_id for r in rows}
            notes += [f"{m}: not in the ledger (run compensate for its date first)" for m in msg_ids if m not in found]
        else:
            if not (date_from and date_to):
                raise UserError("re-driving by state needs a date range (date_from and date_to)")
            rows = ledger.rows(
                states=wanted_states, consumer_group=consumer_group, date_from=date_from, date_to=date_to
            )
        selected: list[LedgerRow] = []
        for row in rows:
            if row.state == State.DONE:
                notes.append(f"{row.consumer_group}/{row.msg_id}: already DONE, not re-driven (effects happen once)")
            elif row.state == State.CLAIMED and not ledger.is_claimable(row):
                notes.append(f"{row.consumer_group}/{row.msg_id}: claimed by {row.claimed_by} right now; left alone")
            elif row.state in (State.PENDING, State.CLAIMED) or (
                row.state == State.FAILED and ledger.is_claimable(row)
            ):
                selected.append(row)
            else:
                selected += ledger.reopen([row], note=note)
    for note in notes:
        log.warning("re-drive: %s", note)
    missing_date = [r for r in selected if not r.dlq_date]
    if missing_date:
        raise UserError(f"{len(missing_date)} ledger rows have no dlq_date (written before revision 0002)")
    n = max(1, min(max_batches, len(selected)))
    keys = sorted((r.consumer_group, r.msg_id, r.dlq_date or "") for r in selected)
    batches: list[Batch] = []
    for i in range(n):
        part = keys[i::n]
        batches.append(
            Batch(
                warehouse=str(warehouse),
                config=_config_ref(config),
                dates=sorted({d for _, _, d in part}),
                shard=i,
                shards=n,
                only=[[g, m] for g, m, _ in part],
                notes=notes if i == 0 else [],
            )
        )
    log.info("re-drive plan: %d ledger rows -> %d batch(es)", len(selected), n)
    return batches


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def compensate_batch(
    batch: Batch | dict[str, Any],
    run_id: str | None = None,
    config: ConfigLike = None,
    connections: Connections | None = None,
) -> dict[str, Any]:
    """Claim and execute every outstanding dead letter of the batch; returns counts for ``summarize``.
    A handler that cannot be built (bad callable, missing Airflow connection) leaves its rows untouched and
    fails the task after the others were done. ``connections``: how a handler's ``conn_id`` is looked up
    (``airflow/connections.py``; None where Airflow is not installed)."""
    cfg = _config(config if config is not None else batch.get("config"))
    shards = int(batch.get("shards") or 1)
    shard = int(batch.get("shard") or 0)
    letters, notes = _batch_letters(batch, shard, shards)
    run = _BatchRun(cfg, shards, run_id, notes, connections)
    run.counts["dead_letters"] = len(letters)
    started = dt.datetime.now(dt.UTC)
    with open_ledger(cfg, batch["warehouse"]) as ledger:
        todo = run.outstanding(ledger, prepare(cfg, letters))
        heartbeat = Heartbeat(ledger)
        try:
            by_handler: dict[str | None, list[tuple[DeadLetter, Registration]]] = {}
            for item in todo:
                by_handler.setdefault(item[1].handler, []).append(item)
            for name, items in by_handler.items():
                run.execute_handler_rows(ledger, heartbeat, name, items)
        finally:
            heartbeat.stop()
            for h in run.handlers.values():
                h.close()
    summary: dict[str, Any] = {k: run.counts.get(k, 0) for k in SUMMARY_COUNTS}
    summary.update(
        dates=list(batch["dates"]),
        shard=shard,
        shards=shards,
        run_id=run_id,
        worker=run.worker,
        seconds=round((dt.datetime.now(dt.UTC) - started).total_seconds(), 3),
        handlers={k: dict(v) for k, v in run.per_handler.items()},
        reasons=dict(run.reasons),
        notes=run.notes,
    )
    log.info("compensation batch %s/%s of %s: %s", shard + 1, shards, ",".join(batch["dates"]), _line(summary))
    if run.broken:
        raise UserError("; ".join(f"handler {n!r}: {e}" for n, e in run.broken.items()))
    return summary


def _batch_letters(batch: Batch | dict[str, Any], shard: int, shards: int) -> tuple[list[DeadLetter], list[str]]:
    """The batch's dead letters (its shard, or its explicit keys) and notes on chosen keys no longer there."""
    only = {(g, m) for g, m in batch["only"]} if batch.get("only") is not None else None
    letters: list[DeadLetter] = []
    for date in batch["dates"]:
        for letter in read_dead_letters(batch["warehouse"], date):
            key = (letter.consumer_group, letter.msg_id)
            if (key in only) if only is not None else shard_of(*key, shards) == shard:
                letters.append(letter)
    notes = list(batch.get("notes") or [])
    if only is not None:
        found = {(letter.consumer_group, letter.msg_id) for letter in letters}
        notes += [
            f"{g}/{m}: no longer in dead_letters of {', '.join(batch['dates'])}; left PENDING"
            for g, m in sorted(only - found)
        ]
    return letters, notes


class _BatchRun:
    """One batch's execution state: what it counted, the handlers it built (and could not), its worker id."""

    def __init__(
        self, cfg: Config, shards: int, run_id: str | None, notes: list[str], connections: Connections | None
    ) -> None:
        self.connections = connections
        self.cfg = cfg
        self.shards = shards
        self.run_id = run_id
        self.notes = notes
        self.counts: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()  # the reason of every outcome this batch recorded
        self.per_handler: dict[str, Counter[str]] = {}
        self.handlers: dict[str, Handler] = {}
        self.limiters: dict[str, RateLimiter] = {}
        self.broken: dict[str, str] = {}
        self.worker = _worker_id()

    def outstanding(
        self, ledger: Ledger, prepared: list[tuple[DeadLetter, Registration]]
    ) -> list[tuple[DeadLetter, Registration]]:
        """Register what is missing; count rows already settled (or claimed elsewhere) and return the rest."""
        ledger.register(reg for _, reg in prepared)
        snapshot = ledger.states((r.consumer_group, r.msg_id) for _, r in prepared)
        now = ledger.now()
        todo: list[tuple[DeadLetter, Registration]] = []
        for letter, reg in prepared:
            row = snapshot.get((reg.consumer_group, reg.msg_id))
            if row is not None and not ledger.is_claimable(row, now):
                self.counts[_settled(row)] += 1
            else:
                todo.append((letter, reg))
        return todo

    def execute_handler_rows(
        self, ledger: Ledger, heartbeat: Heartbeat, name: str | None, items: list[tuple[DeadLetter, Registration]]
    ) -> None:
        """Claim the rows routed to handler ``name`` chunk by chunk and execute each claimed one."""
        cfg = self.cfg
        # Build the handler before claiming anything for it: a handler that cannot be built leaves its
        # rows untouched, and building (imports, Airflow connection) never eats into a lease.
        handler = (
            _handler(name, cfg, self.handlers, self.limiters, self.broken, self.shards, self.connections)
            if name
            else None
        )
        if name and handler is None:
            return
        limiter = self.limiters.get(name) if name else None
        # Rate-limited: one row per claim, token first, so no claim waits on the limiter.
        step = 1 if limiter else cfg.compensation.claim_chunk
        pos = 0
        while pos < len(items):  # items may grow: a row handed back is claimed again, alone, later
            chunk = items[pos : pos + step]
            pos += len(chunk)
            if limiter:
                limiter.acquire()
            claims, others = ledger.claim_many(
                [(r.consumer_group, r.msg_id) for _, r in chunk], worker=self.worker, run_id=self.run_id
            )
            for row in others.values():
                self.counts[_settled(row)] += 1
            self.counts["held_elsewhere"] += len(chunk) - len(claims) - len(others)
            # From here until each outcome is recorded, the heartbeat keeps every claim of the chunk
            # alive: the rows waiting their turn as well as the one whose handler is running.
            heartbeat.hold(claims.values())
            for letter, reg in chunk:
                claim = claims.get((reg.consumer_group, reg.msg_id))
                if claim is not None:
                    self._execute_claimed(ledger, heartbeat, handler, claim, letter, reg, items)

    def _execute_claimed(
        self,
        ledger: Ledger,
        heartbeat: Heartbeat,
        handler: Handler | None,
        claim: Any,
        letter: DeadLetter,
        reg: Registration,
        items: list[tuple[DeadLetter, Registration]],
    ) -> None:
        if handler is None:  # no route (or the row named an unknown handler)
            heartbeat.drop(claim)
            skipped = ledger.skip(claim, reg.skip_reason or "no route", reason=Reason.ROUTE_MISSING)
            self.counts["skipped" if skipped else "lost_lease"] += 1
            if skipped:
                self.reasons[Reason.ROUTE_MISSING.value] += 1
            return
        if heartbeat.remaining(claim) < lease_needed(self.cfg, handler.name, ledger):
            # The heartbeat could not renew this claim while the chunk's earlier calls ran (the database was
            # unreachable?): hand it back and claim it afresh later rather than start a call that could outlive
            # the claim. A fresh claim has the whole lease, at least twice what is needed, so this always makes
            # progress.
            heartbeat.drop(claim)
            ledger.release(claim)
            items.append((letter, reg))
            return
        self.counts["executed"] += 1
        outcome, reason = _execute(ledger, claim, handler, letter, heartbeat, self.notes)
        self.counts[outcome] += 1
        if reason is not None:
            self.reasons[reason] += 1
        self.per_handler.setdefault(handler.name, Counter())[outcome] += 1


def _handler(
    name: str,
    cfg: Config,
    handlers: dict[str, Handler],
    limiters: dict[str, RateLimiter],
    broken: dict[str, str],
    shards: int,
    connections: Connections | None,
) -> Handler | None:
    """The handler, built once per batch; None (and noted in ``broken``) when it cannot be built."""
    if name in broken:
        return None
    if name not in handlers:
        try:
            handlers[name] = build_handler(name, cfg.compensation.handlers[name], connections)
        except UserError as exc:
            broken[name] = redact(str(exc)) or ""
            log.error("handler %s cannot run: %s", name, broken[name])
            return None
        rate = handlers[name].rate_per_second
        if rate:
            # Every batch of the run may execute at once: split the handler's rate between them.
            limiters[name] = RateLimiter(rate / shards)
    return handlers[name]


def _settled(row: LedgerRow) -> str:
    return {
        State.DONE: "already_done",
        State.GAVE_UP: "already_gave_up",
        State.SKIPPED: "already_skipped",
        State.HELD_FOR_REVIEW: "held_loop",
    }.get(row.state, "held_elsewhere")


def _execute(
    ledger: Ledger, claim: Claim, handler: Handler, letter: DeadLetter, heartbeat: Heartbeat, notes: list[str]
) -> tuple[str, str | None]:
    """(the outcome counted, the reason recorded; None when the claim was lost and nothing was recorded)."""
    key = (claim.consumer_group, claim.msg_id)
    where = f"{letter.consumer_group}/{letter.msg_id}"
    try:
        result = handler(letter)
    except PermanentFailure as exc:
        heartbeat.drop(claim)
        reason = exception_reason(exc)
        outcome = f"permanent failure: {handler.redact(str(exc))}"
        state = ledger.fail(claim, handler.redact(str(exc)) or "", permanent=True, handler=handler.name, reason=reason)
    except Exception as exc:  # a handler's transient failure must not stop the batch
        heartbeat.drop(claim)
        # from the raised type (or the reason its raiser gave), never from its text
        reason = exception_reason(exc)
        message = handler.redact(f"{type(exc).__name__}: {exc}") or ""
        outcome = message
        log.warning("handler %s failed on %s (%s): %s", handler.name, where, reason, message)
        state = ledger.fail(claim, message, permanent=False, handler=handler.name, reason=reason)
    else:
        heartbeat.drop(claim)
        result = handler.redact(result)
        outcome = f"result {result!r}"
        # The fence: complete() records DONE only while this claim's token is still the row's. A claim taken
        # over (frozen worker, heartbeat cut off) is refused here, counted and noted, never overwritten.
        if ledger.complete(claim, result, handler=handler.name):
            return "done", Reason.OK.value
        state = None
    if state is None:
        why = "taken over by another worker" if key in heartbeat.lost else "no longer held by this worker"
        notes.append(f"{where}: claim {why} while {handler.name} ran; its outcome ({outcome}) was not recorded")
        return "lost_lease", None
    return ("gave_up" if state == State.GAVE_UP else "failed"), normalise_reason(reason)


def summarize(summaries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One summary for the run: the batches' counts added up (what the DAG pushes to XCom)."""
    total: Counter[str] = Counter()
    handlers: dict[str, Counter[str]] = {}
    dates: set[str] = set()
    notes: list[str] = []
    reasons: Counter[str] = Counter()
    batches = 0
    for s in summaries:
        batches += 1
        total.update({k: int(s.get(k, 0)) for k in SUMMARY_COUNTS})
        reasons.update(s.get("reasons") or {})
        for name, c in (s.get("handlers") or {}).items():
            handlers.setdefault(name, Counter()).update(c)
        dates.update(s.get("dates") or [])
        notes += s.get("notes") or []
    out: dict[str, Any] = {k: total.get(k, 0) for k in SUMMARY_COUNTS}
    out.update(
        batches=batches,
        dates=sorted(dates),
        handlers={k: dict(v) for k, v in handlers.items()},
        reasons=dict(sorted(reasons.items())),
        notes=notes,
    )
    log.info("compensation summary %s: %s", ",".join(out["dates"]), _line(out))
    return out


def _line(s: dict[str, Any]) -> str:
    return (
        f"{s['dead_letters']} dead letters; executed {s['executed']} (done {s['done']}, failed {s['failed']}, "
        f"gave up {s['gave_up']}), skipped {s['skipped']}; already done {s['already_done']}, "
        f"already gave up {s['already_gave_up']}, already skipped {s['already_skipped']}, "
        f"held by other workers {s['held_elsewhere']}, lost leases {s['lost_lease']}, "
        f"held for review as re-drive loops {s.get('held_loop', 0)}"
    )


def reasons_line(summary: dict[str, Any]) -> str:
    """``reasons: http_5xx 2, ok 3`` (the outcomes this run recorded, by normalised reason)."""
    reasons = summary.get("reasons") or {}
    return "reasons: " + (", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none recorded")


def summary_line(summary: dict[str, Any]) -> str:
    return _line(summary)
