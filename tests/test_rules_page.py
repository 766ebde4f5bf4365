"""The repository stands alone: the RocketMQ rules the code cites are in docs/rocketmq-rules.md, the real sample is
committed under tests/data, and a test run writes its scratch files outside the checkout."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
from typing import Any

import pytest

from conftest import ROOT, SAMPLES, SCRATCH

RULES = ROOT / "docs" / "rocketmq-rules.md"


def _rules_index() -> Any:  # scripts/ is not a package: the marks are read as scripts/rules_index.py reads them
    spec = importlib.util.spec_from_file_location("rules_index", ROOT / "scripts" / "rules_index.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_INDEX = _rules_index()
CITATION, OTHER_DOCUMENT = _INDEX.CITATION, _INDEX.OTHER_DOCUMENT


def _cited_sections() -> dict[str, set[str]]:
    """Every § number cited in the code, tests and docs, with the files that cite it."""
    cited: dict[str, set[str]] = {}
    code = [p for d in ("src", "tests", "dags", "plugins", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    files = [*code, *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    for path in files:
        text = OTHER_DOCUMENT.sub("", path.read_text(encoding="utf-8"))
        for number in CITATION.findall(text):
            cited.setdefault(number, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_every_cited_section_is_a_heading_of_the_rules_page() -> None:
    # Marks of other documents are left out, the rules page's own are all kept.
    text = "(DESIGN §2, §6, §8) DESIGN.md §7 RFC 9110 §10.2.3 and the rule §2.2 step 10, §1.2–§1.6"
    assert CITATION.findall(OTHER_DOCUMENT.sub("", text)) == ["2.2", "1.2", "1.6"]
    headings = set(_INDEX.sections(RULES.read_text(encoding="utf-8")))
    cited = _cited_sections()
    assert len(cited) >= 40  # the guard reads real citations (41 distinct numbers when this test was written)
    missing = {number: sorted(files) for number, files in cited.items() if number not in headings}
    assert missing == {}


def test_the_rules_page_says_what_section_marks_refer_to() -> None:
    head = RULES.read_text(encoding="utf-8")[:600]
    assert "Section marks (§) in the code, tests and docs of this repository refer to this page" in head


def test_nothing_tracked_points_outside_the_repository() -> None:
    # Spelled in pieces so that this file does not match itself.
    outside = ["../" + "shared", "shared/" + "samples", "shared/" + "reference", "rocketmq-retry-" + "spec.md"]
    tracked = subprocess.run(
        ["git", "ls-files", "src", "tests", "docs", "scripts", "dags", "plugins", "Makefile", "README.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:  # an exported tree without git: read the files themselves
        tracked = [str(p.relative_to(ROOT)) for d in ("src", "tests", "docs") for p in (ROOT / d).rglob("*.*")]
    hits = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".yaml", ".yml", ".sh", ".cfg", ".toml", ""} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{name}: {word}" for word in outside if word in text]
    assert hits == []


def test_the_sample_is_inside_the_repository() -> None:
    if "SAMPLES_DIR" in os.environ:
        pytest.skip("SAMPLES_DIR points the sample tests elsewhere on purpose")
    assert SAMPLES == ROOT / "tests" / "data" / "rocketmq-4.9.4"
    for name in (
        "ground-truth.csv",
        "client/consumers.rocketmq_client.log",
        "broker/stats.log",
        "dumps/dlq-topics.jsonl",
    ):
        assert (SAMPLES / name).is_file(), name
    # The client log is compared byte for byte (CRLF line ends); git must not convert it.
    assert (SAMPLES / "client/consumers.rocketmq_client.log").read_bytes().count(b"\r\n") > 1000


def test_scratch_files_live_outside_the_checkout() -> None:
    assert not SCRATCH.is_relative_to(ROOT)
    assert not pathlib.Path(os.environ["AIRFLOW_HOME"]).resolve().is_relative_to(ROOT)


@pytest.mark.spark
def test_spark_warehouse_lives_outside_the_checkout(spark: Any) -> None:
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    path = pathlib.Path(warehouse.removeprefix("file:"))
    assert path.is_relative_to(SCRATCH)
    assert not (ROOT / "spark-warehouse").exists()
