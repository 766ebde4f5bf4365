"""``rocketmq-retry ingest``: parse one date's landed logs into ``events``, ``quarantine``, ``ingest_report`` and
``bindings``.

Thin entrypoint around the pure transforms in ``ingest.parse`` (DESIGN §2, §4). Run it as
``rocketmq-retry ingest --date D --landing L --warehouse W [--config F]`` or
``spark-submit spark/ingest.py …``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from rocketmq_retry import contract
from rocketmq_retry.config import Config, load_config
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE, UserError
from rocketmq_retry.jobs.ingest import incremental, parse
from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.catchup import DS, Layout, catch_up, date_ranges, landing_layout
from rocketmq_retry.jobs.ingest.check import FileCheck, check_file
from rocketmq_retry.jobs.ingest.read import Refused, SourceFile, instance_table, read_lines, resolve_inputs
from rocketmq_retry.spark_session import (
    build_spark_session,
    local_frame,
    release_checkpoint,
    session_settings,
    small_input_settings,
)
from rocketmq_retry.warehouse.partitions import Tables, commit_of, committed, partition_path, write_planned

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
    files_quarantined: int = 0  # damaged files quarantined whole (not read)
    files_refused: int = 0  # matched paths whose real path leaves the landing root
    files_parsed: int = 0  # read and classified by this run
    files_reused: int = 0  # unchanged since the last commit: its rows copied (docs/ingest.md "Late files")
    files_removed: int = 0  # in the last commit, no longer in the landing: their rows dropped
    plan: str = ""  # the reuse summary line (incremental.Plan.summary)
    run_id: str | None = None  # the commit, None when nothing had changed (nothing written)


@dataclass(frozen=True)
class Checked:
    """What ``check_inputs`` found: the files Spark may read, and the rows the job writes for the others."""

    readable: list[SourceFile]
    skipped: dict[str, list[int]]  # path -> 1-based numbers of the lines the read cap skips
    long_lines: list[tuple[SourceFile, int, int, int, str]]  # file, line_no, byte_offset, size, raw
    damaged: list[tuple[SourceFile, FileCheck]]
    fingerprints: dict[str, str]  # source_file -> content fingerprint (ingest.check), the file part of event_id
    lines: int = 0  # lines of the readable files, as Hadoop's reader sees them


def long_line_reason(max_line_bytes: int) -> str:
    """The quarantine reason of a line at or over the read cap (the screen's own 1 MB check says the same)."""
    if max_line_bytes == P.MAX_LINE_CHARS:
        return P.LONG_LINE_REASON
    return f"line of {max_line_bytes} bytes or more"


def check_inputs(files: list[SourceFile], max_line_bytes: int, max_expanded_bytes: int) -> Checked:
    """Stream every file once in Python (``ingest.check``) before Spark reads any: damaged .gz files are set
    aside, and the lines the read cap will skip are recorded."""
    readable: list[SourceFile] = []
    skipped: dict[str, list[int]] = {}
    long_lines: list[tuple[SourceFile, int, int, int, str]] = []
    damaged: list[tuple[SourceFile, FileCheck]] = []
    fingerprints: dict[str, str] = {}
    lines = 0
    for f in files:
        try:
            check = check_file(f.path, max_line_bytes, max_expanded_bytes)
        except OSError as exc:  # e.g. swapped for a link (O_NOFOLLOW) or removed since it was listed
            check = FileCheck(damage=f"cannot read the file ({exc.strerror or exc})")
        if check.damage:
            damaged.append((f, check))
            continue
        readable.append(f)
        fingerprints[f.rel] = check.fingerprint
        lines += check.lines
        if check.long_lines:
            skipped[f.path] = [ln.line_no for ln in check.long_lines]
            for ln in check.long_lines:
                raw = ln.head.decode("utf-8", "replace")[: P.RAW_CAP]
                long_lines.append((f, ln.line_no, ln.byte_offset, ln.size, raw))
    return Checked(readable, skipped, long_lines, damaged, fingerprints, lines)


def _merged(a: Checked, b: Checked) -> Checked:
    return Checked(
        a.readable + b.readable,
        {**a.skipped, **b.skipped},
        a.long_lines + b.long_lines,
        a.damaged + b.damaged,
        {**a.fingerprints, **b.fingerprints},
        a.lines + b.lines,
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="rocketmq-retry ingest", description=__doc__.splitlines()[0])
    p.add_argument(
        "--date", required=True, type=date_arg, help="partition date YYYY-MM-DD (a day in the config's timezone)"
    )
    p.add_argument(
        "--landing",
        required=True,
        help="root directory the sources' globs are relative to; {ds} in it stands for the date (landing/{ds}: "
        "one folder per date, and the earlier dates the reconstruction reads are found and caught up)",
    )
    p.add_argument(
        "--landing-template",
        default=None,
        help="the landing path with {ds} for the date, when --landing is already resolved (the Airflow task)",
    )
    p.add_argument(
        "--no-catch-up",
        dest="catch_up",
        action="store_false",
        help="do not ingest the earlier look-back dates whose landing has files but whose events are not committed",
    )
    p.add_argument(
        "--reparse",
        dest="reuse",
        action="store_false",
        help="parse every file again, even those unchanged since the date's last run (by default their rows are "
        "reused: docs/ingest.md, 'Late files')",
    )
    p.add_argument("--warehouse", required=True, help="output root: <warehouse>/<table>/dt=<date>/")
    p.add_argument("--config", default=None, help="YAML config (default: $ROCKETMQ_RETRY_CONFIG, else defaults)")
    return p.parse_args(argv)


def run_ingest(
    spark: SparkSession,
    config: Config,
    ds: str,
    landing: str,
    warehouse: str,
    log: TextIO | None = None,
    reuse: bool = True,
) -> IngestResult:
    """Read the date's sources, write the four partitions atomically, return the per-file accounting.
    ``log`` defaults to the stderr of the moment of the call, not of the first import (a captured, since closed
    stream under pytest, or a redirected one in a worker).

    ``reuse``: the files unchanged since the date's last commit (same bytes, same parser and config) are not
    parsed again: their rows are copied from that commit (``ingest.incremental``, docs/ingest.md "Late files")."""
    log = log if log is not None else sys.stderr
    started = time.monotonic()
    files, notes, refused = resolve_inputs(config, landing, ds)
    for note in notes:
        print(f"ingest: note: {note}", file=log)
    print(f"ingest: {len(files)} file(s) for {ds}", file=log)
    # hashed before they are checked and read: a file growing meanwhile is seen as changed by the next run
    digests = incremental.digest_files(files)
    hashed = sum(d.size for d in digests.values() if d is not None)
    print(f"ingest: [{time.monotonic() - started:6.1f} s] hashed {len(files)} file(s), {hashed} bytes", file=log)
    key = incremental.parse_key(config)
    # dt=D is the calendar day D in the config's zone (as the simulator's --date); event_time stays UTC
    zone = config.timezone
    run = _Run(spark, config, ds, zone, warehouse, files, notes, refused, digests, key, reuse, log, started)
    with session_settings(spark, {"spark.sql.codegen.hugeMethodLimit": INGEST_HUGE_METHOD_LIMIT}):
        return run.execute()


def prior_manifest(warehouse: str, ds: str) -> tuple[incremental.InputManifest | None, str | None]:
    """The input manifest of the date's last commit and its run id, when all four tables are of that commit
    (read under the commit lock, see ``write_planned``); (None, None) otherwise: everything is parsed."""
    tables = ("events", "quarantine", "ingest_report", "bindings")
    runs = set()
    for table in tables:
        path = partition_path(warehouse, table, ds)
        if not path.is_dir():
            return None, None
        runs.add((commit_of(path) or {}).get("run_id"))
    if len(runs) != 1 or None in runs:
        return None, None
    found = incremental.read_manifest(partition_path(warehouse, incremental.MANIFEST_TABLE, ds))
    return (found, runs.pop()) if found is not None else (None, None)


class _Run:
    """One ingest of one date: the plan (what is parsed, what is reused) and the tables, built under the lock."""

    def __init__(
        self,
        spark: SparkSession,
        config: Config,
        ds: str,
        zone: str,
        warehouse: str,
        files: list[SourceFile],
        notes: list[str],
        refused: list[Refused],
        digests: dict[str, incremental.Digest | None],
        key: str,
        reuse: bool,
        log: TextIO,
        started: float,
    ) -> None:
        self.spark, self.config, self.ds, self.zone, self.warehouse = spark, config, ds, zone, warehouse
        self.files, self.notes, self.refused, self.digests, self.key = files, notes, refused, digests, key
        self.reuse, self.log, self.started = reuse, log, started
        self.kept: list[DataFrame] = []
        self.plan = incremental.Plan()
        self.settings = contextlib.ExitStack()  # the session settings of this run's parse, undone when it ends

    def step(self, what: str) -> None:
        print(f"ingest: [{time.monotonic() - self.started:6.1f} s] {what}", file=self.log, flush=True)

    def keep(self, df: DataFrame, what: str) -> DataFrame:
        # Materialise once and cut the lineage: each later reader scans stored rows instead of recomputing the
        # classifier, and the outputs' plans ship a scan, not its expression tree (a task binary over 1 MB).
        from pyspark import StorageLevel

        self.step(what)
        df = df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        self.kept.append(df)
        return df

    def execute(self) -> IngestResult:
        try:
            run_id = write_planned(self.warehouse, self.ds, "ingest", self.tables, log=self.step)
            if run_id is None:
                self.step(f"nothing changed since the last commit ({self.plan.summary()}): partitions kept")
            # a few rows: sorted here rather than by a Spark sort (two more jobs)
            report = sorted(
                (
                    r.asDict(recursive=True)
                    for r in self.spark.read.parquet(str(committed(self.warehouse, "ingest_report", self.ds))).collect()
                ),
                key=lambda r: (r["source"], r["source_file"]),
            )
            self.step("done")
        finally:
            for df in reversed(self.kept):  # a later checkpoint may be built on an earlier one
                release_checkpoint(df)
            self.settings.close()
        plan = self.plan
        return IngestResult(
            report=report,
            notes=self.notes,
            events=sum(r["event_rows"] or 0 for r in report),
            quarantined=sum(r["quarantined"] or 0 for r in report),
            seconds=time.monotonic() - self.started,
            files_quarantined=sum(r["file_status"] == "quarantined" for r in report),
            files_refused=sum(r["file_status"] == "refused" for r in report),
            files_parsed=len(plan.parse),
            files_reused=len(plan.reuse),
            files_removed=len(plan.removed),
            plan=plan.summary(),
            run_id=run_id,
        )

    def tables(self) -> Tables | None:
        """Called under the date's commit lock: what the last commit holds cannot change until ours is in."""
        cfg = self.config.ingest
        prior, prior_run = prior_manifest(self.warehouse, self.ds) if self.reuse else (None, None)
        plan = self.plan = incremental.plan(prior, self.files, self.digests, self.key, self.reuse)
        checked = check_inputs(plan.parse, cfg.max_line_bytes, cfg.max_expanded_bytes)
        moved = incremental.demote_shared(plan, self.files, checked.fingerprints)
        if moved:
            checked = _merged(checked, check_inputs(moved, cfg.max_line_bytes, cfg.max_expanded_bytes))
        for f, check in checked.damaged:
            print(f"ingest: quarantined file {f.rel}: {check.damage}", file=self.log)
        self.step(f"files: {plan.summary()}" + (f" (last commit {prior_run})" if prior_run else ""))
        refused = tuple(sorted(r.rel for r in self.refused))
        if prior is not None and not plan.parse and not plan.removed and prior.refused == refused:
            return None
        manifest = self._manifest(checked, prior, refused)
        self._size_the_parse(checked.lines)
        # every file reused (some removed, or a refused path came or went): no classifier to start
        parsed = self._nothing_parsed() if plan.reuse and not plan.parse else self._parse(checked)
        if plan.reuse:
            parsed = self._with_reused(parsed, plan.reuse)
        report_df = parsed["ingest_report"]

        def write_report(path: object) -> None:
            # the manifest goes into the report's staging dir: committed (swapped in) with the four tables
            report_df.write.mode("error").parquet(str(path))
            incremental.write_manifest(path, manifest)

        return {**parsed, "ingest_report": write_report}

    def _size_the_parse(self, lines: int) -> None:
        """A small parse (a small day, a late file) runs on Spark's interpreted expressions: generating and
        compiling its code would cost more than its rows (``spark_session.small_input_settings``)."""
        spark_config = self.config.spark
        settings = small_input_settings(lines, spark_config.interpreted_below_rows, spark_config.conf)
        if settings:
            below = spark_config.interpreted_below_rows
            self.step(f"{lines} lines to parse (spark.interpreted_below_rows: {below}): interpreted expressions")
        self.settings.enter_context(session_settings(self.spark, settings))

    def _manifest(
        self, checked: Checked, prior: incremental.InputManifest | None, refused: tuple[str, ...]
    ) -> incremental.InputManifest:
        damaged = {f.rel for f, _ in checked.damaged}
        entries: dict[str, incremental.FileEntry] = {}
        for f in self.plan.parse:
            d = self.digests.get(f.rel) or incremental.Digest(-1, "")  # never equal to a hash: parsed next time
            status = "quarantined" if f.rel in damaged else "read"
            entries[f.rel] = incremental.entry(f, d, checked.fingerprints.get(f.rel), status)
        for rel in self.plan.reuse:
            assert prior is not None
            entries[rel] = prior.files[rel]
        return incremental.InputManifest(self.key, entries, refused)

    def _parse(self, checked: Checked) -> dict[str, DataFrame]:
        """The four tables of the files in ``checked`` (all of the day's in a full run) and of the refused paths."""
        spark, ds = self.spark, self.ds
        max_line_bytes = self.config.ingest.max_line_bytes
        by_family: dict[str, list[SourceFile]] = {}
        for f in checked.readable:
            by_family.setdefault(parse.family(f.source), []).append(f)
        self.step("planning")
        lines = {
            fam: read_lines(spark, fs, max_line_bytes, checked.skipped) for fam, fs in sorted(by_family.items())
        } or {"log": read_lines(spark, [])}
        zones = tuple(sorted({f.timezone for f in self.files}))
        frameworks = tuple(self.config.causes.framework_packages)
        classified = parse.classify_families(lines, ds, self.zone, zones, self.keep, frameworks)
        instances = instance_table(spark, checked.readable, checked.fingerprints)
        long_q, long_lines = _long_line_rows(spark, checked, max_line_bytes, ds)
        quarantine = parse.quarantine_of(classified).unionByName(long_q).unionByName(_damaged_rows(spark, checked))
        groups = self.keep(parse.line_groups(classified.unionByName(long_lines)), "counting lines per file")
        # the same content read twice (two paths in the landing) gives the same event ids: written once, counted
        events, duplicates = parse.dedup_events(
            parse.events_of(classified, instances),
            parse.shared_fingerprints(checked.readable, checked.fingerprints),
            self.keep,
        )
        report_df = parse.with_duplicates(parse.report_of(groups), duplicates)
        report_df = report_df.unionByName(_file_report_rows(spark, checked, self.refused))
        # the four tables are committed together: a crash leaves all of them from the previous run or all new
        return {
            "events": events,
            "quarantine": quarantine,
            "ingest_report": report_df.coalesce(1),
            "bindings": parse.bindings_of(groups, instances).coalesce(1),
        }

    def _nothing_parsed(self) -> dict[str, DataFrame]:
        """Empty tables (no Spark job) and the refused paths' report rows: every file of the day is reused."""
        empty = Checked([], {}, [], [], {})
        tables = {t: local_frame(self.spark, [], contract.struct_type(t)) for t in ("events", "quarantine", "bindings")}
        return {**tables, "ingest_report": _file_report_rows(self.spark, empty, self.refused)}

    def _with_reused(self, parsed: dict[str, DataFrame], reuse: list[str]) -> dict[str, DataFrame]:
        """``parsed`` plus the rows the last commit holds for the ``reuse`` files (read lazily while staging:
        the lock keeps that commit in place until ours is in)."""
        from pyspark.sql import functions as F

        self.step(f"copying the rows of {len(reuse)} unchanged file(s) from the last commit")
        mine = F.col("source_file").isin(*reuse)
        out = {}
        for table, df in parsed.items():
            before = self.spark.read.parquet(str(partition_path(self.warehouse, table, self.ds))).filter(mine)
            if table == "ingest_report":
                # refused paths are listed afresh each run (their rows are in ``parsed``)
                before = before.filter(F.col("file_status") != "refused")
            both = df.unionByName(before.select(*df.columns))
            # one file, as a full run writes it (no sort: two more jobs for a few rows; readers sort)
            out[table] = both.coalesce(1) if table in ("ingest_report", "bindings") else both
        return out


def _long_line_rows(spark: SparkSession, checked: Checked, cap: int, ds: str) -> tuple[DataFrame, DataFrame]:
    """The lines the read cap skipped: (quarantine rows with their byte offset, LINE_COLUMNS rows for the
    accounting). They are counted on the run's date: their own timestamp, if any, was not read."""
    from pyspark.sql import functions as F

    reason = long_line_reason(cap)
    q = [(f.source, f.rel, line_no, raw, reason, offset) for f, line_no, offset, _, raw in checked.long_lines]
    quarantine = local_frame(spark, q, contract.struct_type("quarantine"))
    lines = quarantine.select(
        "source",
        "source_file",
        "line_no",
        F.lit(ds).cast("date").alias("line_date"),
        F.lit("quarantined").alias("category"),
        F.lit(None).cast("string").alias("kind"),
        "reason",
        "raw",
        F.array().cast(f"array<{parse.EVENT_STRUCT_DDL}>").alias("events"),
        F.lit(None).cast("long").alias("line_hash"),
        F.array().cast(f"array<{parse.BAD_STRUCT_DDL}>").alias("bad"),
        F.lit(0).alias("other_date_events"),
        F.lit(None).cast(parse.BIND_DDL).alias("bind"),
    )
    return quarantine, lines


def _damaged_rows(spark: SparkSession, checked: Checked) -> DataFrame:
    """One quarantine row per damaged file: no line number and no raw text (nothing of it was read)."""
    rows = [(f.source, f.rel, None, None, c.damage, c.damage_offset) for f, c in checked.damaged]
    return local_frame(spark, rows, contract.struct_type("quarantine"))


def _file_report_rows(spark: SparkSession, checked: Checked, refused: list[Refused]) -> DataFrame:
    """ingest_report rows of the files that were not read: damaged (quarantined whole) and refused ones."""
    zero = (0,) * 10
    rows = [(f.rel, f.source, *zero, None, None, "quarantined", c.damage, 0, None) for f, c in checked.damaged]
    rows += [(r.rel, r.source, *zero, None, None, "refused", r.reason, 0, None) for r in refused]
    return local_frame(spark, rows, contract.struct_type("ingest_report"))


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
    read = [r for r in report if r.get("file_status", "read") == "read"]
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
        for r in read
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
        for r in read
        if r["lines_read"] != r["events"] + r["ignored"] + r["continuation"] + r["quarantined"]
    ]
    lines.append(
        "accounting: lines = events + ignored + continuation + quarantined for every file"
        if not unbalanced
        else f"accounting does NOT balance for: {', '.join(unbalanced)}"
    )
    # quarantined lines by reason (all files), then by file and reason: what to look at first
    by_reason: dict[str, int] = {}
    for r in read:
        for reason, n in (r.get("quarantined_by_reason") or {}).items():
            by_reason[reason] = by_reason.get(reason, 0) + n
    if by_reason:
        lines.append("quarantined lines by reason:")
        lines += [f"  {n:>8}  {reason}" for reason, n in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))]
        lines.append("quarantined lines by file:")
        for r in read:
            for reason, n in sorted((r.get("quarantined_by_reason") or {}).items()):
                lines.append(f"  {n:>8}  {r['source_file']}: {reason}")
    # the same content read twice: its event rows are in the events table once, under the first file
    copies = [r for r in read if r.get("duplicate_events")]
    if copies:
        lines.append(
            f"event rows not written again (the same lines read from another file of the day): "
            f"{sum(r['duplicate_events'] for r in copies)}"
        )
        lines += [
            f"  {r['duplicate_events']:>8}  {r['source_file']}: same lines as {', '.join(r['duplicate_of'] or [])}"
            for r in copies
        ]
    # files not read at all: named one by one
    for status, title in (("quarantined", "files quarantined whole (not read)"), ("refused", "files refused")):
        hit = [r for r in report if r.get("file_status") == status]
        if hit:
            lines.append(f"{title}: {len(hit)}")
            lines += [f"  {r['source_file']} ({r['source']}): {r['file_reason']}" for r in hit]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_config(args.config)
    layout = landing_layout(config, args.landing, args.date, args.landing_template)
    landing = args.landing.replace(DS, args.date)
    if not config.sources:  # fail before paying for a Spark session
        resolve_inputs(config, landing, args.date)

    spark = build_spark_session(
        "rocketmq-retry-ingest",
        master=None if _under_spark_submit() else config.spark.master,
        driver_memory=config.spark.driver_memory,
        shuffle_partitions=config.spark.shuffle_partitions,
        conf=config.spark.conf,
    )
    result = run_ingest(spark, config, args.date, landing, args.warehouse, reuse=args.reuse)
    _print_result(args.date, result)
    if args.catch_up:
        _catch_up(spark, config, layout, args.warehouse, args.date)
    return 0


