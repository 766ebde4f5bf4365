"""A late file's re-run against a full ingest of the same day (docs/ingest.md "Late files"); not a test.

    .venv/bin/python benchmarks/bench_late_files.py --lines 1000000 [--profile production] [--late REL]
        [--workdir DIR] [--reconstruct]

It simulates a day as ``bench_ingest.py`` does, or with ``--profile`` a line mix of ``bench_pipeline.py``
(docs/scale.md "Line mixes": the topology's config then reads it), or reuses ``<workdir>/landing-<lines>``
(``landing-<profile>-<lines>``; ``--from-landing`` takes one already simulated, e.g. bench_pipeline's), picks one
host's file as
the late one (``--late``, a path under the landing; by default the largest client or application log: the
busiest host's collector was down), then, each step as a new JVM (``bench_ingest.py``'s Spark settings):

1. ``full``: the whole landing into an empty warehouse (``reuse=False``): the full ingest, timed;
2. ``before``: the landing without the late file into a second warehouse (the date's run while its collector was
   down);
3. ``late``: the late file back, the date re-run over the second warehouse (``reuse=True``): timed; it prints
   which files were reused and parsed;
4. ``compare``: the four ingest tables of both warehouses row for row (``compare_warehouses.compare``), and with
   ``--reconstruct`` both warehouses reconstructed and their tables compared too.

Prints the seconds of ``run_ingest`` (the session already started, as ``bench_ingest.py`` times it) and of each
whole process (JVM start included), and the late run's share of the full one. Exits 1 when a table differs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

INGEST_TABLES = ("events", "quarantine", "ingest_report", "bindings")


def pick_late(config: object, landing: pathlib.Path, ds: str) -> str:
    """The largest client (or application) log: the busiest host's collector was down."""
    from rocketmq_retry.jobs.ingest.read import resolve_files

    files, _ = resolve_files(config, landing, ds)  # type: ignore[arg-type]
    hosts = [f for f in files if f.source not in ("broker", "broker-stats", "trace", "message-dump")]
    hosts.sort(key=lambda f: os.path.getsize(f.path))
    if not hosts:
        raise SystemExit("no client or application file in the landing to make late")
    return hosts[-1].rel


def child(args: argparse.Namespace) -> int:
    """``--child STEP``: one step in this process's new JVM; prints its result as JSON on the last line."""
    from rocketmq_retry.config import load_config
    from rocketmq_retry.spark_session import build_spark_session

    config = load_config(args.config)
    spark = build_spark_session(
        f"bench-late-{args.child}",
        master="local[2]",
        driver_memory=args.driver_memory,
        shuffle_partitions=args.shuffle_partitions,
    )
    if args.child == "compare":
        from compare_warehouses import RECONSTRUCT_TABLES, compare

        tables = INGEST_TABLES + (RECONSTRUCT_TABLES if args.reconstruct else ())
        same = compare(spark, args.warehouse, args.other, args.date, tables)
        print(json.dumps({"same": same}))
        return 0
    if args.child == "reconstruct":
        from rocketmq_retry.jobs.reconstruct.job import main as reconstruct_main

        code = reconstruct_main(["--date", args.date, "--warehouse", args.warehouse, "--config", args.config])
        print(json.dumps({"exit": code}))
        return 0
    from rocketmq_retry.jobs.ingest.job import run_ingest

    t0 = time.monotonic()
    result = run_ingest(spark, config, args.date, args.landing, args.warehouse, reuse=args.child == "late")
    seconds = time.monotonic() - t0
    lines = sum((r["lines_read"] or 0) + (r["other_date"] or 0) for r in result.report)
    out = {"seconds": seconds, "lines": lines, "events": result.events, "plan": result.plan}
    print(json.dumps(out))
    return 0


