"""``rocketmq-retry ingest``: parse one date's landed logs into ``events``, ``quarantine``, ``ingest_report`` and
``bindings``.

Thin entrypoint around the pure transforms in ``ingest_parse`` (DESIGN §2, §4). Run it as
``rocketmq-retry ingest --date D --landing L --warehouse W [--config F]`` or
``spark-submit src/rocketmq_retry/spark_apps/ingest.py …``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from rocketmq_retry.config import Config, load_config
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import UserError
from rocketmq_retry.jobs import ingest_parse as parse
from rocketmq_retry.jobs.ingest_read import SourceFile, instance_table, read_lines, resolve_files
from rocketmq_retry.jobs.partitions import committed, write_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The per-line screen's fused stage is ~12.6 kB of bytecode: under this limit it runs as one whole-stage method
# (JIT-compiled thanks to -XX:-DontCompileHugeMethods) instead of a chain of projections that copy every line
# once per step (1.2 M lines, warm: 22.5-23.6 s vs 29.4 s end to end). Other jobs keep the session's limit.
INGEST_HUGE_METHOD_LIMIT = "16000"


@dataclass
class IngestResult:
    report: list[dict[str, Any]]
    notes: list[str]
    events: int
    quarantined: int
    seconds: float


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="rocketmq-retry ingest", description=__doc__.splitlines()[0])
    p.add_argument(
        "--date", required=True, type=date_arg, help="partition date YYYY-MM-DD (a day in the config's timezone)"
    )
    p.add_argument("--landing", required=True, help="root directory the sources' globs are relative to")
    p.add_argument("--warehouse", required=True, help="output root: <warehouse>/<table>/dt=<date>/")
    p.add_argument("--config", default=None, help="YAML config (default: $ROCKETMQ_RETRY_CONFIG, else defaults)")
    return p.parse_args(argv)


def run_ingest(
    spark: SparkSession, config: Config, ds: str, landing: str, warehouse: str, log: TextIO = sys.stderr
) -> IngestResult:
    """Read the date's sources, write the three partitions atomically, return the per-file accounting."""
    started = time.monotonic()
    files, notes = resolve_files(config, landing, ds)
    for note in notes:
        print(f"ingest: note: {note}", file=log)
    print(f"ingest: {len(files)} file(s) for {ds}", file=log)
    # dt=D is the calendar day D in the config's zone (as the simulator's --date); event_time stays UTC
    zone = config.timezone
    with _codegen_limit(spark, INGEST_HUGE_METHOD_LIMIT):
        return _run(spark, files, notes, ds, zone, warehouse, log, started)


