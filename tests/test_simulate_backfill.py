"""A run over several dates (``--days``, ``--collect daily``): deterministic, each date's folder a cut of the one run
at that date's end, truth by date consistent with the hop truth, and the committed estate ``tests/data/backfill``
exactly what its README's command writes."""

from __future__ import annotations

import csv
import datetime as _dt
import gzip
import json
import pathlib
import re
import shlex
from collections import defaultdict

import pytest

from rocketmq_retry.config import load_config
from rocketmq_retry.logformats import timefmt
from rocketmq_retry.simulate import truth_dates
from rocketmq_retry.simulate.cli import main
from rocketmq_retry.simulate.truth import HOP_COLUMNS, LIFECYCLE_COLUMNS

ROOT = pathlib.Path(__file__).resolve().parents[1]
BACKFILL = ROOT / "tests" / "data" / "backfill"
ZONE = "Asia/Shanghai"
DATES = ("2026-11-19", "2026-11-20")
# a small run of the estate's deployment: every kind of file, rolled often
SMALL = [
    "--date", DATES[0], "--days", "2", "--config", str(BACKFILL / "rocketmq-retry.yaml"),
    "--scenario", str(BACKFILL / "simulate-scenario.yaml"), "--messages", "24", "--noise", "0.001",
    "--rotate-mb", "0.004", "--seed", "5", "--quiet",
]  # fmt: skip
HEAD_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")
# a rolled sibling of a current file: <name>.<i>[.gz], <name>.<date>.<i>[.gz] (Spring), <stem>.<i>.log[.gz] (broker)
ROLLED = r"^{name}\.(?:(?P<day>\d{{4}}-\d{{2}}-\d{{2}})\.)?(?P<i>\d+)(?:\.gz)?$|^{stem}\.(?P<j>\d+)\.log(?:\.gz)?$"


