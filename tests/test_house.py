"""The house's shape (docs/DESIGN.md §3): no import cycle, no arrow that climbs a floor, Airflow imported by the
``airflow`` room only, one spelling for each name of the contract, the engine and the ledger, and the brief's top
level."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _graph_module():  # scripts/ is not a package: load the script as the command line would run it
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reader_finds_a_cycle_and_a_climb_in_a_literal_graph() -> None:
    g = _graph_module()
    graph = {
        "rocketmq_retry.jobs.a": {"rocketmq_retry.jobs.b", "rocketmq_retry.compensation.x"},
        "rocketmq_retry.jobs.b": {"rocketmq_retry.jobs.a"},
        "rocketmq_retry.compensation.x": {"rocketmq_retry.warehouse.p"},
        "rocketmq_retry.warehouse.p": set(),
    }
    assert g.cycles(graph) == [["rocketmq_retry.jobs.a", "rocketmq_retry.jobs.b"]]
    assert g.upward(graph) == [("rocketmq_retry.jobs.a", "rocketmq_retry.compensation.x")]


def test_the_package_has_no_cycle_no_upward_arrow_and_no_airflow_outside_its_room() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cycles: 0\nupward arrows: 0\nmodules outside airflow/ that import Airflow: 0" in result.stdout


def test_no_name_of_the_contract_the_engine_or_the_ledger_is_spelled_twice() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "stray_literals.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.startswith("stray literals: 0 in 0 files"), result.stdout


def test_the_literal_reader_finds_a_stray_event_type(tmp_path: pathlib.Path) -> None:
    package = tmp_path / "src" / "rocketmq_retry"
    (package / "jobs").mkdir(parents=True)
    (package / "jobs" / "x.py").write_text('"""CONSUME_FAILED in prose is fine."""\nKIND = "CONSUME_FAILED"\n')
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "stray_literals.py"), "--root", str(tmp_path), "--vocabulary-root",
         str(ROOT), "--check"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert "jobs/x.py:2: 'CONSUME_FAILED', event type (contract.EventType)" in result.stdout


_NO_AIRFLOW = """
import importlib, pkgutil, sys
class NoAirflow:
    def find_spec(self, name, path=None, target=None):
        if name == "airflow" or name.startswith("airflow."):
            raise ModuleNotFoundError(f"No module named {name!r} (made unimportable by the test)")
sys.meta_path.insert(0, NoAirflow())
import rocketmq_retry
names = [m.name for m in pkgutil.walk_packages(rocketmq_retry.__path__, "rocketmq_retry.")]
skip = ("rocketmq_retry.airflow", "rocketmq_retry.compensation.migrations")
for name in names:
    if not name.startswith(skip):
        importlib.import_module(name)
print(len([n for n in names if not n.startswith(skip)]))
"""


def test_every_module_outside_the_airflow_room_imports_without_airflow() -> None:
    """``rocketmq-retry validate``, ``compensate`` or ``explain`` on a machine without Airflow must not need it."""
    result = subprocess.run([sys.executable, "-c", _NO_AIRFLOW], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split()[-1]) > 100


def test_the_top_level_is_the_briefs() -> None:
    for name in ("dags", "plugins", "spark", "expectations", "tests", "docker-compose.yml", "README.md"):
        assert (ROOT / name).exists(), name
    assert sorted(p.name for p in (ROOT / "spark").iterdir() if p.is_file()) == [
        "ingest.py",
        "reconstruct.py",
        "spark-defaults.conf",
    ]
