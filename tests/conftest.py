"""Shared fixtures. Environment for Airflow and Spark is set before anything imports them."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import pathlib
import shlex
import shutil
import tempfile
from collections.abc import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The real RocketMQ 4.9.4 output, committed with the tests (tests/data/rocketmq-4.9.4/README.md) so that a clone
# runs on its own; SAMPLES_DIR points the sample tests at another copy.
SAMPLES = pathlib.Path(os.environ.get("SAMPLES_DIR", ROOT / "tests" / "data" / "rocketmq-4.9.4"))

# What a run writes besides each test's tmp_path (Airflow's home and metadata database, Spark's default warehouse
# folder) goes to one scratch folder outside the checkout, removed at exit: a test run leaves the working tree as
# it found it. Spark would otherwise create spark-warehouse/ in the current directory, which is the repo root.
SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="rocketmq-retry-tests-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
(SCRATCH / "airflow").mkdir()
# A variable the user set wins; one that a parent test process set (pytest-xdist's controller loads this file too,
# and its workers inherit its environment) names the parent's scratch folder and is replaced: each worker has its
# own Airflow home, metadata database and Spark warehouse folder, so no two workers share one.
_DEFAULTED = "ROCKETMQ_RETRY_TEST_DEFAULTED"
_inherited = set(filter(None, os.environ.get(_DEFAULTED, "").split(",")))
_defaulted: set[str] = set()


def _default(key: str, value: str) -> None:
    if key not in os.environ or key in _inherited:
        os.environ[key] = value
        _defaulted.add(key)


_default("AIRFLOW_HOME", str(SCRATCH / "airflow"))
_default("AIRFLOW__CORE__DAGS_FOLDER", str(ROOT / "dags"))
_default("AIRFLOW__CORE__PLUGINS_FOLDER", str(ROOT / "plugins"))
_default("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
_default("SPARK_LOCAL_IP", "127.0.0.1")
# The first code to start Spark in this process fixes the JVM's heap for the whole run, and that is not always
# the `spark` fixture: a dag.test() validates in-process with the config's 1g. 1g thrashes in full GCs once the
# real-sample reconstruction runs after dozens of other Spark tests, so every in-process JVM gets 4g.
# (--driver-memory here outranks the --conf spark.driver.memory=... pyspark puts before it.)
TEST_DRIVER_MEMORY = "4g"
# spark.sql.warehouse.dir is static (fixed when the first session starts), so it rides along with the heap size;
# Python child processes that start Spark inherit it through the environment too.
WAREHOUSE_CONF = shlex.quote(f"spark.sql.warehouse.dir={SCRATCH / 'spark-warehouse'}")
SUBMIT_ARGS = f"--driver-memory {TEST_DRIVER_MEMORY} --conf {WAREHOUSE_CONF} pyspark-shell"
_default("PYSPARK_SUBMIT_ARGS", SUBMIT_ARGS)
os.environ[_DEFAULTED] = ",".join(sorted(_defaulted))
os.environ.pop("ROCKETMQ_RETRY_CONFIG", None)  # tests never pick up a developer's own config


# The modules that each take minutes, started first, longest first: with two pytest-xdist workers (one module per
# worker at a time) a long module that started last would run alone at the end while the other worker sat idle, and
# the short modules fill the end instead. make test runs the first two (dag.test() end to end, and a backfill's dates
# in every order) and the modules after the slow ones (their order: `make test`'s junit times on a 2-core machine,
# docs/scale.md "Where the suite's time goes"); the others are marked slow.
LONG_MODULES = (
    "test_dag_e2e.py",
    "test_backfill.py",
    "test_backfill_scheduler.py",
    "test_make_airflow.py",
    "test_attribution_property.py",
    "test_spark_cluster.py",
    "test_scheduler_no_wait.py",
    "test_partitions_job.py",
    "test_validation_suites.py",
    "test_partitions_hadoop.py",
    "test_ingest_late_files.py",
    "test_simulate_failures.py",
    "test_reconstruct_carry.py",
    "test_reconstruct_samples_proxy.py",
    "test_validation_docs.py",
    "test_reconstruct_job.py",
    "test_compensation_concurrency.py",
    "test_contract.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: every other test keeps its place


@pytest.fixture(scope="session")
def samples_dir() -> pathlib.Path:
    if not SAMPLES.is_dir():
        pytest.fail(f"real RocketMQ 4.9.4 sample not found at {SAMPLES} (committed in tests/data; or set SAMPLES_DIR)")
    return SAMPLES


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local Spark session for the whole run (chispa-style): starting one costs ~10 s."""
    from rocketmq_retry.spark_session import build_spark_session

    session = build_spark_session(
        "rocketmq-retry-tests", master="local[2]", driver_memory=TEST_DRIVER_MEMORY, shuffle_partitions=2
    )
    max_heap = session.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()  # type: ignore[attr-defined]
    if max_heap < 3.5 * 2**30:
        pytest.fail(
            f"the test JVM has a {max_heap / 2**30:.1f} GiB heap; something started Spark without "
            f"PYSPARK_SUBMIT_ARGS={os.environ.get('PYSPARK_SUBMIT_ARGS')!r}"
        )
    yield session
    session.stop()
    # py4j logs "Closing down clientserver connection" from __del__ at interpreter exit, after pytest closed
    # the stream it captured: a "--- Logging error ---" traceback under a green run.
    logging.getLogger("py4j").setLevel(logging.WARNING)


@contextlib.contextmanager
def _run_lock(path: pathlib.Path) -> Iterator[None]:
    """An exclusive lock on ``path`` across this run's pytest-xdist workers (processes of one machine)."""
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def example_day(spark: object, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> pathlib.Path:
    """The committed example day (examples/landing, 2026-11-20) ingested, reconstructed and compensated with
    examples/rocketmq-retry.yaml, built once per run for the tests that only read it (the read layer, the pages):
    each build is a whole ingest + reconstruction. Tests must not write into it.

    Once per run, not per worker: the first worker to ask builds it in the run's shared temporary folder under a
    lock, and the other finds it there (a build is 80 s of a worker on a slow 2-core machine)."""
    from rocketmq_retry.cli import main as rocketmq_retry

    # pytest-xdist gives each worker a folder under the run's; without workers the run's own folder is this one
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    built = shared / "example-day"
    warehouse = built / "warehouse"
    with _run_lock(shared / "example-day.lock"):
        if not (built / "built").is_file():
            shutil.rmtree(built, ignore_errors=True)  # a worker that failed half-way left it
            common = [
                "--date",
                "2026-11-20",
                "--warehouse",
                str(warehouse),
                "--config",
                str(ROOT / "examples" / "rocketmq-retry.yaml"),
            ]
            assert rocketmq_retry(["ingest", *common, "--landing", str(ROOT / "examples" / "landing")]) == 0
            assert rocketmq_retry(["reconstruct", *common]) == 0
            assert rocketmq_retry(["compensate", *common, "--run-id", "scheduled__2026-11-20"]) == 0
            (built / "built").write_text("")
    return warehouse


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Where the browser tests write their screenshots for review: ``$PAGES_SCREENSHOTS``, else a temporary folder."""
    folder = pathlib.Path(os.environ.get("PAGES_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