def _snapshot(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _simulate(out: pathlib.Path, *extra: str) -> pathlib.Path:
    assert main([*SMALL, "--out", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """The same small run written whole and collected daily."""
    tmp = tmp_path_factory.mktemp("backfill")
    return _simulate(tmp / "whole"), _simulate(tmp / "daily", "--collect", "daily")


def _text(path: pathlib.Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def _history(root: pathlib.Path, current: str) -> str:
    """A log file's lines from its first rolled sibling to the current file, as one text."""
    path = root / current
    stem = path.name.removesuffix(".log")
    pattern = re.compile(ROLLED.format(name=re.escape(path.name), stem=re.escape(stem)))
    rolled = []
    for sibling in [*path.parent.iterdir(), *(path.parent / "otherdays").glob("*")]:
        m = pattern.match(sibling.name)
        if m and sibling.is_file():
            index = int(m.group("i") or m.group("j"))
            # Spring names count up within a date; fixed windows count down (1 = newest)
            rolled.append(((m.group("day"), index) if m.group("day") else ("", -index), sibling))
    return "".join(_text(p) for _, p in sorted(rolled)) + _text(path)


def _current_files(root: pathlib.Path) -> list[str]:
    manifest = json.loads((root / "_truth" / "manifest.json").read_text(encoding="utf-8"))
    return sorted(manifest["files"])


def _csv(root: pathlib.Path, name: str) -> list[dict[str, str]]:
    with (root / "_truth" / name).open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- the run ----------------------------------------------------------------------------------------------------


def test_same_seed_same_bytes(runs: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path) -> None:
    _, daily = runs
    again = _simulate(tmp_path / "again", "--collect", "daily")
    assert _snapshot(again) == _snapshot(daily)
    assert sorted(p.name for p in daily.iterdir()) == ["2026-11-19", "2026-11-20", "_truth"]


def test_days_1_is_the_one_date_run(tmp_path: pathlib.Path) -> None:
    one = [*SMALL, "--days", "1"]
    assert main([*one, "--out", str(tmp_path / "a")]) == 0
    default = [a for a in SMALL if a not in ("--days", "2")]
    assert main([*default, "--out", str(tmp_path / "b")]) == 0
    assert _snapshot(tmp_path / "a") == _snapshot(tmp_path / "b")
    assert not list((tmp_path / "a" / "_truth").glob("*_by_date.csv"))


def test_start_up_is_on_the_first_date_only(runs: tuple[pathlib.Path, pathlib.Path]) -> None:
    whole, _ = runs
    text = _history(whole, "default-order-notify-01/logs/app.log")
    starts = [line[:10] for line in text.splitlines() if "running container" in line or " Started " in line]
    assert starts == ["2026-11-19", "2026-11-19"]
    publishes = _csv(whole, "publishes.csv")
    assert {p["published_at"][:10] for p in publishes} >= {"2026-11-18", "2026-11-19", "2026-11-20"}  # UTC dates
    assert len(publishes) == 48 and len({p["keys"] for p in publishes}) == 48


# --- the daily layout -------------------------------------------------------------------------------------------


def test_each_date_folder_is_the_run_cut_at_its_end(runs: tuple[pathlib.Path, pathlib.Path]) -> None:
    """Every log file of a date's folder, rolled siblings first, is a prefix of the same file over the whole run,
    and the next date's copy extends it."""
    whole, daily = runs
    before: dict[str, str] = {}
    rolled_seen = 0
    for day in DATES:
        folder = daily / day
        names = [f.split("/", 1)[1] for f in _current_files(daily) if f.startswith(f"{day}/")]
        assert names
        for name in names:
            part = _history(folder, name)
            assert _history(whole, name).startswith(part), f"{day}/{name} is not a cut of the run"
            assert part.startswith(before.get(name, "")), f"{day}/{name} lost lines of the day before"
            before[name] = part
        rolled_seen += len(list(folder.rglob("*.gz")))
    assert rolled_seen, "--rotate-mb 0.004 should roll files"


def test_date_folders_hold_no_line_written_after_the_dates_end(runs: tuple[pathlib.Path, pathlib.Path]) -> None:
    _, daily = runs
    for day in DATES:
        _start, end = timefmt.day_bounds_ms(_dt.date.fromisoformat(day), ZONE)
        next_day = (_dt.date.fromisoformat(day) + _dt.timedelta(days=1)).isoformat()
        for path in (daily / day).rglob("*"):
            if not path.is_file() or "dumps" in path.parts:
                continue
            for line in _text(path).splitlines():
                m = HEAD_TIME.match(line)
                # a line written just before midnight by a host whose clock runs ahead (skew <= 250 ms), or stamped
                # a little ahead by its writer, carries the next date's first seconds
                assert not m or m.group(1) < next_day or (m.group(1) == next_day and m.group(2) <= "00:00:05"), (
                    f"{path}: {line[:80]}"
                )
        for dump in (daily / day / "dumps").iterdir():
            for line in _text(dump).splitlines():
                assert _start <= json.loads(line)["storeTimestamp"] < end


def test_spring_logs_roll_at_midnight_and_broker_names_hold_other_lines(
    runs: tuple[pathlib.Path, pathlib.Path],
) -> None:
    _, daily = runs
    first, second = (daily / day for day in DATES)
    logs = "longhaul-coupon-grant-01/logs"

    def of_first_date(folder: pathlib.Path) -> list[pathlib.Path]:
        return sorted((folder / logs).glob("app.log.2026-11-19.*.gz"), key=lambda p: int(p.name.split(".")[3]))

    rolled = of_first_date(second)
    # what the first date's app.log held at its end is the second folder's last file of that date, rolled on the
    # second date's first line (or, when its last line filled it, already rolled by size: then it is empty)
    first_history = "".join(_text(p) for p in of_first_date(first)) + _text(first / logs / "app.log")
    assert rolled and "".join(_text(p) for p in rolled) == first_history
    assert not list((first / logs).glob("app.log.2026-11-20.*"))
    stats = "rmq-broker-b/logs/rocketmqlogs/stats.log"
    assert (first / stats).read_bytes() != (second / stats).read_bytes()
    assert (first / stats).read_text(encoding="utf-8")[:10] == "2026-11-19"


# --- truth by date ----------------------------------------------------------------------------------------------


def test_truth_by_date_follows_the_hop_truth(runs: tuple[pathlib.Path, pathlib.Path]) -> None:
    _, daily = runs
    lifecycles = {r["lifecycle_id"]: r for r in _csv(daily, "lifecycles.csv")}
    deliveries: dict[str, list[int]] = defaultdict(list)
    for h in _csv(daily, "hops.csv"):
        if h["kind"] == "DELIVERY":
            deliveries[h["lifecycle_id"]].append(int(h["at_ms"]))
    bounds = {day: timefmt.day_bounds_ms(_dt.date.fromisoformat(day), ZONE) for day in DATES}
    seen: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in _csv(daily, "lifecycles_by_date.csv"):
        lc = lifecycles[row["lifecycle_id"]]
        _start, end = bounds[row["date"]]
        assert int(row["deliveries"]) == sum(1 for at in deliveries[row["lifecycle_id"]] if at < end)
        ended = lc["final_at_ms"] != "" and int(lc["final_at_ms"]) < end
        assert row["state"] == (lc["final_state"] if ended else "IN_RETRY")
        assert row["msg_id"] == lc["msg_id"] and row["consumer_group"] == lc["consumer_group"]
        seen[row["lifecycle_id"]].append(row)
    for lid, rows in seen.items():
        assert [r["date"] for r in rows] == sorted(r["date"] for r in rows)
        assert all(r["state"] == "IN_RETRY" for r in rows[:-1]), f"lifecycle {lid} has a row after its end"
    assert set(seen) <= set(lifecycles)
    assert {lid for lid, at in deliveries.items() if min(at) < bounds[DATES[-1]][1]} <= set(seen)
    dead = _csv(daily, "dead_letters_by_date.csv")
    expected = {
        (truth_dates.date_of(int(lc["final_at_ms"]), _days()).isoformat(), lid)  # type: ignore[union-attr]
        for lid, lc in lifecycles.items()
        if lc["final_state"] == "DEAD_LETTERED" and int(lc["final_at_ms"]) < bounds[DATES[-1]][1]
    }
    assert {(r["date"], r["lifecycle_id"]) for r in dead} == expected and expected


def _days() -> list[tuple[_dt.date, int, int]]:
    return [(_dt.date.fromisoformat(d), *timefmt.day_bounds_ms(_dt.date.fromisoformat(d), ZONE)) for d in DATES]


def test_truth_by_date_of_one_lifecycle_across_midnight() -> None:
    """Stored 23:50, failed 23:55, redelivered after midnight and consumed: in retry on the first date, consumed on
    the second, and absent from the third."""
    days = [(_dt.date(2026, 11, 19 + k), *timefmt.day_bounds_ms(_dt.date(2026, 11, 19 + k), ZONE)) for k in range(3)]
    midnight = days[1][1]
    row = dict.fromkeys(LIFECYCLE_COLUMNS, "")
    row.update(lifecycle_id=7, consumer_group="GID_g", instance=0, msg_id="M", topic="T", final_state="CONSUMED")
    row.update(final_at_ms=midnight + 3_600_010)
    lifecycle = tuple(row.values())

    def hop(seq: int, kind: str, at: int, r: int) -> tuple[object, ...]:
        h = dict.fromkeys(HOP_COLUMNS, "")
        h.update(lifecycle_id=7, consumer_group="GID_g", msg_id="M", seq=seq, kind=kind, at_ms=at, reconsume_times=r)
        return tuple(h.values())

    hops = [hop(0, "DELIVERY", midnight - 300_000, 0), hop(1, "HOP", midnight - 299_990, 0)]
    hops.append(hop(2, "DELIVERY", midnight + 3_600_000, 1))
    rows = truth_dates.lifecycles_by_date([lifecycle], hops, {7: midnight - 600_000}, days)
    assert [(r[0], r[9], r[12], r[13], r[15]) for r in rows] == [
        ("2026-11-19", "IN_RETRY", 1, 1, 0),
        ("2026-11-20", "CONSUMED", 2, 1, 1),
    ]
    assert rows[0][6] == "2026-11-19T15:50:00.000Z" and rows[0][8] == "false" and rows[1][8] == "true"
    assert rows[1][10] == "2026-11-19T17:00:00.010Z"
    assert truth_dates.dead_letters_by_date([lifecycle], {7: midnight - 600_000}, days) == []


# --- the committed estate ---------------------------------------------------------------------------------------


def test_committed_backfill_is_current(tmp_path: pathlib.Path) -> None:
    readme = (BACKFILL / "README.md").read_text(encoding="utf-8")
    command = re.search(r"^rocketmq-retry simulate (.*)$", readme, re.M)
    assert command is not None
    args = shlex.split(command.group(1))
    args = [str(ROOT / a) if a.startswith("tests/") else a for a in args]
    out = tmp_path / "landing"
    args[args.index("--out") + 1] = str(out)
    assert main([*args, "--quiet"]) == 0
    committed = _snapshot(BACKFILL / "landing")
    regenerated = _snapshot(out)
    assert sorted(committed) == sorted(regenerated)
    stale = [name for name in committed if committed[name] != regenerated[name]]
    assert not stale, f"tests/data/backfill is stale ({len(stale)} files differ); re-run its README's command"
    assert sum(len(b) for b in committed.values()) < 3_300_000


def test_committed_backfill_holds_what_it_is_for() -> None:
    landing = BACKFILL / "landing"
    # every source of the estate's config reads files in every date's folder (ingest --landing landing/<date>)
    config = load_config(BACKFILL / "rocketmq-retry.yaml")
    for day in ("2026-11-19", "2026-11-20", "2026-11-21"):
        for source in config.sources:
            assert [p for p in (landing / day).glob(source.glob_for(day)) if p.is_file()], (day, source.path)
    # (a) the Spring application's containers start on the first date only, on both hosts
    for host in ("default-order-notify-01", "default-order-notify-02"):
        for day in ("2026-11-19", "2026-11-20", "2026-11-21"):
            lines = [
                line
                for p in (landing / day / host / "logs").glob("app.log*")
                for line in _text(p).splitlines()
                if "running container" in line
            ]
            assert [line[:10] for line in lines] == ["2026-11-19"], (host, day)
    # (c) always-failing messages of GID_settle_audit reach %DLQ% more than a day after their first delivery
    first: dict[str, int] = {}
    for h in _csv(landing, "hops.csv"):
        first.setdefault(h["lifecycle_id"], int(h["at_ms"]))
    dead = [r for r in _csv(landing, "dead_letters_by_date.csv") if r["consumer_group"] == "GID_settle_audit"]
    assert dead and all(int(r["dead_lettered_at_ms"]) - first[r["lifecycle_id"]] > 86_400_000 for r in dead)
    # (d) silent successes that waited across midnight: in retry at one date's end, consumed on the next, and
    # nothing on the consuming host names the message on that date
    by_date = {(r["date"], r["lifecycle_id"]): r for r in _csv(landing, "lifecycles_by_date.csv")}
    crossed = [
        r
        for (day, lid), r in by_date.items()
        if r["consumer_group"].startswith("GID_coupon_")
        and r["state"] == "CONSUMED"
        and r["deliveries_on_date"] == "1"  # the successful one: the failure before it was on the day before
        and by_date.get((_previous(day), lid), {}).get("state") == "IN_RETRY"
    ]
    assert len(crossed) >= 3
    for r in crossed:
        logs = landing / r["date"] / "longhaul-coupon-grant-01" / "logs"
        today = [logs / "app.log", *logs.glob(f"app.log.{r['date']}.*.gz")]
        assert not any(r["msg_id"] in _text(p) for p in today), r["msg_id"]
    # (e) one broker file name, different lines on each date
    stats = "rmq-broker-b/logs/rocketmqlogs/otherdays/stats.1.log.gz"
    assert len({_text(landing / day / stats)[:19] for day in ("2026-11-19", "2026-11-20", "2026-11-21")}) == 3
    # (f) the retry, schedule and DLQ exports of each date
    for day in ("2026-11-19", "2026-11-20", "2026-11-21"):
        for name in ("retry-topics", "schedule-topic", "dlq-topics"):
            assert (landing / day / "dumps" / f"{name}.jsonl.gz").exists()


def _previous(day: str) -> str:
    return (_dt.date.fromisoformat(day) - _dt.timedelta(days=1)).isoformat()
