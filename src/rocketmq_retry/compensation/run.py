"""``rocketmq-retry compensate --date D --warehouse WH [--config F]``: claim and execute a date's dead letters,
the same plan → batches → summary as the Airflow DAG, run one batch after another in this process."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocketmq_retry.compensation import batches as service
from rocketmq_retry.errors import UserError

if TYPE_CHECKING:
    from rocketmq_retry.compensation.handlers import Connections

PROG = "rocketmq-retry compensate"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Claim and execute the date's dead letters, once each.")
    p.add_argument("--date", required=True, help="partition to compensate (YYYY-MM-DD)")
    p.add_argument("--warehouse", required=True, help="warehouse root holding dead_letters/dt=DATE/")
    p.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    p.add_argument("--max-batches", type=int, help="default: the config's compensation.max_batches (8)")
    p.add_argument("--batch-size", type=int, help="default: the config's compensation.batch_size (200)")
    p.add_argument("--run-id", help="recorded in the ledger (default: cli__<UTC time>)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-v", "--verbose", action="store_true", help="log every handler call")
    return p


def main(argv: Sequence[str] | None = None, connections: Connections | None = None) -> int:
    """``connections``: Airflow's, handed in by the console script when Airflow is installed (``cli.py``)."""
    ns = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO if ns.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    run_id = ns.run_id or "cli__" + dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    batches = service.plan_batches(ns.date, ns.warehouse, ns.config, ns.max_batches, ns.batch_size)
    summaries = []
    failures = []
    for batch in batches:
        try:
            summaries.append(service.compensate_batch(batch, run_id, ns.config, connections))
        except UserError as exc:  # a broken handler: report after the other batches ran
            failures.append(str(exc))
    summary = service.summarize(summaries)
    if ns.format == "json":
        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"compensate {ns.date} ({len(batches)} batch{'es' if len(batches) != 1 else ''}, run {run_id}):")
        print("  " + service.summary_line(summary))
        print("  " + service.reasons_line(summary))
        for name, c in sorted(summary["handlers"].items()):
            print(f"  handler {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        for note in summary["notes"]:
            print(f"  note: {note}")
    if failures:
        raise UserError("; ".join(sorted(set(failures))))
    return 1 if summary["failed"] or summary["gave_up"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
