"""``rocketmq-retry simulate``: write simulated dates of RocketMQ logs plus ground truth (DESIGN §7)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import pathlib
import sys

from rocketmq_retry.config import load_config
from rocketmq_retry.dates import date_arg, partition_date
from rocketmq_retry.errors import UserError
from rocketmq_retry.logformats.timefmt import zone
from rocketmq_retry.simulate.demo import demo_config, demo_scenario
from rocketmq_retry.simulate.run import simulate
from rocketmq_retry.simulate.scenario import (
    BEHAVIOURS,
    COLLECT,
    DEFAULT_BEHAVIOUR,
    DEFAULT_FAILURE_KINDS,
    FAILURE_KINDS,
    Settings,
    load_scenario,
    parse_mix,
)

MAX_DAYS = 366  # one continuous run in memory: a year of dates at most


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"simulate: {message}")


def _mix_text(mix: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in mix.items())


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rocketmq-retry simulate", description=__doc__)
    p.add_argument(
        "--date", required=True, type=date_arg, help="day to simulate, YYYY-MM-DD (in the config's timezone)"
    )
    p.add_argument("--out", required=True, help="landing directory to create")
    p.add_argument("--config", help="configuration file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    p.add_argument("--messages", type=int, default=2000, help="business messages to publish per date (default 2000)")
    p.add_argument(
        "--days",
        type=int,
        default=1,
        help="publish over this many consecutive dates from --date, in one continuous run (default 1)",
    )
    p.add_argument(
        "--collect",
        choices=COLLECT,
        default="whole",
        help="whole: one folder as the run ends (default); daily: <out>/<date>/ as a collector copies the hosts' "
        "log directories at each date's end",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed: same seed, same bytes (default 1)")
    p.add_argument("--groups", help="comma-separated consumer groups of the config to simulate (default: all)")
    p.add_argument("--scenario", help="YAML with per-group listener behaviour (see rocketmq_retry.simulate.scenario)")
    p.add_argument("--failure-mix", default=_mix_text(DEFAULT_BEHAVIOUR), help=f"weights over {', '.join(BEHAVIOURS)}")
    p.add_argument(
        "--failure-kinds", default=_mix_text(DEFAULT_FAILURE_KINDS), help=f"weights over {', '.join(FAILURE_KINDS)}"
    )
    p.add_argument("--send-back-fault-rate", type=float, default=0.01)
    p.add_argument("--timeout-rate", type=float, default=0.002)
    p.add_argument("--producer-fault-rate", type=float, default=0.01)
    p.add_argument("--noise", type=float, default=1.0, help="multiplier on periodic noise lines (0 = none)")
    p.add_argument("--no-trace", action="store_true", help="clients run without message trace")
    p.add_argument("--rotate-mb", type=float, default=32.0, help="roll log files at this size (0 = never)")
    p.add_argument("--no-gzip", action="store_true", help="leave rolled files uncompressed")
    p.add_argument("--client4x-timezone", help="JVM zone of 4.x clients (default: the config's timezone)")
    p.add_argument("--app-timezone", help="zone of Spring applications (default: the config's timezone)")
    p.add_argument("--max-skew-ms", type=int, default=250, help="clock skew of application hosts")
    p.add_argument("--horizon-hours", type=float, default=30.0, help="simulate this long from the (last) date's start")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def settings_from_args(args: argparse.Namespace) -> Settings:
    date = _dt.date.fromisoformat(partition_date(args.date, what="simulate: --date"))
    if args.messages < 1:
        raise UserError("simulate: --messages must be at least 1")
    if not 1 <= args.days <= MAX_DAYS:
        raise UserError(f"simulate: --days must be within [1, {MAX_DAYS}]")
    for name in ("client4x_timezone", "app_timezone"):
        value = getattr(args, name)
        if value:
            try:
                zone(value)
            except Exception:
                raise UserError(f"simulate: unknown time zone {value!r}") from None
    rates = {
        "--send-back-fault-rate": args.send_back_fault_rate,
        "--timeout-rate": args.timeout_rate,
        "--producer-fault-rate": args.producer_fault_rate,
    }
    for flag, value in rates.items():
        if not 0 <= value <= 1:
            raise UserError(f"simulate: {flag} must be within [0, 1]")
    if args.horizon_hours < 24:
        raise UserError("simulate: --horizon-hours must cover the whole day (>= 24)")
    return Settings(
        date=date,
        out=pathlib.Path(args.out),
        messages=args.messages,
        seed=args.seed,
        behaviour=parse_mix(args.failure_mix, BEHAVIOURS, "--failure-mix"),
        failure_kinds=parse_mix(args.failure_kinds, FAILURE_KINDS, "--failure-kinds"),
        send_back_fault_rate=args.send_back_fault_rate,
        timeout_rate=args.timeout_rate,
        producer_fault_rate=args.producer_fault_rate,
        noise=max(0.0, args.noise),
        trace=not args.no_trace,
        rotate_bytes=int(args.rotate_mb * 1024 * 1024),
        gzip=not args.no_gzip,
        client4x_timezone=args.client4x_timezone,
        app_timezone=args.app_timezone,
        max_skew_ms=max(0, args.max_skew_ms),
        horizon_hours=args.horizon_hours,
        force=args.force,
        progress=not args.quiet,
        scenario=load_scenario(pathlib.Path(args.scenario)) if args.scenario else {},
        groups=tuple(g.strip() for g in (args.groups or "").split(",") if g.strip()),
        days=args.days,
        collect=args.collect,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args)
    config = load_config(args.config)
    if not config.groups:
        # Nothing to play: use the demo deployment (every client kind and format), in the config's time zone.
        config = demo_config(config.timezone)
        if not settings.scenario:
            settings = dataclasses.replace(settings, scenario=demo_scenario())
        if settings.progress:
            print(
                "simulate: the configuration names no groups; simulating the built-in demo deployment", file=sys.stderr
            )
    summary = simulate(config, settings)
    states = ", ".join(f"{k}={v}" for k, v in summary.final_states.items())
    print(
        f"simulate: wrote {summary.lines} lines in {summary.files} files to {settings.out} "
        f"({summary.lifecycles} lifecycles: {states}) in {summary.seconds:.1f} s",
        file=sys.stderr if settings.progress else sys.stdout,
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"rocketmq-retry: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