def step(name: str, args: argparse.Namespace, landing: pathlib.Path, wh: pathlib.Path, **extra: str) -> dict:  # type: ignore[type-arg]
    cmd = [sys.executable, __file__, "--child", name, "--landing", str(landing), "--warehouse", str(wh)]
    cmd += ["--date", args.date, "--config", args.config, "--driver-memory", args.driver_memory]
    cmd += ["--shuffle-partitions", str(args.shuffle_partitions)]
    for k, v in extra.items():
        cmd += [f"--{k}", v]
    if args.reconstruct:
        cmd.append("--reconstruct")
    t0 = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"step {name} failed (exit {done.returncode}): {' '.join(cmd)}")
    *said, last = done.stdout.strip().splitlines()
    for line in said:  # e.g. the comparison's per-table counts
        print(line, file=sys.stderr)
    out: dict = json.loads(last)  # type: ignore[type-arg]
    out["wall"] = wall
    print(f"{name}: {json.dumps(out)}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=1_000_000, help="simulated lines")
    p.add_argument("--date", default="2026-11-20")
    p.add_argument("--config", default=None, help="default: the profile's topology, else examples/rocketmq-retry.yaml")
    p.add_argument(
        "--profile",
        default=None,
        help="a line mix of bench_pipeline.py (shared-topic, production); default: bench_ingest's",
    )
    p.add_argument("--from-landing", default=None, help="a landing already simulated for these settings (not copied)")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--workdir", default=None, help="keeps landing-<lines> between runs (simulated once)")
    p.add_argument("--late", default=None, help="the late file: a path under the landing")
    p.add_argument("--reconstruct", action="store_true", help="also reconstruct both warehouses and compare")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--landing", default=None, help=argparse.SUPPRESS)
    p.add_argument("--warehouse", default=None, help=argparse.SUPPRESS)
    p.add_argument("--other", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)

    from rocketmq_retry.config import load_config

    profile = None
    if args.profile:
        from bench_pipeline import DS, PROFILES

        if args.profile not in PROFILES:
            p.error(f"--profile: unknown {args.profile!r}; expected one of {', '.join(PROFILES)}")
        profile = PROFILES[args.profile]
        if args.date != DS:
            p.error(f"--profile simulates {DS}; --date {args.date} would read another day")
    args.config = args.config or str(profile.topology if profile else "examples/rocketmq-retry.yaml")
    config = load_config(args.config)
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="bench-late-"))
    landing = work / (f"landing-{profile.name}-{args.lines}" if profile else f"landing-{args.lines}")
    if args.from_landing:
        landing = pathlib.Path(args.from_landing).resolve()
        if not landing.is_dir():
            p.error(f"--from-landing {landing}: no such folder")
    elif profile is not None:
        from bench_pipeline import simulate as simulate_profile

        simulate_profile(landing, args.lines, profile)  # reused when its marker matches these settings
    elif not landing.is_dir():
        from bench_ingest import simulate

        total = simulate(landing, args.lines, args.date, args.config)
        print(f"simulated {total} lines in {landing}", file=sys.stderr)
    late = args.late or pick_late(config, landing, args.date)
    late_path, aside = landing / late, work / "late-file-aside"
    if not late_path.is_file():
        raise SystemExit(f"--late {late}: not a file under {landing}")
    wh_full, wh_late = work / "wh-full", work / "wh-late"
    for wh in (wh_full, wh_late):
        shutil.rmtree(wh, ignore_errors=True)

    full = step("full", args, landing, wh_full)
    aside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(late_path, aside)
    try:
        before = step("before", args, landing, wh_late)
    finally:
        shutil.move(aside, late_path)
    late_run = step("late", args, landing, wh_late)
    if args.reconstruct:
        for wh in (wh_full, wh_late):
            step("reconstruct", args, landing, wh)
    same = step("compare", args, landing, wh_full, other=str(wh_late))["same"]

    size = late_path.stat().st_size
    print(f"\nlanding {landing}: {full['lines']} lines, {full['events']} event rows; late file {late} ({size} bytes)")
    print(f"{'run':<8} {'run_ingest s':>12} {'process s':>10}  plan")
    for name, r in (("full", full), ("before", before), ("late", late_run)):
        print(f"{name:<8} {r['seconds']:>12.1f} {r['wall']:>10.1f}  {r['plan']}")
    share = late_run["seconds"] / full["seconds"]
    print(
        f"late re-run / full ingest: {share:.0%} of run_ingest, {late_run['wall'] / full['wall']:.0%} of the process "
        f"(target: at most 20 %); tables {'identical' if same else 'DIFFERENT'}"
        + (" (ingest and reconstruct)" if args.reconstruct else " (ingest)")
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
