"""The package's import graph, read from the source (nothing is imported): its rooms, the arrows between them, the
import cycles and every arrow that climbs from a lower floor to a higher one (docs/DESIGN.md §3 "Floors").

    .venv/bin/python scripts/import_graph.py [--root DIR] [--check]

An arrow is any ``import`` of a module of the package, at module level or inside a function (a deferred import is
still a dependency); imports under ``if TYPE_CHECKING:`` are left out, as they never run. ``--check`` exits 1 when
there is a cycle, an upward arrow or a module outside ``airflow/`` that imports Airflow (tests/test_house.py runs
it).
"""

from __future__ import annotations

import argparse
import ast
import collections
import pathlib
import sys
from collections.abc import Iterator

PACKAGE = "rocketmq_retry"

# Rooms from the bottom floor up; a room may import its own floor's other rooms only when listed before it on
# the same line (none is today), and any room of a floor below.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors", "engine"),
    ("dates", "config_sections"),
    ("contract", "config"),
    ("urls", "routing", "schedule", "logformats", "spark_session"),
    ("warehouse",),
    ("jobs", "simulate"),
    ("compensation", "validation"),
    ("explore",),
    ("whatif",),
    ("cli", "spark_apps", "airflow", "spark_classes"),
)


def floor_of(room: str) -> int:
    for level, rooms in enumerate(FLOORS):
        if room in rooms:
            return level
    raise KeyError(f"room {room!r} is on no floor: add it to FLOORS in scripts/import_graph.py")


def module_name(src: pathlib.Path, path: pathlib.Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from _imports(child)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _sources(src: pathlib.Path) -> dict[str, pathlib.Path]:
    return {module_name(src, p): p for p in (src / PACKAGE).rglob("*.py") if "migrations" not in p.parts}


def airflow_importers(src: pathlib.Path) -> list[str]:
    """Modules outside the ``airflow`` room that import Airflow itself (DESIGN §3: only ``airflow/`` does)."""
    out = []
    for module, path in sorted(_sources(src).items()):
        if room_of(module) == "airflow":
            continue
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if not getattr(node, "level", 0) and any(n == "airflow" or n.startswith("airflow.") for n in names):
                out.append(module)
                break
    return out


def module_graph(src: pathlib.Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    paths = _sources(src)
    graph: dict[str, set[str]] = {m: set() for m in paths}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # `from pkg import sub` names the submodule; `from pkg import name` names the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            for target in targets:
                # `import a.b.c` also runs a and a.b: the deepest module of the package named is the arrow's end
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != module and target.startswith(PACKAGE + "."):
                    graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from a room to a room on a higher floor."""
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if floor_of(room_of(a)) < floor_of(room_of(b))
    )


def room_arrows(graph: dict[str, set[str]]) -> dict[tuple[str, str], int]:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for a, targets in graph.items():
        for b in targets:
            if room_of(a) != room_of(b):
                counts[(room_of(a), room_of(b))] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-floor_of(kv[0][0]), kv[0])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[1]), help="the checkout")
    parser.add_argument("--check", action="store_true", help="exit 1 on a cycle or an upward arrow")
    args = parser.parse_args(argv)
    src = pathlib.Path(args.root) / "src"
    graph = module_graph(src)
    print(f"{len(graph)} modules, {sum(len(t) for t in graph.values())} arrows between them")
    print("\nrooms, from the top floor down (room -> room: arrows):")
    for (a, b), n in room_arrows(graph).items():
        print(f"  floor {floor_of(a)} {a:<15} -> floor {floor_of(b)} {b:<15} {n}")
    found, climbs = cycles(graph), upward(graph)
    print(f"\ncycles: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    print(f"upward arrows: {len(climbs)}")
    for a, b in climbs:
        print(f"  {a} (floor {floor_of(room_of(a))}) -> {b} (floor {floor_of(room_of(b))})")
    outside = airflow_importers(src)
    print(f"modules outside airflow/ that import Airflow: {len(outside)}")
    for module in outside:
        print(f"  {module}")
    return 1 if args.check and (found or climbs or outside) else 0


if __name__ == "__main__":
    sys.exit(main())
