"""The whole daily pipeline at size: each step as the DAG runs it, on simulated days of 1 M and 10 M lines.

    .venv/bin/python benchmarks/bench_pipeline.py [--sizes 1000000,10000000] [--profiles shared-topic,production]
        [--workdir DIR] [--keep]

For each line mix (``--profiles``, docs/scale.md "Line mixes") and size it simulates a day of the mix's topology
(benchmarks/topologies/: ``shared-topic``, the first mix, mostly client offset flushes; ``production``, Spring Boot
hosts' own INFO lines and deep stack traces, plain 4.x workers, a 5.x client; no source names a group), then runs,
one process each and in the DAG's order:

1. ingest and 2. reconstruct as ``spark-submit`` processes, with the command ``RocketMQSparkJobOperator`` builds
   (its own ``execute`` up to the hook's ``Popen``: properties file, ``--conf`` from the config, ``--py-files``);
3. validate as the DAG's validate task runs it (``validation.run.run`` in a Python process, local Spark);
4. compensate (``rocketmq-retry compensate``: the DAG's plan -> batches -> summary, in one process) against a
   local HTTP receiver on 127.0.0.1 (a stdlib server in a thread answering 200) that the config routes every
   dead letter to;

then the floor (one Spark process, started as the jobs start theirs, reading and counting the same files), and
DuckDB doing the ingest's extraction over the same files (``bench_ingest.duckdb_ingest``) in a process of its own.
Each step's CPU seconds are its whole process tree's (``wait4``), a figure that holds on a shared machine
where wall seconds do not. Each step's peak memory is sampled over its process tree (every 0.2 s: the sum of
``VmHWM`` over the live processes, JVM and Python apart), so the JVM that spark-submit starts is measured, not
only Python.

It prints one table per size (seconds, rows in and out, rate, peak RSS) and, for two sizes or more, each step's
growth from the smallest to the largest size and the issue #18 targets. Not a test: numbers depend on the machine.
Each size's landing, warehouse and config stay under ``<workdir>/<size>`` (``--keep`` also keeps a warehouse that
existed before; by default the warehouse is rebuilt, the simulated landing reused when its settings match).
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
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOPOLOGIES = ROOT / "benchmarks" / "topologies"
DS = "2026-11-20"
SEED = 3


@dataclass(frozen=True)
class Profile:
    """A line mix: a topology, its scenario and how many business messages and how much periodic noise give a day
    of a given number of lines (calibrated on the topology at seed 3; docs/scale.md "Line mixes")."""

    name: str
    fixed_lines: int  # start-up, rebalance, stats: lines that do not grow with the traffic
    lines_per_message: int  # lines each business message brings (deliveries, failures, traces, dumps)
    noise_lines: int  # periodic lines per unit of --noise
    noise: float | None  # fixed --noise, or None: the noise makes up what the traffic leaves
    message_every: int = 0  # with noise None: one business message per this many lines

    @property
    def topology(self) -> pathlib.Path:
        return TOPOLOGIES / f"{self.name}.yaml"

    @property
    def scenario(self) -> pathlib.Path:
        return TOPOLOGIES / f"{self.name}-scenario.yaml"

    def simulation_args(self, lines: int) -> dict[str, Any]:
        if self.noise is None:
            messages = max(50, lines // self.message_every)
            left = lines - self.fixed_lines - messages * self.lines_per_message
            noise = round(max(0.0, left) / self.noise_lines, 2)
        else:
            noise = self.noise
            left = lines - self.fixed_lines - noise * self.noise_lines
            messages = max(50, round(left / self.lines_per_message))
        return {"messages": messages, "noise": noise, "seed": SEED, "date": DS, "topology": self.name}


PROFILES = {
    # The benchmark's first mix (2026-11-25): 1 business message per 600 lines, as in bench_ingest.py, and the
    # 4.x clients' [persistAll] offset flushes (the cheapest line there is) making up the rest.
    "shared-topic": Profile("shared-topic", 7_300, 70, 328_600, None, message_every=600),
    # A production day (2026-11-28): Spring Boot hosts writing their own INFO lines around every delivery and
    # 30-80-line traces on failures, plain 4.x workers, a 5.x client, brokers; clients at a twentieth of the real
    # offset-flush rate, so the day is traffic: about 13 lines per business message.
    "production": Profile("production", 3_700, 13, 756_000, 0.05),
}
SPARK_CONN = {"conn_type": "spark", "host": "local[2]"}
SPARK_SETTINGS = {"driver_memory": "2g", "shuffle_partitions": 4}


def label(size: int) -> str:
    return f"{size // 1_000_000}m" if size % 1_000_000 == 0 else str(size)


# --------------------------------------------------------------------------------------------------------------
# process-tree memory


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _ppid(proc: Any) -> int | None:
    try:
        return int(proc.ppid())
    except Exception:  # gone between listing and reading
        return None


def _kind(pid: int) -> str | None:
    try:
        # the executable, not the process name: a console script (rocketmq-retry) is a Python process too.
        # Read afresh on every sample, not with psutil's exe(), which caches its first answer: spark-submit's
        # root process is a shell script that exec()s into the job's JVM, and a cached "bash" hid that JVM.
        name = pathlib.Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:  # gone between listing and reading
        return None
    if name == "java":
        return "jvm"
    return "python" if name.startswith("python") else None


class TreeMemory:
    """Peak memory of a process and its descendants, JVM and Python apart: every ``interval`` s the sum of the
    peak RSS (``VmHWM``) of the live processes of each kind. A process's own peak is exact; the sum is an upper
    bound when two processes of a kind peak at different moments (a step's JVM is one process)."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak = {"jvm": 0, "python": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except Exception:
            return
        now = {"jvm": 0, "python": 0}
        kinds = {p.pid: _kind(p.pid) for p in procs}
        for p in procs:
            kind = kinds[p.pid]
            # A JVM's child that is still a JVM is a fork between clone and exec (Hadoop's shell commands, Python
            # workers), sharing its parent's memory and so its VmHWM: counting it would count the JVM twice. No
            # step's JVM starts another JVM.
            if kind == "jvm" and kinds.get(_ppid(p)) == "jvm":
                continue
            if kind:
                now[kind] += _hwm_kib(p.pid)
        for kind, kib in now.items():
            self.peak[kind] = max(self.peak[kind], kib)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {k: v / 1024 / 1024 for k, v in self.peak.items()}  # GiB


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/<pid>/stat``, fields 14 and 15)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Step:
    name: str
    seconds: float
    rows_in: int
    rows_out: int
    unit: str
    jvm_gib: float
    python_gib: float
    cpu_s: float = float("nan")
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.rows_in / self.seconds if self.seconds else float("nan")