@contextlib.contextmanager
def _codegen_limit(spark: SparkSession, limit: str) -> Iterator[None]:
    key = "spark.sql.codegen.hugeMethodLimit"
    before = spark.conf.get(key, None)
    spark.conf.set(key, limit)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _run(
    spark: SparkSession,
    files: list[SourceFile],
    notes: list[str],
    ds: str,
    zone: str,
    warehouse: str,
    log: TextIO,
    started: float,
) -> IngestResult:
    from pyspark import StorageLevel

    by_family: dict[str, list[SourceFile]] = {}
    for f in files:
        by_family.setdefault(parse.family(f.source), []).append(f)

    def step(what: str) -> None:
        print(f"ingest: [{time.monotonic() - started:6.1f} s] {what}", file=log, flush=True)

    step("planning")
    lines = {fam: read_lines(spark, fs) for fam, fs in sorted(by_family.items())} or {"log": read_lines(spark, [])}
    kept: list[DataFrame] = []

    def keep(df: DataFrame, what: str) -> DataFrame:
        # Materialise once and cut the lineage: each later reader scans stored rows instead of recomputing the
        # classifier, and the outputs' plans ship a scan, not its expression tree (a task binary over 1 MB).
        step(what)
        df = df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        kept.append(df)
        return df

    try:
        classified = parse.classify_families(lines, ds, zone, tuple(sorted({f.timezone for f in files})), keep)
        instances = instance_table(spark, files)
        groups = keep(parse.line_groups(classified), "counting lines per file")
        # the four tables are committed together: a crash leaves all of them from the previous run or all new
        tables = {
            "events": parse.events_of(classified, instances),
            "quarantine": parse.quarantine_of(classified),
            "ingest_report": parse.report_of(groups).coalesce(1),
            "bindings": parse.bindings_of(groups, instances).coalesce(1),
        }
        write_partitions(warehouse, ds, tables, job="ingest", log=step)
        # a few rows: sorted here rather than by a Spark sort (two more jobs)
        report = sorted(
            (
                r.asDict(recursive=True)
                for r in spark.read.parquet(str(committed(warehouse, "ingest_report", ds))).collect()
            ),
            key=lambda r: (r["source"], r["source_file"]),
        )
        step("done")
    finally:
        # the checkpoints' blocks belong to their RDDs, not to the cache manager that DataFrame.unpersist() asks
        for df in kept:
            df._jdf.queryExecution().logical().rdd().unpersist(False)
    return IngestResult(
        report=report,
        notes=notes,
        events=sum(r["event_rows"] or 0 for r in report),
        quarantined=sum(r["quarantined"] or 0 for r in report),
        seconds=time.monotonic() - started,
    )


def format_report(report: list[dict[str, Any]]) -> str:
    """The accounting table printed at the end of a run (one row per file, then totals)."""
    headers = (
        "file",
        "format",
        "lines",
        "events",
        "ignored",
        "contin.",
        "quarant.",
        "other-day",
        "event rows",
        "unattrib.",
    )
    rows = [
        (
            r["source_file"],
            r["source"],
            r["lines_read"],
            r["events"],
            r["ignored"],
            r["continuation"],
            r["quarantined"],
            r["other_date"],
            r["event_rows"],
            r["unattributed_events"],
        )
        for r in report
    ]
    totals = ("TOTAL", "", *(sum(int(row[i] or 0) for row in rows) for i in range(2, len(headers))))
    table = [headers, *rows, totals]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(headers))]
    lines = []
    for k, row in enumerate(table):
        lines.append(
            "  ".join(
                str(v).ljust(w) if i < 2 else str(v).rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if k in (0, len(table) - 2):
            lines.append("  ".join("-" * w for w in widths))
    unbalanced = [
        r["source_file"]
        for r in report
        if r["lines_read"] != r["events"] + r["ignored"] + r["continuation"] + r["quarantined"]
    ]
    lines.append(
        "accounting: lines = events + ignored + continuation + quarantined for every file"
        if not unbalanced
        else f"accounting does NOT balance for: {', '.join(unbalanced)}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_config(args.config)
    if not config.sources:  # fail before paying for a Spark session
        resolve_files(config, args.landing, args.date)
    from rocketmq_retry.jobs.spark_session import build_spark_session

    spark = build_spark_session(
        "rocketmq-retry-ingest",
        master=None if _under_spark_submit() else config.spark.master,
        driver_memory=config.spark.driver_memory,
        shuffle_partitions=config.spark.shuffle_partitions,
        conf=config.spark.conf,
    )
    result = run_ingest(spark, config, args.date, args.landing, args.warehouse)
    print(format_report(result.report))
    print(f"ingest {args.date}: {result.events} events, {result.quarantined} quarantined lines, {result.seconds:.1f} s")
    return 0


def _under_spark_submit() -> bool:
    import os

    return "SPARK_SUBMIT" in os.environ or os.environ.get("PYSPARK_GATEWAY_PORT") is not None


def cli(argv: list[str] | None = None) -> int:
    """``main`` with UserError turned into one line on stderr (for spark-submit, which has no dispatcher)."""
    try:
        return main(argv)
    except UserError as exc:
        print(f"rocketmq-retry: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(cli())
