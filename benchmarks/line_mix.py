"""The line mix of a landing: how many lines of each kind it holds, and their share (docs/scale.md "Line mixes").

    .venv/bin/python benchmarks/line_mix.py <landing>

A kind is told by the file's family (its path, as the benchmark topologies lay landings out) and the line's shape:
a head line (it opens with a timestamp) or not (a stack frame, ``Caused by:``, a wrapped message, a banner line).
Not the parser: a quick census for the benchmark's table, read with Python's regexes over every line.
"""

from __future__ import annotations

import collections
import gzip
import pathlib
import re
import sys

HEAD = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}|\d{2}:\d{2}:\d{2}\.\d{3} )")
FRAME = re.compile(r"^\s+(at |\.\.\. \d+ )|^\s*(Caused by|Suppressed): ")
SPRING_CONTAINER = "DefaultRocketMQListenerContainer"
FRAMEWORK = re.compile(r" (o\.s\.|o\.a\.c\.|o\.apache\.|c\.z\.h\.|com\.zaxxer|w\.s\.c\.)\S* *: ")


def family(path: pathlib.Path) -> str:
    name = path.name
    if "_truth" in path.parts:
        return ""
    if name.startswith(("stdout.log", "app.log")):
        return "spring"
    if name.startswith("rocketmq_client"):
        return "client"
    if name.startswith(("stats", "broker", "store")) and "rmq-broker" in str(path):
        return "broker"
    if path.suffix == ".trace" or ".trace" in name:
        return "trace"
    if ".jsonl" in name:
        return "dump"
    return "other"


def kind(fam: str, line: str) -> str:
    if fam in ("trace", "dump", "broker"):
        return {"trace": "trace records", "dump": "message dumps", "broker": "broker and stats"}[fam]
    if not HEAD.match(line):
        if FRAME.match(line):
            return "stack trace (frames, Caused by)"
        return "other continuation (exception, blank, wrapped, banner)"
    if fam == "spring":
        if SPRING_CONTAINER in line:
            return "rocketmq-spring container (failures, start-up)"
        if FRAMEWORK.search(line):
            return "Spring Boot framework start-up"
        return "application INFO"
    if "[persistAll]" in line:
        return "client offset flush [persistAll]"
    if " WARN " in line or " ERROR " in line:
        return "client WARN/ERROR (consume failures, send-back)"
    return "client INFO (heartbeat, rebalance, start-up, stats)"


def census(landing: pathlib.Path) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(p for p in landing.rglob("*") if p.is_file()):
        fam = family(path)
        if not fam:
            continue
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            for line in f:
                counts[kind(fam, line)] += 1
    return counts


def table(counts: collections.Counter[str]) -> str:
    total = sum(counts.values())
    rows = ["| line kind | lines | share |", "|---|---|---|"]
    rows += [f"| {k} | {n:,} | {n / total:.1%} |" for k, n in counts.most_common()]
    rows.append(f"| **all** | {total:,} | 100% |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(census(pathlib.Path(sys.argv[1]))))