def run_measured(
    cmd: list[str], log: pathlib.Path, env: dict[str, str] | None = None, server: int | None = None
) -> tuple[float, dict[str, float]]:
    """Run ``cmd`` to completion (output to ``log``); its wall seconds and its process tree's peak memory. With
    ``server`` (a Spark Connect server's pid, whose JVM does the step's Spark work) the JVM column is that
    server's peak while the step ran, and its CPU seconds are added (from /proc: it is not the step's child)."""
    with open(log, "w", encoding="utf-8") as out:
        t0 = time.monotonic()
        server_cpu = _cpu_s(server) if server else 0.0
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        mem = TreeMemory(proc.pid)
        server_mem = TreeMemory(server) if server else None
        # wait4's rusage adds up the CPU time of the whole tree (each parent waits for its children): on a
        # machine shared with other jobs it tells the step's own work apart from the time it waited for a core
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - t0
        peak = mem.stop()
        peak["cpu_s"] = usage.ru_utime + usage.ru_stime
        if server and server_mem:
            peak["jvm"] = max(peak["jvm"], server_mem.stop()["jvm"])
            peak["cpu_s"] += _cpu_s(server) - server_cpu
    if rc != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        raise RuntimeError(f"exit {rc}: {' '.join(cmd)}\n" + "\n".join(tail))
    return seconds, peak


