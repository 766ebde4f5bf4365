"""docker-compose.yml, checked statically (no Docker engine here): it parses, its services, volumes and
environment agree with each other and with the code, and the images and commands it names exist by the
registries' and tools' own naming."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from conftest import ROOT

AIRFLOW_SERVICES = ("airflow-api-server", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _variables(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"\$\{([A-Z0-9_]+)(?::?[-?][^}]*)?\}", text)}


def test_services_and_commands(compose: dict[str, Any]) -> None:
    from importlib.metadata import version

    services = compose["services"]
    assert set(services) == {"postgres", "airflow-init", *AIRFLOW_SERVICES, "spark-master", "spark-worker"}
    airflow_version = version("apache-airflow")
    pyspark_version = version("pyspark")
    dockerfile = services["airflow-scheduler"]["build"]["dockerfile_inline"]
    # Official tags: apache/airflow:<version>-python<x.y>; apache/spark:<v>-scala2.13-java17-python3-ubuntu
    assert f"FROM apache/airflow:{airflow_version}-python3.11" in dockerfile
    assert "openjdk-17-jre-headless" in dockerfile and "-c /opt/rocketmq-retry/constraints.txt" in dockerfile
    for name in ("spark-master", "spark-worker"):
        assert services[name]["image"] == f"apache/spark:{pyspark_version}-scala2.13-java17-python3-ubuntu"
    assert re.fullmatch(r"postgres:\d+", services["postgres"]["image"])

    from airflow.cli.cli_config import core_commands

    subcommands = {command.name for command in core_commands}
    for name in (*AIRFLOW_SERVICES, "airflow-init"):
        command = services[name]["command"]
        assert command[0] in subcommands, (name, command)
    assert services["airflow-init"]["command"] == ["db", "migrate"]
    assert services["airflow-scheduler"]["command"] == ["scheduler"]
    assert services["airflow-dag-processor"]["command"] == ["dag-processor"]
    assert services["airflow-triggerer"]["command"] == ["triggerer"]
    assert services["spark-worker"]["command"][-1] == "spark://spark-master:7077"


def test_depends_on_and_volumes_are_declared(compose: dict[str, Any]) -> None:
    services = compose["services"]
    declared = set(compose["volumes"])
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            assert source in declared or source.startswith("."), (name, mount)
    for name in AIRFLOW_SERVICES:
        assert "airflow-init" in services[name]["depends_on"]
        mounts = services[name]["volumes"]
        assert ".:/opt/rocketmq-retry" in mounts and "rocketmq-data:/data" in mounts
    assert "rocketmq-data:/data" in services["spark-worker"]["volumes"]  # executors see the same paths


def test_environment_matches_the_code(compose: dict[str, Any]) -> None:
    from airflow.configuration import conf

    from rocketmq_retry.config_sections import ENV_OVERRIDES

    env = compose["services"]["airflow-scheduler"]["environment"]
    for name in AIRFLOW_SERVICES:
        assert compose["services"][name]["environment"] == env  # one configuration for all components
    for key in env:
        if key.startswith("AIRFLOW__"):
            section, option = key.removeprefix("AIRFLOW__").lower().split("__", 1)
            # The documented options (has_option is False for options whose default is empty).
            assert option in conf.configuration_description.get(section, {}).get("options", {}), key
        elif key.startswith("ROCKETMQ_RETRY_"):
            assert key in {*ENV_OVERRIDES, "ROCKETMQ_RETRY_CONFIG", "ROCKETMQ_RETRY_GX_ROOT"}, key
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/rocketmq-retry/dags"
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/rocketmq-retry/plugins"
    assert env["ROCKETMQ_RETRY_CONFIG"].endswith("/opt/rocketmq-retry/examples/rocketmq-retry.yaml}")
    assert (ROOT / "examples" / "rocketmq-retry.yaml").is_file()
    assert env["ROCKETMQ_RETRY_GX_ROOT"] == "/opt/rocketmq-retry/expectations"
    assert '"conn_type": "spark"' in env["AIRFLOW_CONN_SPARK_DEFAULT"]


def test_variables_have_defaults_and_ports_are_loopback(compose: dict[str, Any]) -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", text))
    assert required == {"AIRFLOW_JWT_SECRET"}
    for var in _variables(text) - required:
        assert re.search(r"\$\{" + var + r":-", text), f"{var} has no default"
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)


def _script_default(name: str) -> str:
    text = (ROOT / "scripts" / "spark-cluster.sh").read_text()
    match = re.search(r"=\$\{" + name + r":-([^}]+)\}", text)
    assert match, f"scripts/spark-cluster.sh has no default for {name}"
    return match.group(1)


def test_spark_services_match_the_cluster_script(compose: dict[str, Any]) -> None:
    """docker-compose.yml's cluster and scripts/spark-cluster.sh's are one cluster: same ports, worker count,
    cores and memory; the spark_default connection submits to it in client mode (the driver in the Airflow
    worker, where the package and the config are)."""
    services = compose["services"]
    master, worker = services["spark-master"], services["spark-worker"]
    assert master["environment"]["SPARK_MASTER_PORT"] == _script_default("SPARK_MASTER_PORT") == "7077"
    ui = _script_default("SPARK_MASTER_WEBUI_PORT")
    assert master["environment"]["SPARK_MASTER_WEBUI_PORT"] == ui
    assert master["ports"] == [f"127.0.0.1:${{SPARK_MASTER_UI_PORT:-{ui}}}:{ui}"]
    assert "-Dspark.master.rest.enabled=false" in master["environment"]["SPARK_MASTER_OPTS"]
    assert worker["environment"]["SPARK_WORKER_WEBUI_PORT"] == _script_default("SPARK_WORKER_WEBUI_PORT")
    assert (
        worker["environment"]["SPARK_WORKER_CORES"]
        == f"${{SPARK_WORKER_CORES:-{_script_default('SPARK_WORKER_CORES')}}}"
    )
    memory = _script_default("SPARK_WORKER_MEMORY")
    assert worker["environment"]["SPARK_WORKER_MEMORY"] == f"${{SPARK_WORKER_MEMORY:-{memory}}}"
    assert worker["deploy"]["replicas"] == f"${{SPARK_WORKERS:-{_script_default('SPARK_CLUSTER_WORKERS')}}}"
    assert worker["command"][-1] == f"spark://spark-master:{master['environment']['SPARK_MASTER_PORT']}"

    import json

    conn_text = services["airflow-scheduler"]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"]
    conn = json.loads(conn_text.replace("${SPARK_MASTER_URL:-spark://spark-master:7077}", "spark://spark-master:7077"))
    assert conn == {"conn_type": "spark", "host": worker["command"][-1], "extra": {"deploy-mode": "client"}}
