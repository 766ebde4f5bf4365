"""``rocketmq-retry compensation list|show|retry|review|migrate``: the ledger, for operators (DESIGN §7)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import make_url

from rocketmq_retry.compensation import batches as service
from rocketmq_retry.compensation.database import resolve_ledger_url, upgrade
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import REOPENABLE, LedgerRow, State, idempotency_key
from rocketmq_retry.config import load_config
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import UserError

PROG = "rocketmq-retry compensation"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    p.add_argument("--warehouse", help="warehouse root (fills {warehouse} in compensation.ledger_url)")
    p.add_argument("--ledger-url", help="SQLAlchemy URL of the ledger (overrides compensation.ledger_url)")


def _dates(p: argparse.ArgumentParser) -> None:
    p.add_argument("--date", type=date_arg, help="one dead-letter date (YYYY-MM-DD)")
    p.add_argument("--from", dest="date_from", type=date_arg, help="first dead-letter date (inclusive)")
    p.add_argument("--to", dest="date_to", type=date_arg, help="last dead-letter date (inclusive)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Inspect and re-drive the compensation ledger.")
    sub = parser.add_subparsers(dest="action", required=True)

    p = sub.add_parser("list", help="ledger rows, newest partitions last")
    _common(p)
    _dates(p)
    p.add_argument("--state", action="append", type=str.upper, choices=[s.value for s in State], help="repeatable")
    p.add_argument("--group", help="consumer group")
    p.add_argument("--limit", type=int, default=200, help="rows shown (default 200; 0 = all)")
    p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("show", help="everything the ledger knows about one dead letter")
    _common(p)
    p.add_argument("msg_id")
    p.add_argument("--group", help="consumer group (needed only when several groups dead-lettered the id)")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser(
        "retry",
        help="re-drive chosen dead letters, or every FAILED one of a date range",
        description="Reopen FAILED/GAVE_UP/SKIPPED rows (never DONE ones) and, with --warehouse, execute them now; "
        "without --warehouse they are only reopened and the next compensate run of their date executes them.",
    )
    _common(p)
    _dates(p)
    p.add_argument("msg_ids", nargs="*", metavar="MSG_ID", help="dead letters to re-drive (default: by --state)")
    p.add_argument("--group", help="consumer group")
    p.add_argument("--state", action="append", type=str.upper, choices=sorted(REOPENABLE))
    p.add_argument("--no-run", action="store_true", help="only reopen; do not execute now")
    p.add_argument("--run-id", help="recorded in the ledger (default: cli_retry__<UTC time>)")

    p = sub.add_parser(
        "review",
        help="dead letters held for review: never sent to a handler",
        description="List the date's dead letters that compensation leaves alone, with the reason each is held "
        "(its DLQ arrival was neither observed nor reached by its group's threshold after an observed failure). "
        "Reads the warehouse only; the ledger is not opened.",
    )
    p.add_argument("--date", required=True, type=date_arg, help="dead-letter date (YYYY-MM-DD)")
    p.add_argument("--warehouse", required=True, help="warehouse root holding dead_letters/dt=DATE/")
    p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("migrate", help="create or upgrade the ledger schema (every command does this on open)")
    _common(p)
    return parser


def _ledger_url(ns: argparse.Namespace) -> str:
    if ns.ledger_url:
        return str(ns.ledger_url)
    return resolve_ledger_url(load_config(ns.config).compensation.ledger_url, ns.warehouse)


def _open(ns: argparse.Namespace, *, read_only: bool = False) -> Ledger:
    """``read_only``: the ledger must already exist at the current revision. Looking must not create a ledger
    file (SQLite creates one on connect) nor migrate a schema that a running deployment still reads."""
    comp = load_config(ns.config).compensation
    url = _ledger_url(ns)
    if read_only:
        parsed = make_url(url)
        database = parsed.database or ""
        if parsed.get_backend_name() == "sqlite" and database and not pathlib.Path(database).is_file():
            raise UserError(
                f"no compensation ledger at {database}: nothing has been compensated with this config and warehouse "
                f"(check --warehouse / --config / --ledger-url; '{PROG} migrate' creates an empty one)"
            )
    return Ledger.open(
        url,
        lease_seconds=comp.lease_seconds,
        max_attempts=comp.max_attempts,
        max_loops=comp.max_loops,
        migrate=not read_only,
    )


def _range(ns: argparse.Namespace) -> tuple[str | None, str | None]:
    if ns.date and (ns.date_from or ns.date_to):
        raise UserError("use --date or --from/--to, not both")
    if ns.date:
        return ns.date, ns.date
    return ns.date_from, ns.date_to


def _when(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _table(rows: list[LedgerRow]) -> str:
    header = (
        "dlq_date",
        "consumer_group",
        "msg_id",
        "state",
        "reason",
        "loops",
        "tries",
        "handler",
        "business_key",
        "last_attempt",
        "last_error",
    )
    body = [
        (
            r.dlq_date or "-",
            r.consumer_group,
            r.msg_id,
            r.state.value,
            r.reason or "-",
            str(r.loops),
            str(r.attempts),
            r.handler or "-",
            r.business_key or "-",
            _when(r.last_attempt_at),
            (r.last_error or "")[:60],
        )
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *body]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
    return "\n".join(line.rstrip() for line in lines)


def _list(ns: argparse.Namespace) -> int:
    date_from, date_to = _range(ns)
    with _open(ns, read_only=True) as ledger:
        rows = ledger.rows(
            states=[State(s) for s in ns.state or []],
            date_from=date_from,
            date_to=date_to,
            consumer_group=ns.group,
            limit=ns.limit or None,
        )
        counts = ledger.counts(date_from=date_from, date_to=date_to)
        reasons = ledger.reason_counts(date_from=date_from, date_to=date_to)
    if ns.format == "json":
        for row in rows:
            print(json.dumps(row.as_dict(), sort_keys=True))
        return 0
    if rows:
        print(_table(rows))
    total = sum(counts.values())
    by_state = ", ".join(f"{s.value} {counts[s.value]}" for s in State if counts.get(s.value))
    print(f"{len(rows)} row(s) shown; ledger{_scope(date_from, date_to)}: {total} ({by_state or 'empty'})")
    by_reason: dict[str, int] = {}
    for (_state, reason), n in reasons.items():
        by_reason[reason or "none"] = by_reason.get(reason or "none", 0) + n
    if by_reason:
        # "none": registered, no outcome yet (PENDING, CLAIMED)
        print(
            "by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0])))
        )
    return 0


def _scope(date_from: str | None, date_to: str | None) -> str:
    if date_from and date_from == date_to:
        return f" for {date_from}"
    if date_from or date_to:
        return f" for {date_from or '…'}..{date_to or '…'}"
    return ""


def _show(ns: argparse.Namespace) -> int:
    with _open(ns, read_only=True) as ledger:
        rows = [r for r in ledger.find(ns.msg_id) if not ns.group or r.consumer_group == ns.group]
    if not rows:
        raise UserError(f"msg_id {ns.msg_id!r} is not in the ledger" + (f" for group {ns.group!r}" if ns.group else ""))
    for i, row in enumerate(rows):
        data: dict[str, Any] = row.as_dict()
        data["idempotency_key"] = idempotency_key(row.consumer_group, row.msg_id)
        if ns.format == "json":
            print(json.dumps(data, sort_keys=True))
            continue
        if i:
            print()
        width = max(len(k) for k in data)
        for key, value in data.items():
            print(f"{key:<{width}}  {'-' if value is None else value}")
    return 0


def _retry(ns: argparse.Namespace) -> int:
    date_from, date_to = _range(ns)
    if not ns.msg_ids and not (date_from and date_to):
        raise UserError("name MSG_IDs, or give --date / --from and --to to re-drive every FAILED row in that range")
    if ns.ledger_url:
        raise UserError("retry reads the ledger through the config (with --warehouse), not --ledger-url")
    if ns.warehouse is None:  # fine only when the ledger URL does not need it; this says so clearly otherwise
        resolve_ledger_url(load_config(ns.config).compensation.ledger_url, None)
    warehouse = ns.warehouse or "."
    batches = service.plan_redrive(
        warehouse,
        ns.config,
        date_from=date_from,
        date_to=date_to,
        msg_ids=ns.msg_ids,
        consumer_group=ns.group,
        states=ns.state or [State.FAILED],
    )
    selected = sum(len(b["only"] or []) for b in batches)
    for note in batches[0]["notes"]:
        print(f"note: {note}")
    if ns.no_run or ns.warehouse is None:
        print(f"reopened {selected} dead letter(s); the next compensate run of their date executes them")
        return 0
    run_id = ns.run_id or "cli_retry__" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    summary = service.summarize(service.compensate_batch(b, run_id, ns.config) for b in batches if b["only"])
    print(f"re-drove {selected} dead letter(s) (run {run_id}):")
    print("  " + service.summary_line(summary))
    print("  " + service.reasons_line(summary))
    return 1 if summary["failed"] or summary["gave_up"] else 0


def _migrate(ns: argparse.Namespace) -> int:
    from rocketmq_retry.compensation.database import create_ledger_engine

    engine = create_ledger_engine(_ledger_url(ns))
    try:
        before, after = upgrade(engine)
    finally:
        engine.dispose()
    print(f"ledger {engine.url.render_as_string(hide_password=True)}: revision {before or 'none'} -> {after}")
    return 0


def _review(ns: argparse.Namespace) -> int:
    from rocketmq_retry.compensation.deadletters import check_date, held_for_review

    held = held_for_review(ns.warehouse, check_date(ns.date))
    if ns.format == "json":
        print(json.dumps([{**letter.to_json(), "review_reason": reason} for letter, reason in held], sort_keys=True))
        return 0
    if not held:
        print(f"no dead letter of {ns.date} is held for review")
        return 0
    print(f"{len(held)} dead letter(s) of {ns.date} held for review (not compensated):")
    for letter, reason in held:
        print(f"  {letter.consumer_group}  {letter.msg_id}  {letter.original_topic or '-'}  {reason}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    action = {"list": _list, "show": _show, "retry": _retry, "review": _review, "migrate": _migrate}[ns.action]
    return action(ns)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