# --------------------------------------------------------------------------------------------------------------
# the DAG's spark-submit command


class _Ti:
    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths

    def xcom_pull(self, task_ids: str | None = None, **_: Any) -> dict[str, str]:
        return self.paths


def spark_submit_command(
    job: str, paths: dict[str, str], package_dir: pathlib.Path
) -> tuple[list[str], dict[str, str]]:
    """The command and environment the DAG's ``RocketMQSparkJobOperator`` gives ``Popen`` for ``job``: its
    ``execute`` runs for real and the hook's ``submit`` hands over what it would have started."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from rocketmq_retry.airflow.dag_parts import spark_job
    from rocketmq_retry.airflow.settings import load_airflow_settings

    captured: dict[str, Any] = {}

    def submit(hook: SparkSubmitHook, application: str = "", **_: Any) -> None:
        captured["cmd"] = hook._build_spark_submit_command(application)
        captured["env"] = {**os.environ, **(hook._env or {})}

    operator = spark_job(job, load_airflow_settings(), needs_landing=job == "ingest")
    operator.package_dir = str(package_dir)
    with mock.patch.object(SparkSubmitHook, "submit", submit):
        # the context a task has: its task and its outlets' asset events, which the operator fills (airflow/assets.py)
        operator.execute({"ti": _Ti(paths), "task": operator, "outlet_events": defaultdict(SimpleNamespace)})
    return captured["cmd"], captured["env"]


# --------------------------------------------------------------------------------------------------------------
# the HTTP receiver


class _Receiver(BaseHTTPRequestHandler):
    # Keep-alive, as any production endpoint: stdlib's default (HTTP/1.0) closes the connection after each
    # answer, and the handler's client then spent a third of its time opening connections
    protocol_version = "HTTP/1.1"
    calls = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with _Receiver.lock:
            _Receiver.calls += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:  # one line per call would drown the benchmark's output
        pass


def start_receiver() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --------------------------------------------------------------------------------------------------------------
# one size


def write_config(path: pathlib.Path, port: int, profile: Profile) -> None:
    import yaml

    config = yaml.safe_load(profile.topology.read_text(encoding="utf-8"))
    config["spark"] = dict(SPARK_SETTINGS)
    config["compensation"] = {
        "routes": [{"topic": "*", "group": "*", "handler": "receiver"}],
        "handlers": {"receiver": {"type": "http", "url": f"http://127.0.0.1:{port}/compensations"}},
    }
    path.write_text(
        f"# bench_pipeline.py: benchmarks/topologies/{profile.name}.yaml + Spark settings + a local HTTP receiver\n"
        + yaml.safe_dump(config, sort_keys=False),
        encoding="utf-8",
    )


def simulate(landing: pathlib.Path, size: int, profile: Profile) -> None:
    """Simulate the landing unless one with the same settings is there (the marker sits beside it)."""
    wanted = profile.simulation_args(size)
    marker = landing.with_name("simulated.json")
    if landing.is_dir() and marker.is_file() and json.loads(marker.read_text()) == wanted:
        print(f"[{label(size)}] reusing {landing} ({wanted})", file=sys.stderr, flush=True)
        return
    from rocketmq_retry.simulate.cli import main as simulate_main

    t0 = time.monotonic()
    simulate_main(
        ["--date", DS, "--out", str(landing), "--config", str(profile.topology), "--scenario", str(profile.scenario),
         "--messages", str(wanted["messages"]), "--noise", str(wanted["noise"]), "--seed", str(SEED),
         "--force", "--quiet"]
    )  # fmt: skip
    marker.write_text(json.dumps(wanted) + "\n")
    print(f"[{label(size)}] simulated {landing} in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)


def parquet_rows(warehouse: pathlib.Path, table: str) -> int:
    import pyarrow.parquet as pq

    from rocketmq_retry.warehouse.partitions import committed

    part = committed(warehouse, table, DS)
    return sum(pq.ParquetFile(p).metadata.num_rows for p in part.glob("*.parquet"))


def lines_read(warehouse: pathlib.Path) -> int:
    import pyarrow.dataset as pads

    from rocketmq_retry.warehouse.partitions import committed

    t = pads.dataset(str(committed(warehouse, "ingest_report", DS)), format="parquet").to_table()
    return sum(
        (a or 0) + (b or 0) for a, b in zip(t["lines_read"].to_pylist(), t["other_date"].to_pylist(), strict=True)
    )


def save_results(home: pathlib.Path, size: int, steps: list[Step], spark: str, profile: Profile) -> None:
    """This size's steps, for a later invocation's growth table; with the load average of the moment."""
    saved = {
        "size": size, "spark": spark, "profile": profile.name, "load": os.getloadavg(),
        "steps": [asdict(s) for s in steps],
    }  # fmt: skip
    (home / "results.json").write_text(json.dumps(saved, indent=1) + "\n")


def home_of(base: pathlib.Path, size: int, spark: str, profile: Profile) -> pathlib.Path:
    return base / profile.name / (label(size) if spark == "submit" else f"{label(size)}-{spark}")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ConnectServer:
    """A Spark Connect server started cold for this size's day (``scripts/spark-connect.sh``: local[2], heap
    ``memory``), so its start and its JIT warm-up count in the day, as a first run's must."""

    def __init__(self, home: pathlib.Path, memory: str) -> None:
        self.dir = home / "connect"
        self.env = {
            **os.environ,
            "SPARK_CONNECT_DIR": str(self.dir),
            "SPARK_CONNECT_PORT": str(_free_port()),
            "SPARK_CONNECT_MEMORY": memory,
        }
        self.url = f"sc://127.0.0.1:{self.env['SPARK_CONNECT_PORT']}"

    def script(self, action: str) -> list[str]:
        return ["bash", str(ROOT / "scripts" / "spark-connect.sh"), action]

    @property
    def pid(self) -> int:
        return int((self.dir / "pids" / "server.pid").read_text())

    def stop(self) -> None:
        subprocess.run(self.script("stop"), env=self.env, check=False, capture_output=True)


