"""Lines written per second by ``rocketmq-retry simulate`` (a benchmark, not a timed test).

Runs the simulator on the demo deployment (examples/rocketmq-retry.yaml + simulate-scenario.yaml) and reports
wall-clock and CPU time, lines written and lines per second, for two mixes (CPU time is reported because the
machine may be shared; the simulator is single-threaded):

- ``realistic``: noise at its realistic rate (offset persistence every 5 s per queue, heartbeats, stats), so most
  lines are short INFO lines, as in a real client log;
- ``messages``: noise off and many messages, so most lines are the long retry lines (``MessageExt [...]`` with
  body bytes, stack traces), trace records and message-dump lines.

"Lines" are the lines of every format written (logs, the trace export and the message dumps; not ``_truth/``).

Usage: .venv/bin/python benchmarks/bench_simulate.py [--realistic-messages N] [--heavy-messages N]
The target is at least 1,000,000 lines in under 60 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import pathlib
import shutil
import tempfile
import time

from rocketmq_retry.config import load_config
from rocketmq_retry.simulate.run import simulate
from rocketmq_retry.simulate.scenario import Settings, load_scenario

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(messages: int, noise: float, out: pathlib.Path) -> tuple[int, float, float]:
    settings = Settings(
        date=_dt.date(2026, 11, 20),
        out=out,
        messages=messages,
        seed=1,
        noise=noise,
        scenario=load_scenario(ROOT / "examples" / "simulate-scenario.yaml"),
    )
    started, cpu = time.perf_counter(), time.process_time()
    summary = simulate(load_config(ROOT / "examples" / "rocketmq-retry.yaml"), settings)
    return summary.lines, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realistic-messages", type=int, default=3000)
    parser.add_argument("--heavy-messages", type=int, default=20000)
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-simulate-"))
    try:
        for name, messages, noise in (
            ("realistic", args.realistic_messages, 1.0),
            ("messages", args.heavy_messages, 0.0),
        ):
            lines, seconds, cpu = run(messages, noise, tmp / name)
            size = sum(p.stat().st_size for p in (tmp / name).rglob("*") if p.is_file())
            print(
                f"{name:9s} messages={messages:6d} noise={noise:3.1f}: {lines:9,d} lines in {seconds:6.1f} s "
                f"= {lines / seconds:9,.0f} lines/s wall, {lines / cpu:9,.0f} lines/s of CPU time "
                f"({cpu:.1f} s CPU; {size / 1e6:,.0f} MB on disk)",
                flush=True,
            )
            shutil.rmtree(tmp / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