def _print_result(ds: str, result: IngestResult) -> None:
    print(format_report(result.report))
    print(
        f"ingest {ds}: {result.events} events, {result.quarantined} quarantined lines, "
        f"{result.files_quarantined} files quarantined, {result.files_refused} refused, {result.seconds:.1f} s"
    )
    written = "nothing changed, partitions kept" if result.run_id is None else f"committed as run {result.run_id}"
    print(f"ingest {ds}: {result.plan}; {written}")


def _catch_up(spark: SparkSession, config: Config, layout: Layout, warehouse: str, ds: str) -> None:
    """Ingest the earlier dates D's reconstruction reads that have landing files but no committed events
    (``ingest.catchup``), so that D's tables do not depend on the order in which dates ran."""
    todo = catch_up(config, layout, warehouse, ds)
    if todo.missing:
        print(
            f"ingest {ds}: note: no events for the earlier dates {date_ranges(todo.missing)}, which the "
            f"reconstruction of {ds} reads; {layout.how} names no date, so their landing cannot be found: if it held "
            "data for them, ingest them first (or give --landing as a path with {ds})"
        )
    for i, d in enumerate(todo.pending, 1):
        if committed(warehouse, "events", d).is_dir():  # another run ingested it meanwhile
            continue
        folder = layout.folder(d)
        assert folder is not None  # pending dates come from a dated layout
        print(f"ingest {ds}: catching up {d} ({i} of {len(todo.pending)}), which its reconstruction reads", flush=True)
        _print_result(d, run_ingest(spark, config, d, folder, warehouse))


def _under_spark_submit() -> bool:
    import os

    return "SPARK_SUBMIT" in os.environ or os.environ.get("PYSPARK_GATEWAY_PORT") is not None


def cli(argv: list[str] | None = None) -> int:
    """``main`` with UserError turned into one line on stderr (for spark-submit, which has no dispatcher).

    A UserError exits with NOT_RETRYABLE_EXIT_CODE: the Airflow task fails without retries (a retry re-reads the
    same config and input). Damaged input files do not fail the run at all: they are quarantined.
    """
    try:
        return main(argv)
    except UserError as exc:
        print(f"rocketmq-retry: {exc}", file=sys.stderr)
        return NOT_RETRYABLE_EXIT_CODE


if __name__ == "__main__":
    raise SystemExit(cli())
