"""The two places the jobs' Spark settings live agree: ``spark_session.default_settings`` (a session this process
starts: validate, tests, notebooks) and ``spark/spark-defaults.conf`` (what the DAG's spark-submit, the Spark
Connect server and the cluster's jobs read); and the checkout's ``spark/`` is the installed package's
``spark_apps/``, file for file."""

from __future__ import annotations

import pathlib

from rocketmq_retry import spark_apps
from rocketmq_retry.config_sections import spark_apps_default
from rocketmq_retry.spark_session import JAVA_OPTIONS, default_settings

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


def test_every_setting_in_both_places_has_one_value() -> None:
    conf, session = _conf_file(), default_settings(driver_memory="2g", shuffle_partitions=4)
    shared = sorted(set(conf) & set(session))
    assert "spark.driver.extraJavaOptions" in shared and "spark.sql.codegen.hugeMethodLimit" in shared
    assert {k: conf[k] for k in shared} == {k: session[k] for k in shared}


def test_drivers_and_executors_run_the_throughput_collector_with_huge_methods_compiled() -> None:
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
