"""The two places the jobs' Spark settings live agree: ``spark_session.default_settings`` (a session this process
starts: validate, tests, notebooks) and ``spark_apps/spark-defaults.conf`` (what the DAG's spark-submit, the
Spark Connect server and the cluster's jobs read)."""

from __future__ import annotations

import pathlib

from rocketmq_retry import spark_apps
from rocketmq_retry.jobs.spark_session import JAVA_OPTIONS, default_settings

DEFAULTS_CONF = pathlib.Path(spark_apps.__file__).with_name("spark-defaults.conf")  # where the operator finds it


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
        assert options.split() == ["-XX:-DontCompileHugeMethods", "-XX:+UseParallelGC"]
