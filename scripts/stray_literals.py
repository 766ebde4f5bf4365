"""Names spelled outside their one home: a string literal in the package's code that equals an event type, a hop
state, a final state, a hop action, a RocketMQ system topic name or a ledger state, outside the module that
declares it (docs/DESIGN.md §4 "One spelling"). Read from the source; docstrings are prose and not counted.

    .venv/bin/python scripts/stray_literals.py [--root DIR] [--vocabulary-root DIR] [--check]

``--check`` exits 1 when there is any (tests/test_house.py runs it).
"""

from __future__ import annotations

import argparse
import ast
import collections
import pathlib
import sys

# The modules that declare the vocabularies: every literal there is a declaration.
HOMES = ("contract.py", "engine/", "compensation/model.py")
# A ledger state's words ("FAILED", "PENDING") also name other things in the jobs and the simulator's truth: they
# are the ledger's only where the ledger is read.
LEDGER_ROOMS = ("compensation", "explore", "airflow", "cli.py")
# The same word naming another thing, declared where it is used (file, literal): not a second spelling.
HOMONYMS = {
    # ConsumeReturnType's name as a trace record carries it (ConsumeContext#status, §7.2)
    ("jobs/ingest/patterns.py", "FAILED"),
    # the evidence kind of a copy in a retry topic (jobs/reconstruct/events.py, evidence kinds)
    ("jobs/reconstruct/events.py", "READY"),
    ("jobs/reconstruct/facts.py", "READY"),
    ("jobs/reconstruct/job.py", "READY"),
}


def vocabularies(src: pathlib.Path) -> dict[str, set[str]]:
    sys.path.insert(0, str(src))
    from rocketmq_retry import contract
    from rocketmq_retry.compensation.model import State
    from rocketmq_retry.engine import model

    return {
        "event type (contract.EventType)": set(contract.EVENT_TYPES),
        "hop state (contract.HopState)": set(contract.HOP_STATES),
        "final state (contract.FINAL_STATES, engine.FinalState)": {*contract.FINAL_STATES, *model.FinalState},
        "hop action (engine.HopAction)": {a.value for a in model.HopAction},
        "system topic (engine.model)": {
            model.RETRY_TOPIC_PREFIX,
            model.DLQ_TOPIC_PREFIX,
            model.SCHEDULE_TOPIC,
            model.TRACE_TOPIC,
        },
        "ledger state (compensation.model.State)": {s.value for s in State},
    }


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def strays(src: pathlib.Path, vocabulary_src: pathlib.Path | None = None) -> list[tuple[str, int, str, str]]:
    """(file, line, literal, vocabulary) of every stray literal, in file order. ``vocabulary_src``: whose
    vocabularies to look for (default: the scanned tree's; another tree's to count an older checkout)."""
    vocab = vocabularies(vocabulary_src or src)
    package = src / "rocketmq_retry"
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if "migrations/" in rel:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                continue
            for name, values in vocab.items():
                if node.value not in values or rel.startswith(HOMES) or (rel, node.value) in HOMONYMS:
                    continue
                if name.startswith("ledger") and not rel.startswith(LEDGER_ROOMS):
                    continue
                out.append((rel, node.lineno, node.value, name))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[1]), help="the checkout")
    parser.add_argument("--check", action="store_true", help="exit 1 when there is a stray literal")
    parser.add_argument("--vocabulary-root", help="take the vocabularies from this checkout (an older one lacks some)")
    args = parser.parse_args(argv)
    vocabulary = pathlib.Path(args.vocabulary_root) / "src" if args.vocabulary_root else None
    found = strays(pathlib.Path(args.root) / "src", vocabulary)
    by_file = collections.Counter(rel for rel, *_ in found)
    print(f"stray literals: {len(found)} in {len(by_file)} files")
    for rel, line, value, name in found:
        print(f"  {rel}:{line}: {value!r}, {name}")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
