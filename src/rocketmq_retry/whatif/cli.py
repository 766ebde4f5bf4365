"""``rocketmq-retry whatif --group G --from D1 --to D2 [policy options]``: the group's failures of the range replayed
under another retry policy (docs/causes.md "What if"). ``--format json`` prints ``WhatIf.as_dict()``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rocketmq_retry.config import load_config
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import UserError
from rocketmq_retry.explore.warehouse import open_warehouse
from rocketmq_retry.whatif import PolicyChange, parse_retry_policy, proposed_policy, render, what_if
from rocketmq_retry.whatif.policy import duration_ms

PROG = "rocketmq-retry whatif"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Replay a consumer group's observed failures of a date range under another retry policy, with "
        "the retry engine: dead letters now and then, deliveries, SCHEDULE_TOPIC_XXXX writes, the longest time to "
        "consumption, and the assumptions behind them. Options not given keep the group's configured setting.",
    )
    p.add_argument("--group", required=True, help="the consumer group")
    p.add_argument("--from", dest="date_from", required=True, type=date_arg, help="first date (YYYY-MM-DD)")
    p.add_argument("--to", dest="date_to", required=True, type=date_arg, help="last date (YYYY-MM-DD, inclusive)")
    policy = p.add_argument_group("the new policy (each a key of the group's config, docs/configuration.md)")
    policy.add_argument(
        "--max-reconsume-times", type=int, help="the remoting client's maxReconsumeTimes (-1: the mode's default)"
    )
    policy.add_argument("--retry-max-times", type=int, help="the group's retryMaxTimes (gRPC: maxAttempts - 1)")
    policy.add_argument(
        "--delay-levels", metavar="LEVELS", help='the broker\'s messageDelayLevel, e.g. "1s 5s 10s 30s"'
    )
    policy.add_argument(
        "--retry-policy",
        metavar="POLICY",
        help="the 5.x group retry policy gRPC consumers follow: 'customized [1s 5s …]' or "
        "'exponential [initial=5s] [max=2h] [multiplier=2]'",
    )
    policy.add_argument(
        "--delay-level-when-next-consume", type=int, metavar="LEVEL", help="the listener's level: -1, 0 or a level"
    )
    policy.add_argument("--invisible-duration", metavar="D", help="gRPC SimpleConsumer invisibleDuration, e.g. 30s")
    policy.add_argument("--pop-invisible-time", metavar="D", help="remoting POP popInvisibleTime, e.g. 60s")
    p.add_argument(
        "--warehouse", help="warehouse root (default: the config's airflow.warehouse_root, where the daily DAG writes)"
    )
    p.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


def change_of(ns: argparse.Namespace) -> PolicyChange:
    return PolicyChange(
        max_reconsume_times=ns.max_reconsume_times,
        retry_max_times=ns.retry_max_times,
        delay_levels=ns.delay_levels,
        retry_policy=parse_retry_policy(ns.retry_policy) if ns.retry_policy is not None else None,
        delay_level_when_next_consume=ns.delay_level_when_next_consume,
        invisible_duration_ms=(
            duration_ms(ns.invisible_duration, "--invisible-duration") if ns.invisible_duration else None
        ),
        pop_invisible_time_ms=(
            duration_ms(ns.pop_invisible_time, "--pop-invisible-time") if ns.pop_invisible_time else None
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    ns = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        change = change_of(ns)
        config = load_config(ns.config)
        proposed_policy(config, ns.group, change)  # refused before the warehouse is opened
        with open_warehouse(ns.warehouse or str(config.airflow.warehouse), config) as ex:
            result = what_if(ex, ns.group, ns.date_from, ns.date_to, change)
    except UserError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.exit_code
    if ns.format == "json":
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    else:
        print(render(result))
    return 0
