"""Ingest throughput: the Spark job vs DuckDB doing the same extraction over the same simulated files.

    .venv/bin/python benchmarks/bench_ingest.py --lines 1000000 --lines 10000000 [--driver-memory 2g]

For each size it simulates a landing (``rocketmq-retry simulate``; ~600 lines per business message with the
default noise), then in the same run times (1) ``jobs.ingest.run_ingest`` end to end (read, classify, write
events/quarantine/ingest_report) in a new JVM, as a daily ``spark-submit`` runs it, and again in that JVM
(``--repeat``, default 2; the best repeat is 'again'), and (2) DuckDB over the same files: numbered lines, the
same head layouts, time zones, statement table (generated from ``jobs.ingest.patterns``), continuation dating
window, trace record split and dump JSON, written to Parquet. It prints a table with lines/s and the
Spark/DuckDB ratio. Not a test: numbers depend on the machine.

It also measures Spark's own floor on the same files, in a new JVM as a daily ``spark-submit`` has (``--no-floor``
skips it): read every line with the job's read settings, cut and parse each head line's timestamp, and count the
lines per file and date. Every ingest run does at least that much, so the floor is the least time any Spark ingest
of those files can take on this machine; the gap to it is what the job's own work costs.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

# Measured on the built-in demo deployment at the default noise (1.0): a day's periodic client and broker lines
# come to ~1.2 M whatever the traffic, and each business message adds ~12 lines. Larger targets therefore scale
# the noise (a busier fleet logs more heartbeats, rebalances and stats) and the messages together.
NOISE_LINES_PER_DAY = 1_200_000
LINES_PER_MESSAGE = 610  # messages = lines / this: the traffic share of the 1 M-line landing


def simulate(out: pathlib.Path, lines: int, ds: str, config: str) -> int:
    from rocketmq_retry.simulate.cli import main as simulate_main

    messages = max(50, lines // LINES_PER_MESSAGE)
    noise = max(1.0, round(lines / NOISE_LINES_PER_DAY, 2))
    simulate_main(
        ["--date", ds, "--out", str(out), "--config", config, "--messages", str(messages), "--force", "--quiet",
         "--noise", str(noise)]
    )  # fmt: skip
    return sum(1 for p in out.rglob("*") if p.is_file() and "_truth" not in p.parts for _ in _lines(p))


def _lines(p: pathlib.Path):  # type: ignore[no-untyped-def]
    import gzip

    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as fh:
        yield from fh


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def duckdb_ingest(files: list, ds: str, zone: str, out: pathlib.Path) -> dict[str, int]:  # type: ignore[type-arg]
    """The same extraction in DuckDB SQL (log formats, trace records, dumps); returns category counts."""
    import duckdb

    from rocketmq_retry.jobs.ingest import patterns as P

    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.execute("CREATE TABLE cat(path VARCHAR, source VARCHAR, rel VARCHAR, tz VARCHAR)")
    con.executemany("INSERT INTO cat VALUES (?, ?, ?, ?)", [(f.path, f.source, f.rel, f.timezone) for f in files])
    paths = "[" + ",".join(_sql_str(f.path) for f in files) + "]"
    con.execute(f"""
        CREATE TABLE lines AS
        SELECT c.source, c.rel AS source_file, c.tz, r.line,
               r.ordinality - min(r.ordinality) OVER (PARTITION BY r.filename) + 1 AS line_no
        FROM read_csv({paths}, columns={{'line': 'VARCHAR'}}, delim=chr(31) || chr(30), quote='', escape='',
                      header=false, filename=true, auto_detect=false, strict_mode=false, ignore_errors=true)
             WITH ORDINALITY r
        JOIN cat c ON c.path = r.filename
    """)
    stmt_case = (
        "CASE "
        + " ".join(
            f"WHEN source IN ({','.join(_sql_str(x) for x in s.formats)}) AND starts_with(msg, {_sql_str(s.prefix)}) "
            f"THEN {i}"
            for i, s in enumerate(P.STATEMENTS)
        )
        + " END"
    )
    full_case = (
        "CASE stmt "
        + " ".join(f"WHEN {i} THEN regexp_matches(msg, {_sql_str(s.pattern)})" for i, s in enumerate(P.STATEMENTS))
        + " END"
    )
    type_case = (
        "CASE stmt " + " ".join(f"WHEN {i} THEN {_sql_str(s.event_type)}" for i, s in enumerate(P.STATEMENTS)) + " END"
    )
    group_case = (
        "CASE stmt "
        + " ".join(
            f"WHEN {i} THEN nullif(regexp_extract(msg, {_sql_str(s.group_rx)}, 1), '')"
            for i, s in enumerate(P.STATEMENTS)
            if s.group_rx
        )
        + " END"
    )
    rx4, rx5 = P.CLIENT4_HEAD, P.CLIENT5_HEAD
    rxb = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?: (?:TRACE|DEBUG|INFO|WARN|ERROR)) ?(?:\S+ )?- (.*)$"
    con.execute(f"""
        CREATE TABLE logs AS
        WITH h AS (
          SELECT source, source_file, line_no, tz, line,
            CASE WHEN source = 'rocketmq-client-4x'
                   THEN regexp_extract(line, {_sql_str(rx4)}, ['ts', 'lvl', 'lg', 'msg'])
                 WHEN source IN ('rocketmq-client-5x', 'rocketmq-grpc-client')
                   THEN regexp_extract(line, {_sql_str(rx5)}, ['ts', 'lvl', 'pid', 'th', 'lg', 'msg'])
                 WHEN source IN ('broker', 'broker-stats') THEN regexp_extract(line, {_sql_str(rxb)}, ['ts', 'msg'])
            END AS m
          FROM lines WHERE source NOT IN ('trace', 'message-dump')
        ), p AS (
          SELECT *, nullif(m.msg, '') AS msg,
            timezone(tz, CASE WHEN length(m.ts) = 19 THEN try_strptime(m.ts, '%Y-%m-%d %H:%M:%S')
                              ELSE try_strptime(replace(m.ts, ',', '.'), '%Y-%m-%d %H:%M:%S.%g') END) AS ts
          FROM h
        ), s AS (SELECT *, {stmt_case} AS stmt FROM p)
        SELECT source_file, line_no,
          CASE WHEN msg IS NULL THEN 'continuation' WHEN stmt IS NULL THEN 'ignored'
               WHEN {full_case} THEN 'event' ELSE 'quarantined' END AS cat0,
          ts, {type_case} AS event_type, {group_case} AS consumer_group,
          nullif(regexp_extract(msg, 'UNIQ_KEY=([^,}}]*)', 1), '') AS msg_id,
          try_cast(nullif(regexp_extract(msg, 'reconsumeTimes=(\\d+)', 1), '') AS INT) AS reconsume_times
        FROM s
    """)
    con.execute(f"""
        CREATE TABLE logs2 AS
        SELECT *, CASE WHEN CAST(timezone({_sql_str(zone)}, coalesce(ts, last_value(ts IGNORE NULLS) OVER w))
                   AS DATE) = DATE {_sql_str(ds)} THEN cat0 ELSE 'other_date' END AS category
        FROM logs WINDOW w AS (PARTITION BY source_file ORDER BY line_no)
    """)
    con.execute("""
        CREATE TABLE recs AS
        WITH t AS (
          SELECT source_file, line_no, line AS body FROM lines WHERE source = 'trace'
          UNION ALL
          SELECT source_file, line_no, json_extract_string(line, '$.body') FROM lines
          WHERE source = 'message-dump' AND json_extract_string(line, '$.topic') = 'RMQ_SYS_TRACE_TOPIC'
        ), r AS (
          SELECT source_file, line_no, unnest(string_split(body, chr(2))) AS rec FROM t
        ), f AS (SELECT source_file, line_no, string_split(rec, chr(1)) AS fs FROM r WHERE rec <> '')
        SELECT source_file, line_no, fs[1] AS kind,
          CASE fs[1] WHEN 'SubAfter' THEN fs[3] ELSE fs[6] END AS msg_id,
          CASE fs[1] WHEN 'SubBefore' THEN fs[4] WHEN 'SubAfter' THEN fs[9] END AS consumer_group,
          make_timestamp(try_cast(CASE fs[1] WHEN 'SubAfter' THEN fs[8] ELSE fs[2] END AS BIGINT) * 1000) AS ts
        FROM f
    """)
    con.execute("""
        CREATE TABLE dumps AS
        SELECT source_file, line_no, json_extract_string(line, '$.topic') AS topic,
          coalesce(json_extract_string(line, '$.properties.UNIQ_KEY'), json_extract_string(line, '$.msgId')) AS msg_id,
          make_timestamp(try_cast(json_extract_string(line, '$.storeTimestamp') AS BIGINT) * 1000) AS ts
        FROM lines WHERE source = 'message-dump'
    """)
    con.execute(f"COPY (SELECT * FROM logs2 WHERE category = 'event') TO {_sql_str(str(out / 'events.parquet'))}")
    con.execute(f"COPY (SELECT * FROM recs) TO {_sql_str(str(out / 'trace.parquet'))}")
    con.execute(f"COPY (SELECT * FROM dumps) TO {_sql_str(str(out / 'dumps.parquet'))}")
    counts = dict(con.execute("SELECT category, count(*) FROM logs2 GROUP BY ALL").fetchall())
    counts["lines"] = con.execute("SELECT count(*) FROM lines").fetchone()[0]  # type: ignore[index]
    return counts


def spark_floor(spark, files: list) -> float:  # type: ignore[no-untyped-def,type-arg]
    """Seconds for the least any ingest of ``files`` does: every line read as the job reads it (``read_lines``: one
    partition per file, numbered), its head timestamp cut and parsed, lines counted per file and date on the
    driver."""
    from pyspark.sql import functions as F

    from rocketmq_retry.jobs.ingest.read import read_lines

    t0 = time.monotonic()
    head = F.col("line").substr(1, 23)
    ts = F.when(head.rlike(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), F.translate(head, ",", ".").try_cast("timestamp"))
    read_lines(spark, files).groupBy("source_file", F.to_date(ts)).agg(F.max("line_no")).collect()
    return time.monotonic() - t0


def child(args: argparse.Namespace) -> int:
    """``--child job|floor LANDING``: ``--repeat`` runs in this process's new JVM; prints their seconds as JSON
    (and, for the job, the lines it read)."""
    from rocketmq_retry.config import load_config
    from rocketmq_retry.jobs.ingest.job import run_ingest
    from rocketmq_retry.jobs.ingest.read import resolve_files
    from rocketmq_retry.spark_session import build_spark_session

    what, landing = args.child
    config = load_config(args.config)
    spark = build_spark_session(
        f"bench-{what}", master="local[2]", driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions
    )
    files, _ = resolve_files(config, landing, args.date)
    runs, lines_read = [], 0
    for _ in range(args.repeat):
        if what == "floor":
            runs.append(spark_floor(spark, files))
            continue
        shutil.rmtree(args.warehouse, ignore_errors=True)
        t0 = time.monotonic()
        result = run_ingest(spark, config, args.date, landing, args.warehouse)
        runs.append(time.monotonic() - t0)
        lines_read = sum(r["lines_read"] + r["other_date"] for r in result.report)
    print(json.dumps({"runs": runs, "lines_read": lines_read}))
    return 0


def in_new_jvm(what: str, landing: pathlib.Path, warehouse: pathlib.Path, args: argparse.Namespace) -> dict:  # type: ignore[type-arg]
    cmd = [sys.executable, __file__, "--child", what, str(landing), "--warehouse", str(warehouse)]
    cmd += ["--date", args.date, "--config", args.config, "--repeat", str(args.repeat)]
    cmd += ["--driver-memory", args.driver_memory, "--shuffle-partitions", str(args.shuffle_partitions)]
    # the job's progress lines pass through; the last line of stdout is the result
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} run in a new JVM failed (exit {done.returncode}): {' '.join(cmd)}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, action="append", help="simulated lines (repeatable)")
    p.add_argument("--date", default="2026-11-20")
    p.add_argument("--config", default="examples/rocketmq-retry.yaml")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--workdir", default=None)
    p.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="Spark runs per size, each size in a new JVM: the first is timed in the table ('first', as a daily "
        "spark-submit runs), the best later one as 'again' (JIT and generated code warm, as in a long-lived session)",
    )
    p.add_argument("--no-floor", action="store_true", help="skip Spark's floor on the same files")
    p.add_argument("--child", nargs=2, metavar=("JOB_OR_FLOOR", "LANDING"), help=argparse.SUPPRESS)
    p.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.repeat = max(2, args.repeat)
    if args.child:
        return child(args)
    sizes = args.lines or [1_000_000, 10_000_000]

    from rocketmq_retry.config import load_config
    from rocketmq_retry.jobs.ingest.read import resolve_files

    config = load_config(args.config)
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="bench-ingest-"))
    rows = []
    nan = [float("nan")] * 2
    for size in sizes:
        landing = work / f"landing-{size}"
        total = simulate(landing, size, args.date, args.config)
        print(f"simulated {total} lines in {landing}", file=sys.stderr)
        job = in_new_jvm("job", landing, work / f"wh-{size}", args)
        floor = nan if args.no_floor else in_new_jvm("floor", landing, work / f"wh-{size}", args)["runs"]
        files, _ = resolve_files(config, landing, args.date)
        dd_out = work / f"duckdb-{size}"
        shutil.rmtree(dd_out, ignore_errors=True)
        dd_out.mkdir(parents=True)
        t0 = time.monotonic()
        counts = duckdb_ingest(files, args.date, config.timezone, dd_out)
        duck_s = time.monotonic() - t0
        runs = job["runs"]
        rows.append(
            (size, job["lines_read"], runs[0], min(runs[1:]), duck_s, counts["lines"], floor[0], min(floor[1:]))
        )
        print(
            f"size {size}: {job['lines_read']} lines, spark {' / '.join(f'{r:.1f}' for r in runs)} s, "
            f"floor {' / '.join(f'{r:.1f}' for r in floor)} s, duckdb {duck_s:.1f} s, duckdb categories {counts}",
            file=sys.stderr,
            flush=True,
        )
    print(
        f"\nSpark settings: local[2], driver memory {args.driver_memory}, "
        f"spark.sql.shuffle.partitions {args.shuffle_partitions}, one input partition per file; each size in a new JVM"
    )
    print(
        f"{'target':>10} {'lines':>10} {'spark s':>8} {'spark l/s':>10} {'duckdb s':>9} {'duckdb l/s':>11} {'ratio':>6}"
        f" {'again s':>8} {'again l/s':>10} {'ratio':>6} {'floor s':>8} {'again':>6} {'150k/s':>7} {'3x duck':>8}"
    )
    for size, n, first, again, duck_s, duck_lines, fl, fl_again in rows:
        print(
            f"{size:>10} {n:>10} {first:>8.1f} {n / first:>10.0f} {duck_s:>9.1f} {duck_lines / duck_s:>11.0f}"
            f" {first / duck_s:>6.1f} {again:>8.1f} {n / again:>10.0f} {again / duck_s:>6.1f} {fl:>8.1f}"
            f" {fl_again:>6.1f} {n / 150_000:>7.1f} {3 * duck_s:>8.1f}"
        )
    print(
        "spark: the job's first run in a new JVM (as a daily spark-submit) and its best repeat in that JVM; "
        "floor: Spark reading every line as the job does, parsing its head timestamp and counting per file and "
        "date, first and again in its own new JVM (no Spark ingest of these files can be faster); "
        "150k/s and 3x duck: the seconds each target allows"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
