"""Score a warehouse's dates against a multi-day simulation's truth by date, and compare warehouses table by table.

    benchmarks/score_backfill.py WAREHOUSE --truth LANDING/_truth --dates 2026-11-19,2026-11-20,2026-11-21
    benchmarks/score_backfill.py WAREHOUSE --dates ... --compare OTHER_WAREHOUSE [--compare ...]

Per date: lifecycles whose final state and delivery count match the truth's state at the date's end
(``lifecycles_by_date.csv``), rows missing or extra, and the precision and recall of the compensable dead letters
against ``dead_letters_by_date.csv``. Across the dates: ``event_id``s that name different lines in two partitions.
With ``--compare``: every table's rows of every date, compared as sorted sets (empty diff = identical).
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys
from collections import Counter
from typing import Any

import pyarrow.parquet as pq

TABLES = ("events", "bindings", "transitions", "lifecycles", "dead_letters", "reconciliation", "unattributed")


def rows(warehouse: pathlib.Path, table: str, ds: str) -> list[dict[str, Any]]:
    path = warehouse / table / f"dt={ds}"
    return pq.read_table(path).to_pylist() if path.is_dir() else []


def truth_rows(truth: pathlib.Path, name: str, ds: str) -> list[dict[str, str]]:
    with (truth / name).open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["date"] == ds]


def score_date(warehouse: pathlib.Path, truth: pathlib.Path, ds: str) -> dict[str, Any]:
    want = {(r["consumer_group"], r["msg_id"]): (r["state"], int(r["deliveries"])) for r in truth_rows(
        truth, "lifecycles_by_date.csv", ds)}  # fmt: skip
    got = {(r["consumer_group"], r["msg_id"]): (r["final_state"], r["deliveries"]) for r in rows(
        warehouse, "lifecycles", ds)}  # fmt: skip
    state_ok = sum(1 for k, v in want.items() if k in got and got[k][0] == v[0])
    both_ok = sum(1 for k, v in want.items() if got.get(k) == v)
    wrong = Counter(f"{want[k][0]}->{got[k][0]}" for k in want if k in got and got[k][0] != want[k][0])
    true_dl = {(r["consumer_group"], r["msg_id"]) for r in truth_rows(truth, "dead_letters_by_date.csv", ds)}
    our_dl = {(r["consumer_group"], r["msg_id"]) for r in rows(warehouse, "dead_letters", ds) if r["compensable"]}
    hit = len(true_dl & our_dl)
    return {
        "date": ds,
        "truth": len(want),
        "written": len(got),
        "state_accuracy": state_ok / len(want) if want else 1.0,
        "state_and_deliveries_accuracy": both_ok / len(want) if want else 1.0,
        "missing": sorted(set(want) - set(got)),
        "extra": sorted(set(got) - set(want)),
        "wrong_states": dict(wrong),
        "dead_letters_true": len(true_dl),
        "dead_letters_compensable": len(our_dl),
        "precision": hit / len(our_dl) if our_dl else 1.0,
        "recall": hit / len(true_dl) if true_dl else 1.0,
    }


def shared_event_ids(warehouse: pathlib.Path, dates: list[str]) -> int:
    """``event_id``s present in several dates' partitions for different lines (file, line number, type)."""
    seen: dict[str, set[tuple[Any, ...]]] = {}
    for ds in dates:
        for r in rows(warehouse, "events", ds):
            seen.setdefault(r["event_id"], set()).add((r["source_file"], r["line_no"], r["event_type"], ds))
    return sum(1 for lines in seen.values() if len({(f, n, t) for f, n, t, _ in lines}) > 1)


def _key(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    return value


def diff(a: pathlib.Path, b: pathlib.Path, dates: list[str]) -> dict[str, int]:
    """Per table, rows in one warehouse and not the other (both ways), over ``dates``."""
    out: dict[str, int] = {}
    for table in TABLES:
        n = 0
        for ds in dates:
            left = Counter(_key(r) for r in rows(a, table, ds))
            right = Counter(_key(r) for r in rows(b, table, ds))
            n += sum(((left - right) + (right - left)).values())
        out[table] = n
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("warehouse", type=pathlib.Path)
    p.add_argument("--truth", type=pathlib.Path, help="the simulation's _truth folder")
    p.add_argument("--dates", required=True, help="comma-separated dates")
    p.add_argument("--compare", type=pathlib.Path, action="append", default=[], help="another warehouse")
    args = p.parse_args(argv)
    dates = args.dates.split(",")
    if args.truth:
        for ds in dates:
            s = score_date(args.warehouse, args.truth, ds)
            print(
                f"{ds}: lifecycles {s['written']} written / {s['truth']} true; final state {s['state_accuracy']:.4f}, "
                f"state and deliveries {s['state_and_deliveries_accuracy']:.4f}; missing {len(s['missing'])}, "
                f"extra {len(s['extra'])}; wrong {s['wrong_states'] or 'none'}; dead letters "
                f"{s['dead_letters_compensable']} compensable / {s['dead_letters_true']} true: precision "
                f"{s['precision']:.4f}, recall {s['recall']:.4f}"
            )
    print(f"event_ids naming different lines in several partitions: {shared_event_ids(args.warehouse, dates)}")
    for other in args.compare:
        d = diff(args.warehouse, other, dates)
        print(f"diff {args.warehouse} vs {other}: " + ", ".join(f"{t} {n}" for t, n in d.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
