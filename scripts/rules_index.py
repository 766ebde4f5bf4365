"""The index at the end of docs/rocketmq-rules.md: for each section (§) of the rules, the modules whose code cites it.

    .venv/bin/python scripts/rules_index.py            # print the index
    .venv/bin/python scripts/rules_index.py --write    # replace the generated block of docs/rocketmq-rules.md

Read from the source: a citation is ``§N`` or ``§N.M`` in a module of the package (comments and docstrings
included), except one that names another document (``DESIGN §4``, ``RFC 9110 §10.2.3``); tests/test_rules_page.py reads
the same marks in the tests and docs too. tests/test_house.py fails when the document's
index differs from what the code cites.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rocketmq-rules.md"
BEGIN = "<!-- generated from the code's citations: python scripts/rules_index.py --write -->"
END = "<!-- end of generated index -->"
# Marks that belong to another document: "DESIGN §4", "DESIGN.md §6, §7", "RFC 9110 §10.2.3".
OTHER_DOCUMENT = re.compile(r"(?:DESIGN(?:\.md)?|RFC \d+) §[\d.]+(?:(?:, | and |/|–)§[\d.]+)*")
CITATION = re.compile(r"§(\d+(?:\.\d+)*)")
_HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)[. ] *(.*)$")


def citations(src: pathlib.Path) -> dict[str, set[str]]:
    """section -> the package's modules (paths under src/rocketmq_retry/) that cite it."""
    package = src / "rocketmq_retry"
    out: dict[str, set[str]] = collections.defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        text = OTHER_DOCUMENT.sub("", path.read_text(encoding="utf-8"))
        for number in CITATION.findall(text):
            out[number].add(path.relative_to(package).as_posix())
    return out


def sections(rules: str) -> dict[str, str]:
    """section number -> its title, in document order."""
    out = {}
    for line in rules.splitlines():
        match = _HEADING.match(line)
        if match:
            out[match.group(1)] = match.group(2).strip()
    return out


def _key(section: str) -> tuple[int, ...]:
    return tuple(int(part) for part in section.split("."))


def index(src: pathlib.Path, rules: str) -> str:
    cited, titles = citations(src), sections(rules)
    unknown = sorted(set(cited) - set(titles), key=_key)
    if unknown:
        where = "; ".join(f"§{s}: {', '.join(sorted(cited[s]))}" for s in unknown)
        raise SystemExit(f"the code cites sections docs/rocketmq-rules.md does not have: {where}")
    lines = ["| § | section | modules that cite it (under `src/rocketmq_retry/`) |", "|---|---|---|"]
    for section in sorted(titles, key=_key):
        modules = ", ".join(f"`{m}`" for m in sorted(cited.get(section, ()))) or "—"
        lines.append(f"| §{section} | {titles[section]} | {modules} |")
    return "\n".join(lines)


def with_index(rules: str, src: pathlib.Path) -> str:
    start, end = rules.find(BEGIN), rules.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"docs/rocketmq-rules.md has no {BEGIN!r} … {END!r} block")
    return rules[: start + len(BEGIN)] + "\n" + index(src, rules) + "\n" + rules[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the generated block of the rules document")
    args = parser.parse_args(argv)
    rules = RULES.read_text(encoding="utf-8")
    if args.write:
        RULES.write_text(with_index(rules, ROOT / "src"), encoding="utf-8")
    else:
        print(index(ROOT / "src", rules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