def run_size(
    size: int,
    base: pathlib.Path,
    keep: bool,
    duckdb: bool,
    profile: Profile,
    spark: str = "submit",
    connect_memory: str = "2g",
) -> list[Step]:
    name = f"{profile.name} {label(size)}"
    home = home_of(base, size, spark, profile)
    warehouse, config = home / "warehouse", home / "rocketmq-retry.yaml"
    # one landing per profile and size, whichever way its Spark steps run
    landing = base / profile.name / label(size) / "landing"
    logs = home / "logs"
    home.mkdir(parents=True, exist_ok=True)
    logs.mkdir(exist_ok=True)
    simulate(landing, size, profile)
    if warehouse.exists() and not keep:
        shutil.rmtree(warehouse)
    warehouse.mkdir(exist_ok=True)
    gx_root = home / "expectations"  # the run's own GE project: its results and Data Docs are not the checkout's
    shutil.rmtree(gx_root, ignore_errors=True)
    shutil.copytree(ROOT / "expectations", gx_root, ignore=shutil.ignore_patterns("uncommitted"))
    receiver = start_receiver()
    write_config(config, receiver.server_address[1], profile)
    os.environ.update(
        AIRFLOW_HOME=str(home / "airflow"),
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps(SPARK_CONN),
        ROCKETMQ_RETRY_CONFIG=str(config),
        ROCKETMQ_RETRY_GX_ROOT=str(gx_root),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    paths = {"ds": DS, "landing": str(landing), "warehouse": str(warehouse), "config": str(config)}
    steps: list[Step] = []

    def step(title: str, seconds: float, rows_in: int, rows_out: int, unit: str, peak: dict[str, float]) -> Step:
        s = Step(title, seconds, rows_in, rows_out, unit, peak["jvm"], peak["python"], peak["cpu_s"])
        steps.append(s)
        print(f"[{name}] {title}: {seconds:.1f} s ({s.cpu_s:.0f} CPU-s), {rows_in} -> {rows_out} "
              f"({s.rate:,.0f} {unit}/s), "
              f"JVM {s.jvm_gib:.2f} GiB, Python {s.python_gib:.2f} GiB; load {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)  # fmt: skip
        return s

    server = ConnectServer(home, connect_memory) if spark == "connect" else None
    try:
        if server:
            seconds, peak = run_measured(server.script("start"), logs / "connect-start.log", server.env)
            # the server outlives the script that started it: its JVM and CPU so far are read from /proc
            peak["jvm"], peak["cpu_s"] = _hwm_kib(server.pid) / 1024 / 1024, peak["cpu_s"] + _cpu_s(server.pid)
            step(SERVER_START, seconds, 0, 0, "-", peak)
        spark_steps(server, paths, home, logs, warehouse, config, step)
    finally:
        if server:
            server.stop()  # compensation needs no Spark
    summary = json.loads((logs / "validate.json").read_text())
    if not summary["success"]:
        raise RuntimeError(f"validation failed: {summary['critical_failures']}")
    dead = parquet_rows(warehouse, "dead_letters")
    compensate = [str(pathlib.Path(sys.executable).parent / "rocketmq-retry"), "compensate", "--date", DS,
                  "--warehouse", str(warehouse), "--config", str(config), "--format", "json"]  # fmt: skip
    _Receiver.calls = 0
    seconds, peak = run_measured(compensate, logs / "compensate.log")
    result = json.loads((logs / "compensate.log").read_text().strip().splitlines()[-1])
    step("compensate", seconds, dead, result.get("done", 0), "dead letters", peak)
    steps[-1].notes["http_calls"] = _Receiver.calls
    receiver.shutdown()
    # the floor: one Spark process reading and counting the same files, as spark-submit starts it for ingest
    cmd = [sys.executable, __file__, "--child-floor", str(landing), str(config), str(logs / "floor.json")]
    seconds, peak = run_measured(cmd, logs / "floor.log")
    lines = json.loads((logs / "floor.json").read_text())["lines"]
    step(FLOOR, seconds, lines, lines, "lines", peak)
    if duckdb:
        out = home / "duckdb"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        counts_json = logs / "duckdb.json"
        cmd = [sys.executable, __file__, "--child-duckdb", str(landing), str(config), str(out), str(counts_json)]
        seconds, peak = run_measured(cmd, logs / "duckdb.log")
        counts = json.loads(counts_json.read_text())
        step("duckdb extraction", seconds, counts["lines"], counts.get("event", 0), "lines", peak)  # log events
    return steps


def spark_steps(
    server: ConnectServer | None,
    paths: dict[str, str],
    home: pathlib.Path,
    logs: pathlib.Path,
    warehouse: pathlib.Path,
    config: pathlib.Path,
    step: Any,
) -> None:
    """ingest, reconstruct and validate, by spark-submit (``server`` None) or on the Connect server."""
    for job in ("ingest", "reconstruct"):
        if server:
            # what RocketMQSparkJobOperator does on a spark_connect connection: the job's cli in the task's
            # Python, as a client of the server
            cmd, env = [sys.executable, __file__, "--child-connect", job, server.url, *job_argv(job, paths)], None
        else:
            cmd, env = spark_submit_command(job, paths, home / "dist")
        (logs / f"{job}.cmd").write_text(" ".join(cmd) + "\n")
        seconds, peak = run_measured(cmd, logs / f"{job}.log", env, server.pid if server else None)
        if job == "ingest":
            step("ingest", seconds, lines_read(warehouse), parquet_rows(warehouse, "events"), "lines", peak)
        else:
            events = parquet_rows(warehouse, "events")
            step("reconstruct", seconds, events, parquet_rows(warehouse, "lifecycles"), "events", peak)
    lifecycles = parquet_rows(warehouse, "lifecycles")
    summary_json = logs / "validate.json"
    validate = [sys.executable, __file__, "--child-validate", str(warehouse), str(config), str(summary_json)]
    # on the server, as ValidatePartitionOperator runs it there: validation.run.run with SPARK_REMOTE set
    venv = {**os.environ, "SPARK_REMOTE": server.url} if server else None
    seconds, peak = run_measured(validate, logs / "validate.log", venv, server.pid if server else None)
    summary = json.loads(summary_json.read_text())
    s = step("validate", seconds, sum(summary["rows"].values()), summary["evaluated"], "rows", peak)
    s.notes["lifecycles_per_s"] = lifecycles / seconds


# --------------------------------------------------------------------------------------------------------------
# children (own processes, so their memory is their own)


def job_argv(job: str, paths: dict[str, str]) -> list[str]:
    """The job's arguments as ``RocketMQSparkJobOperator.job_args`` gives them."""
    argv = ["--date", paths["ds"], "--warehouse", paths["warehouse"]]
    if job == "ingest":
        argv += ["--landing", paths["landing"]]
    return [*argv, "--config", paths["config"]]


def child_connect(job: str, url: str, argv: list[str]) -> int:
    import importlib

    from rocketmq_retry.airflow.operators import spark_connect_client

    with spark_connect_client(url):
        return int(importlib.import_module(f"rocketmq_retry.jobs.{job}.job").cli(argv))


def child_validate(warehouse: str, config: str, out: str) -> int:
    from rocketmq_retry.config import load_config
    from rocketmq_retry.validation.run import run

    summary = run(DS, warehouse, load_config(config))  # what ValidatePartitionOperator.execute calls
    pathlib.Path(out).write_text(json.dumps(summary.as_dict(), default=str))
    return 0


def child_floor(landing: str, config: str, out: str) -> int:
    """Start Spark as the jobs do (local[2], the config's settings) and count the lines of the files ingest reads."""
    from rocketmq_retry.config import load_config
    from rocketmq_retry.jobs.ingest.read import resolve_files
    from rocketmq_retry.spark_session import build_spark_session

    cfg = load_config(config)
    files, _ = resolve_files(cfg, landing, DS)
    spark = build_spark_session(
        "rocketmq-retry-floor",
        master=SPARK_CONN["host"],
        driver_memory=cfg.spark.driver_memory,
        shuffle_partitions=cfg.spark.shuffle_partitions,
        conf=cfg.spark.conf,
    )
    lines = spark.read.text([f.path for f in files]).count()
    pathlib.Path(out).write_text(json.dumps({"lines": lines, "files": len(files)}))
    return 0


def child_duckdb(landing: str, config: str, out: str, counts_out: str) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_ingest import duckdb_ingest

    from rocketmq_retry.config import load_config
    from rocketmq_retry.jobs.ingest.read import resolve_files

    cfg = load_config(config)
    files, _ = resolve_files(cfg, landing, DS)
    counts = duckdb_ingest(files, DS, cfg.timezone, pathlib.Path(out))
    pathlib.Path(counts_out).write_text(json.dumps(counts))
    return 0


# --------------------------------------------------------------------------------------------------------------
# tables


SERVER_START = "Spark Connect server start"
FLOOR = "floor: Spark reads and counts the files"
PIPELINE = (SERVER_START, "ingest", "reconstruct", "validate", "compensate")


def print_size(size: int, steps: list[Step]) -> None:
    print(f"\n{label(size)} lines ({size:,} asked)")
    print("| step | seconds | CPU s | rows in | rows out | rate | peak JVM GiB | peak Python GiB |")
    print("|---|---|---|---|---|---|---|---|")
    for s in steps:
        rate = f"{s.rate:,.0f} {s.unit}/s"
        if "lifecycles_per_s" in s.notes:
            rate += f" ({s.notes['lifecycles_per_s']:,.0f} lifecycles/s)"
        print(f"| {s.name} | {s.seconds:.1f} | {s.cpu_s:.0f} | {s.rows_in:,} | {s.rows_out:,} | {rate} "
              f"| {s.jvm_gib:.2f} "
              f"| {s.python_gib:.2f} |")  # fmt: skip
    pipe = [s for s in steps if s.name in PIPELINE]
    total = sum(s.seconds for s in pipe)
    peak = max(s.jvm_gib + s.python_gib for s in pipe)
    cpu = sum(s.cpu_s for s in pipe)
    print(f"| **day end to end** (ingest + reconstruct + validate + compensate) | {total:.1f} | {cpu:.0f} | | | | "
          f"{max(s.jvm_gib for s in pipe):.2f} | {max(s.python_gib for s in pipe):.2f} |")  # fmt: skip
    print(f"peak JVM + Python of one step: {peak:.2f} GiB")
    floor = next((s for s in steps if s.name == FLOOR), None)
    if floor:
        print(
            f"day / floor: {total / floor.seconds:.1f}x ({floor.seconds:.1f} s for Spark to read and count the files)"
        )
        by = {s.name: s for s in steps}
        ratio = by["reconstruct"].seconds / by["ingest"].seconds
        print(f"reconstruct / ingest: {ratio:.2f}x")


def print_growth(results: dict[int, list[Step]]) -> None:
    small, large = min(results), max(results)
    by = {size: {s.name: s for s in steps} for size, steps in results.items()}
    factor = large / small
    print(f"\ngrowth {label(large)} / {label(small)} (at most {factor:g}x is linear)")
    print("| step | seconds | ratio | CPU s | ratio | rows in ratio |")
    print("|---|---|---|---|---|---|")
    for name in by[small]:
        a, b = by[small][name], by[large].get(name)
        if b:
            print(f"| {name} | {a.seconds:.1f} -> {b.seconds:.1f} | {b.seconds / a.seconds:.1f}x "
                  f"| {a.cpu_s:.0f} -> {b.cpu_s:.0f} | {b.cpu_s / a.cpu_s:.1f}x "
                  f"| {b.rows_in / max(a.rows_in, 1):.1f}x |")  # fmt: skip
    big = by[large]
    pipe = [n for n in PIPELINE if n in big and n in by[small]]
    total = sum(big[n].seconds for n in pipe)
    # on a Connect server the JVM column is the server's, shared by the steps; each step's Python is its own
    peak = max(big[n].jvm_gib + big[n].python_gib for n in pipe)
    print(f"\ntargets at {label(large)}:")
    print(f"  day end to end {total:.1f} s (<= 240 s: {'met' if total <= 240 else 'NOT met'})")
    ratio = big["reconstruct"].seconds / big["ingest"].seconds
    print(f"  reconstruct / ingest {ratio:.2f}x (<= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
    worst = max(pipe, key=lambda n: big[n].seconds / by[small][n].seconds)
    g = big[worst].seconds / by[small][worst].seconds
    print(f"  largest growth {worst} {g:.1f}x (<= {factor:g}x: {'met' if g <= factor else 'NOT met'})")
    print(f"  peak JVM + Python {peak:.2f} GiB (< 6 GiB: {'met' if peak < 6 else 'NOT met'})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000000,10000000", help="simulated lines per day, comma-separated")
    p.add_argument(
        "--profiles",
        default="shared-topic,production",
        help=f"line mixes, comma-separated, of {', '.join(PROFILES)} (docs/scale.md 'Line mixes')",
    )
    p.add_argument(
        "--workdir",
        default=str(pathlib.Path(tempfile.gettempdir()) / "rocketmq-retry-bench-pipeline"),
        help="where each size's landing, warehouse and config go (<workdir>/1m, ...; outside the repository)",
    )
    p.add_argument("--keep", action="store_true", help="keep an existing warehouse instead of starting it afresh")
    p.add_argument("--no-duckdb", action="store_true", help="skip DuckDB's extraction")
    p.add_argument(
        "--spark",
        choices=("submit", "connect"),
        default="submit",
        help="submit: a spark-submit per Spark step (the DAG's default); connect: the steps as clients of one Spark "
        "Connect server started cold for the day (scripts/spark-connect.sh), its start counted in the day",
    )
    p.add_argument(
        "--connect-memory", default="2g", help="the Connect server's heap (SPARK_CONNECT_MEMORY; it runs every step)"
    )
    p.add_argument("--child-connect", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.add_argument("--child-validate", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--child-duckdb", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--child-floor", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child_validate:
        return child_validate(*args.child_validate)
    if args.child_duckdb:
        return child_duckdb(*args.child_duckdb)
    if args.child_floor:
        return child_floor(*args.child_floor)
    if args.child_connect:
        return child_connect(args.child_connect[0], args.child_connect[1], args.child_connect[2:])
    sizes = sorted(int(s) for s in args.sizes.split(","))
    unknown = [n for n in args.profiles.split(",") if n not in PROFILES]
    if unknown:
        p.error(f"--profiles: unknown {unknown[0]!r}; expected some of {', '.join(PROFILES)}")
    profiles = [PROFILES[n] for n in args.profiles.split(",")]
    base = pathlib.Path(args.workdir).resolve()
    if ROOT in base.parents or base == ROOT:
        p.error(f"--workdir {base} is inside the repository; pick a folder outside it")
    by_profile: dict[str, dict[int, list[Step]]] = {}
    for profile in profiles:
        results = by_profile[profile.name] = {}
        for size in sizes:
            results[size] = run_size(
                size, base, args.keep, not args.no_duckdb, profile, args.spark, args.connect_memory
            )
            save_results(home_of(base, size, args.spark, profile), size, results[size], args.spark, profile)
        # sizes measured by an earlier invocation in the same workdir (say 1 M, then 10 M) still give a growth table
        for marker in sorted((base / profile.name).glob("*/results.json")):
            saved = json.loads(marker.read_text())
            if saved.get("spark", "submit") == args.spark:
                results.setdefault(int(saved["size"]), [Step(**s) for s in saved["steps"]])
    if args.spark == "connect":
        spark_steps_text = (
            f"one Spark Connect server started cold (scripts/spark-connect.sh: local[2], heap {args.connect_memory}, "
            f"spark/spark-defaults.conf), ingest and reconstruct as its clients (the jobs' cli), validate too; "
            f"config spark: {SPARK_SETTINGS}"
        )
    else:
        spark_steps_text = (
            f"spark-submit with the DAG's command (connection {SPARK_CONN['host']}, spark/spark-defaults.conf, "
            f"config spark: {SPARK_SETTINGS}); validate local Spark with the same"
        )
    print(
        f"\nsettings: {os.cpu_count()} cores; {spark_steps_text}; compensate: SQLite ledger, one HTTP handler on "
        f"127.0.0.1; seed {SEED}"
    )
    for name, results in by_profile.items():
        print(f"\n## profile {name} (benchmarks/topologies/{name}.yaml)")
        for size, steps in sorted(results.items()):
            print_size(size, steps)
        if len(results) > 1:
            print_growth(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
