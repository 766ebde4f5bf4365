"""The two places the jobs' Spark settings live agree: ``spark_session.default_settings`` (a session this process
starts: validate, tests, notebooks) and ``spark/spark-defaults.conf`` (what the DAG's spark-submit, the Spark
Connect server and the cluster's jobs read); the checkout's ``spark/`` is the installed package's
``spark_apps/``, file for file; and a driver started here maps Spark's classes from the archive set-up wrote
(``spark_classes``)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from rocketmq_retry import spark_apps, spark_classes, spark_session
from rocketmq_retry.config_sections import spark_apps_default
from rocketmq_retry.spark_session import JAVA_OPTIONS, class_archive, default_settings

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULTS_CONF = ROOT / "spark" / "spark-defaults.conf"
PACKAGED = pathlib.Path(spark_apps.__file__).parent  # what a wheel carries (pyproject's package data)


def _conf_file() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in DEFAULTS_CONF.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            out[key] = value.strip()
    return out


@pytest.fixture
def no_archive(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A class archive path with no file at it: the flags as every machine has them before set-up."""
    archive = tmp_path / "share" / "spark-classes.jsa"
    monkeypatch.setattr(spark_session, "class_archive", lambda: archive)
    return archive


def test_every_setting_in_both_places_has_one_value(no_archive: pathlib.Path) -> None:
    conf, session = _conf_file(), default_settings(driver_memory="2g", shuffle_partitions=4)
    shared = sorted(set(conf) & set(session))
    assert "spark.driver.extraJavaOptions" in shared and "spark.sql.codegen.hugeMethodLimit" in shared
    assert {k: conf[k] for k in shared} == {k: session[k] for k in shared}


def test_drivers_and_executors_run_the_throughput_collector_with_huge_methods_compiled(
    no_archive: pathlib.Path,
) -> None:
    for options in (
        default_settings()["spark.driver.extraJavaOptions"],
        _conf_file()["spark.executor.extraJavaOptions"],
    ):
        assert options == JAVA_OPTIONS
        assert options.split() == [
            "-XX:-DontCompileHugeMethods",
            "-XX:+UseParallelGC",
            "-XX:Tier4InvocationThreshold=15000",
            "-XX:Tier4CompileThreshold=45000",
            "-XX:Tier4BackEdgeThreshold=120000",
        ]


def test_the_checkout_spark_folder_is_the_packaged_one_file_for_file() -> None:
    """A wheel has no top-level ``spark/``: its ``rocketmq_retry/spark_apps/`` must run the same code with the same
    settings, so every file of one is in the other with the same bytes."""
    top = {p.name: p.read_bytes() for p in (ROOT / "spark").iterdir() if p.is_file()}
    packaged = {p.name: p.read_bytes() for p in PACKAGED.iterdir() if p.is_file() and p.name != "__init__.py"}
    assert sorted(top) == ["ingest.py", "reconstruct.py", "spark-defaults.conf"]
    assert packaged == top


def test_a_checkout_runs_its_top_level_spark_folder() -> None:
    assert spark_apps_default() == ROOT / "spark"


def test_the_driver_maps_the_class_archive_once_set_up_wrote_it(no_archive: pathlib.Path) -> None:
    no_archive.parent.mkdir(parents=True)
    no_archive.write_bytes(b"")
    settings = default_settings()
    assert settings["spark.driver.extraJavaOptions"] == f"{JAVA_OPTIONS} -XX:SharedArchiveFile={no_archive}"
    assert settings["spark.executor.extraJavaOptions"] == JAVA_OPTIONS  # an executor elsewhere has no such file


def test_an_archive_path_with_a_blank_is_not_passed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "my venv" / "spark-classes.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"")
    monkeypatch.setattr(spark_session, "class_archive", lambda: archive)
    assert default_settings()["spark.driver.extraJavaOptions"] == JAVA_OPTIONS


def test_the_dags_spark_submit_passes_the_archive_to_its_driver_unless_the_deployment_sets_the_flags(
    no_archive: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    from rocketmq_retry.airflow.operators import RocketMQSparkJobOperator

    def prepared(config: str = "") -> dict[str, str]:
        op = RocketMQSparkJobOperator(
            task_id="reconstruct", job="reconstruct", apps_dir=str(spark_apps_default()),
            package_dir=str(tmp_path / "dist"),
        )  # fmt: skip
        op.prepare({"ds": "2026-11-20", "warehouse": str(tmp_path / "wh"), "landing": "", "config": config})
        assert op.properties_file == str(DEFAULTS_CONF)
        return dict(op.conf)

    assert "spark.driver.extraJavaOptions" not in prepared()  # the properties file's flags, nothing more
    no_archive.parent.mkdir(parents=True)
    no_archive.write_bytes(b"")
    assert prepared()["spark.driver.extraJavaOptions"] == f"{JAVA_OPTIONS} -XX:SharedArchiveFile={no_archive}"
    own = tmp_path / "own.yaml"
    own.write_text('spark:\n  conf:\n    spark.driver.extraJavaOptions: "-XX:+UseSerialGC"\n', encoding="utf-8")
    assert prepared(str(own))["spark.driver.extraJavaOptions"] == "-XX:+UseSerialGC"


def test_the_archive_is_written_again_only_when_java_or_the_jars_change(no_archive: pathlib.Path) -> None:
    stamp = spark_classes.environment_stamp()
    assert stamp == spark_classes.environment_stamp() and len(stamp) == 64
    assert not spark_classes.up_to_date(no_archive, stamp)  # none written yet
    no_archive.parent.mkdir(parents=True)
    no_archive.write_bytes(b"")
    assert not spark_classes.up_to_date(no_archive, stamp)  # a file without its stamp: an interrupted run
    spark_classes.stamp_path(no_archive).write_text(stamp + "\n", encoding="utf-8")
    assert spark_classes.up_to_date(no_archive, stamp)
    assert not spark_classes.up_to_date(no_archive, "another java or other jars")


@pytest.mark.spark
def test_a_driver_started_here_loads_sparks_classes_from_the_archive_set_up_wrote(tmp_path: pathlib.Path) -> None:
    """HotSpot's own class-loading log of a session started as every step starts one: Spark's classes come from
    the archive ("shared objects file (top)", the archive over the JDK's own), not from the jars."""
    archive = class_archive()
    assert archive.is_file(), f"no class archive at {archive}: make setup writes it ({spark_classes.PROG})"
    log = tmp_path / "class-load.log"
    child = textwrap.dedent(f"""
        from rocketmq_retry.spark_classes import stop_and_wait_for_jvm
        from rocketmq_retry.spark_session import build_spark_session, driver_java_options
        flags = driver_java_options() + " -Xlog:class+load=info:file={log}"
        spark = build_spark_session("class-archive", master="local[1]", conf={{"spark.driver.extraJavaOptions": flags}})
        assert spark.range(3).count() == 3
        assert stop_and_wait_for_jvm(spark, timeout_s=120) == 0  # the log complete
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {
        line.split()[1]: line.split(" source: ", 1)[1]
        for line in log.read_text(encoding="utf-8").splitlines()
        if " source: " in line
    }
    for name in ("org.apache.spark.SparkContext", "org.apache.spark.sql.classic.SparkSession"):
        assert loaded[name] == "shared objects file (top)", (name, loaded.get(name))
