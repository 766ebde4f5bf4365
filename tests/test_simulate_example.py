"""The committed example landing is exactly what its documented command writes, and the built-in demo deployment
is exactly the example configuration."""

from __future__ import annotations

import pathlib
import re
import shlex

from rocketmq_retry.config import load_config
from rocketmq_retry.simulate import demo
from rocketmq_retry.simulate.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _snapshot(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_committed_example_is_current(tmp_path: pathlib.Path) -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    command = re.search(r"^rocketmq-retry simulate (.*)$", readme, re.M)
    assert command is not None
    args = shlex.split(command.group(1))
    args = [str(ROOT / a) if a.startswith("examples/") else a for a in args]
    out = tmp_path / "landing"
    args[args.index("--out") + 1] = str(out)
    assert main([*args, "--quiet"]) == 0
    committed = _snapshot(EXAMPLES / "landing")
    regenerated = _snapshot(out)
    assert sorted(committed) == sorted(regenerated)
    stale = [name for name in committed if committed[name] != regenerated[name]]
    assert not stale, f"examples/landing is stale ({len(stale)} files differ); re-run the command in examples/README.md"
    assert 200_000 < sum(len(b) for b in committed.values()) < 1_000_000


def test_demo_deployment_is_the_example_configuration() -> None:
    assert (EXAMPLES / "rocketmq-retry.yaml").read_text(encoding="utf-8") == demo.DEMO_CONFIG_YAML
    assert (EXAMPLES / "simulate-scenario.yaml").read_text(encoding="utf-8") == demo.DEMO_SCENARIO_YAML
    config = load_config(EXAMPLES / "rocketmq-retry.yaml")
    assert demo.demo_config() == config
    assert set(demo.demo_scenario()) == set(config.groups)
