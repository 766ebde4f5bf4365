"""``rocketmq-retry``: one console script for every job, so each runs with or without Airflow (DESIGN.md §7).

Subcommands with their own argument parsers (simulate, ingest, …) receive the rest of the command line;
a subcommand that is not built yet says so and exits non-zero, it never pretends.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rocketmq_retry import __version__
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import UserError

if TYPE_CHECKING:  # the engine is imported when a command needs it, not to print --help
    from rocketmq_retry.compensation.handlers import Connections

PROG = "rocketmq-retry"

# name -> one-line summary; ``_main_of`` imports the command's module only when the command runs.
COMMANDS: dict[str, str] = {
    "simulate": "write a simulated day of RocketMQ logs plus ground truth",
    "ingest": "parse a date's logs into events/ and quarantine/ (Spark)",
    "reconstruct": "rebuild transitions, lifecycles, dead letters, reconciliation (Spark)",
    "validate": "run the Great Expectations checkpoints, publish Data Docs",
    "compensate": "claim and execute the date's dead letters",
    "compensation": "list|show|retry|review|migrate the compensation ledger",
    "explain": "what happened to one message: hops, evidence lines, dead letter, compensation",
    "whatif": "replay a group's failures of a date range under another retry policy",
}
# `run` chains these, stopping at the first failure.
RUN_STEPS = ("ingest", "reconstruct", "validate")


def _usage() -> str:
    lines = [f"usage: {PROG} <command> [options]   ({PROG} <command> --help for a command's options)", "", "commands:"]
    lines.append(f"  {'schedule':<13} the engine's expected path of a message that keeps failing")
    lines += [f"  {name:<13} {summary}" for name, summary in COMMANDS.items()]
    lines.append(f"  {'run':<13} {' + '.join(RUN_STEPS)} for one date")
    return "\n".join(lines)


def _airflow_connections() -> Connections | None:
    """A handler's ``conn_id`` is read through Airflow when it is installed (a deployment's connections and
    ``AIRFLOW_CONN_*``), as in the DAG's task; without Airflow such a handler is a config error that says so."""
    if importlib.util.find_spec("airflow") is None:
        return None
    from rocketmq_retry.airflow.connections import airflow_connection

    return airflow_connection


def _main_of(command: str) -> Callable[[list[str]], int]:
    """Plain imports, deferred: ``--help`` and ``schedule`` never load Spark, Great Expectations or SQLAlchemy."""
    if command == "simulate":
        from rocketmq_retry.simulate.cli import main as simulate

        return simulate
    if command == "ingest":
        from rocketmq_retry.jobs.ingest.job import main as ingest

        return ingest
    if command == "reconstruct":
        from rocketmq_retry.jobs.reconstruct.job import main as reconstruct

        return reconstruct
    if command == "validate":
        from rocketmq_retry.validation.run import main as validate

        return validate
    if command == "compensate":
        from rocketmq_retry.compensation.run import main as compensate

        return functools.partial(compensate, connections=_airflow_connections())
    if command == "compensation":
        from rocketmq_retry.compensation.cli import main as compensation

        return compensation
    if command == "explain":
        from rocketmq_retry.explore.explain import main as explain

        return explain
    if command == "whatif":
        from rocketmq_retry.whatif.cli import main as whatif

        return whatif
    raise KeyError(command)


def run_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{PROG} run", description=f"{', '.join(RUN_STEPS)} for one date.")
    parser.add_argument("--date", required=True, type=date_arg, help="the date partition, YYYY-MM-DD")
    parser.add_argument(
        "--landing",
        required=True,
        help="root of the collected log files; {ds} stands for the date (landing/{ds}: one folder per date, and "
        "ingest catches up the earlier dates the reconstruction reads)",
    )
    parser.add_argument("--warehouse", required=True, help="root of the Parquet tables")
    parser.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    ns = parser.parse_args(list(argv))
    common = ["--date", ns.date, "--warehouse", ns.warehouse] + (["--config", ns.config] if ns.config else [])
    for step in RUN_STEPS:
        step_main = _main_of(step)
        print(f"== {PROG} {step} --date {ns.date}", flush=True)
        code = int(step_main(common + (["--landing", ns.landing] if step == "ingest" else [])) or 0)
        if code != 0:
            print(f"{PROG} run: {step} failed with exit status {code}; later steps were not run", file=sys.stderr)
            return code
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"{PROG} {__version__}")
        return 0
    command, rest = args[0], args[1:]
    try:
        if command == "schedule":
            return schedule_main(rest)
        if command == "run":
            return run_main(rest)
        if command in COMMANDS:
            return int(_main_of(command)(rest) or 0)
        print(f"{PROG}: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    except UserError as exc:
        print(f"{PROG} {command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{PROG} {command}: interrupted", file=sys.stderr)
        return 130


# --- schedule ---------------------------------------------------------------------------------------


def schedule_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} schedule",
        description="Print the expected retry path of a message of GROUP that fails every time.",
    )
    parser.add_argument("--group", required=True, help="consumer group (a group not in the config gets defaults)")
    parser.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--topic", default="<topic>", help="business topic the message was published to (default: <topic>)"
    )
    parser.add_argument("--limit", type=int, default=64, help="retries listed at most (default 64)")
    ns = parser.parse_args(list(argv))
    if ns.limit < 1:
        parser.error("--limit must be at least 1")

    from rocketmq_retry.config import load_config
    from rocketmq_retry.engine import FailedDelivery, expected_path, policy_settings
    from rocketmq_retry.schedule import FOREVER_PROBE, render_schedule_table, schedule_rows

    policy = load_config(ns.config).group_policy(ns.group)
    # delay_level_when_next_consume is left unset: every failure takes the group's setting, as the listener would.
    template = FailedDelivery(reconsume_times=0, original_topic=ns.topic)
    path = expected_path(policy, failure=template, limit=FOREVER_PROBE)
    if ns.format == "json":
        rows, final = schedule_rows(path, ns.limit)
        # The settings ride on the last record, so "every record but the last is a retry" still holds.
        final["settings"] = policy_settings(policy)
        for record in [*rows, final]:
            print(json.dumps(record))
    else:
        print(render_schedule_table(path, policy, ns.limit))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
