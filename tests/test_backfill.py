"""A three-date range backfilled gives the same answer as living through it (issue #28, docs/reconstruction.md
"Dates and look-back", docs/airflow.md "Backfilling").

`tests/data/backfill/` is a simulated estate collected one folder per date (its README): a Spring application
whose start-up lines are only in the first date's log, a group whose schedule exceeds a day, silent successes
after 1 h and 2 h levels that cross midnight, broker logs rolled by size. Each date is ingested and reconstructed
with `--landing landing/{ds}`, oldest first and newest first (ingest then catches up the earlier dates), and:
- each date's lifecycles, dead letters and scheduled hops equal the simulator's truth by date, but for the two
  limits docs/reconstruction.md states (listed by `known_limits`);
- both orders give identical tables, row for row;
- no `event_id` names two different lines in two partitions;
- compensation reaches each true dead letter exactly once across the range, also when a date is re-run after a
  later one.
"""

from __future__ import annotations

import csv
import datetime as dt
import pathlib
import shutil
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.contract import partition_dir
from rocketmq_retry.jobs.ingest import job as ingest
from rocketmq_retry.jobs.reconstruct import job as reconstruct
from rocketmq_retry.jobs.reconstruct.lifecycles import Thresholds

pytestmark = pytest.mark.spark

ESTATE = pathlib.Path(__file__).parent / "data" / "backfill"
TRUTH = ESTATE / "landing" / "_truth"
DATES = ["2026-11-19", "2026-11-20", "2026-11-21"]
TABLES = ("events", "quarantine", "bindings", *reconstruct.TABLES)
SILENT_GROUPS = ("GID_coupon_grant", "GID_coupon_expire")  # rocketmq-spring without trace: success leaves no line


def run_dates(root: pathlib.Path, order: list[str]) -> pathlib.Path:
    wh = root / "warehouse"
    config = ["--config", str(ESTATE / "rocketmq-retry.yaml"), "--warehouse", str(wh)]
    for ds in order:
        assert ingest.main(["--date", ds, "--landing", str(ESTATE / "landing" / "{ds}"), *config]) == 0
        assert reconstruct.main(["--date", ds, *config]) == 0
    return wh


@pytest.fixture(scope="module")
def oldest_first(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> pathlib.Path:
    return run_dates(tmp_path_factory.mktemp("oldest"), DATES)


@pytest.fixture(scope="module")
def newest_first(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> pathlib.Path:
    return run_dates(tmp_path_factory.mktemp("newest"), DATES[::-1])


def read(spark: Any, wh: pathlib.Path, table: str, ds: str) -> Any:
    return spark.read.parquet(str(partition_dir(wh, table, ds)))


def truth(name: str, ds: str) -> list[dict[str, str]]:
    with (TRUTH / name).open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["date"] == ds]


def truth_hops() -> dict[tuple[str, str], list[dict[str, str]]]:
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    with (TRUTH / "hops.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            out.setdefault((r["consumer_group"], r["msg_id"]), []).append(r)
    return out


def day_end_ms(ds: str) -> int:
    # Asia/Shanghai keeps UTC+8 all year
    start = dt.datetime.fromisoformat(ds).replace(tzinfo=dt.timezone(dt.timedelta(hours=8)))
    return int((start + dt.timedelta(days=1)).timestamp() * 1000)


def horizon_ms(spark: Any, wh: pathlib.Path, ds: str) -> int:
    """The date's end of observation: its latest event (docs/reconstruction.md "Final state")."""
    latest = read(spark, wh, "events", ds).agg({"event_time": "max"}).collect()[0][0]
    return int(latest.replace(tzinfo=dt.UTC).timestamp() * 1000)


def known_limits(spark: Any, wh: pathlib.Path, ds: str) -> tuple[dict[tuple[str, str], Row], set[tuple[str, str]]]:
    """The truth's rows of ``ds`` as the rules of docs/reconstruction.md can know them, and the lifecycles a date
    carries that the truth settled the date before. Two stated limits ("Known limits"):
    - a silent success whose redelivery was due within ``--settle-after`` of a date's end of observation is
      ``IN_RETRY`` on that date (one delivery fewer) and settled by the next;
    - a local resubmit after a failed send-back and re-publish keeps its r, and with no delivery records the
      second delivery of that r is not counted."""
    settle = Thresholds().settle_after_ms
    hops = truth_hops()
    prev = DATES[DATES.index(ds) - 1] if DATES.index(ds) else None
    # one Spark query per date, not one per silent lifecycle (they were a minute of each test on a slow machine)
    horizons = {d: horizon_ms(spark, wh, d) for d in (ds, prev) if d}

    def limited(row: dict[str, str], d: str) -> Row:
        key = (row["consumer_group"], row["msg_id"])
        end = day_end_ms(d)
        resubmits = sum(1 for h in hops[key] if h["action"] == "LOCAL_RESUBMIT" and int(h["at_ms"]) < end)
        state, deliveries = row["state"], int(row["deliveries"]) - resubmits
        silent_at = int(row["state_at_ms"]) if row["state_at_ms"] and key[0] in SILENT_GROUPS else None
        redelivered = deliveries > 1  # a first delivery consumed silently is settled at once (silent consumption)
        if state == "CONSUMED" and redelivered and silent_at and silent_at > horizons[d] - settle:
            state, deliveries = "IN_RETRY", deliveries - 1
        return Row(consumer_group=key[0], msg_id=key[1], final_state=state, deliveries=deliveries)

    expected = {(r["consumer_group"], r["msg_id"]): limited(r, ds) for r in truth("lifecycles_by_date.csv", ds)}
    carried: set[tuple[str, str]] = set()
    for row in truth("lifecycles_by_date.csv", prev) if prev else []:
        key = (row["consumer_group"], row["msg_id"])
        then = limited(row, prev)
        if key not in expected and row["state"] == "CONSUMED" and then["final_state"] == "IN_RETRY":
            carried.add(key)  # settled by the truth on prev, by the rules on ds
            expected[key] = Row(**{**then.asDict(), "final_state": "CONSUMED", "deliveries": then["deliveries"] + 1})
    return expected, carried


@pytest.mark.parametrize("ds", DATES)
def test_each_date_is_the_truth_at_its_end(spark: Any, oldest_first: pathlib.Path, ds: str) -> None:
    expected, _ = known_limits(spark, oldest_first, ds)
    got = read(spark, oldest_first, "lifecycles", ds).select("consumer_group", "msg_id", "final_state", "deliveries")
    assertDataFrameEqual(got, list(expected.values()))


@pytest.mark.parametrize("ds", DATES)
def test_each_dead_letter_is_in_the_date_of_its_move(spark: Any, oldest_first: pathlib.Path, ds: str) -> None:
    got = read(spark, oldest_first, "dead_letters", ds).where("compensable").select("consumer_group", "msg_id")
    want = [Row(consumer_group=r["consumer_group"], msg_id=r["msg_id"]) for r in truth("dead_letters_by_date.csv", ds)]
    assertDataFrameEqual(got, want)


@pytest.mark.parametrize("ds", DATES)
def test_each_date_draws_the_true_retry_hops(spark: Any, oldest_first: pathlib.Path, ds: str) -> None:
    """Per lifecycle written on the date, the hops of earlier dates included: every scheduled retry of the plain
    send-back path the simulator made before the date's end (the copy's r and its delay level) is drawn, and the DLQ
    moves are exactly the true ones. (The fault paths, re-publish and local resubmit, are numbered by the
    reconstruction's own rules, docs/reconstruction.md "Hops"; they are not compared here.)"""
    end = day_end_ms(ds)
    hops = truth_hops()
    written = [
        (r[0], r[1]) for r in read(spark, oldest_first, "lifecycles", ds).select("consumer_group", "msg_id").collect()
    ]
    trans = read(spark, oldest_first, "transitions", ds)
    drawn = {
        (r["consumer_group"], r["msg_id"], r["reconsume_times"], r["delay_level"])
        for r in trans.where("to_state = 'SCHEDULED'").collect()
    }
    fault = {"LOCAL_RESUBMIT", "REPUBLISHED_RETRY"}  # a fault path's copies take the reconstruction's numbering
    retries = {
        (g, m, int(h["reconsume_times"]), int(h["delay_level"]))
        for g, m in written
        if not fault & {h["action"] for h in hops[(g, m)]}
        for h in hops[(g, m)]
        if h["action"] == "SCHEDULED_RETRY" and int(h["at_ms"]) < end
    }
    assert sorted(retries - drawn) == []
    moved = {(g, m) for g, m in written for h in hops[(g, m)] if h["action"] == "DEAD_LETTER" and int(h["at_ms"]) < end}
    dlq_hops = trans.where("to_state = 'DEAD_LETTERED'").select("consumer_group", "msg_id")
    assertDataFrameEqual(dlq_hops, [Row(consumer_group=g, msg_id=m) for g, m in sorted(moved)])


def test_the_range_is_the_same_whatever_order_it_ran_in(
    spark: Any, oldest_first: pathlib.Path, newest_first: pathlib.Path
) -> None:
    for ds in DATES:
        for table in TABLES:
            assertDataFrameEqual(read(spark, newest_first, table, ds), read(spark, oldest_first, table, ds))


def test_no_event_id_names_two_lines(spark: Any, oldest_first: pathlib.Path) -> None:
    lines: dict[str, set[tuple[str, int, str]]] = {}
    for ds in DATES:
        for r in (
            read(spark, oldest_first, "events", ds).select("event_id", "source_file", "line_no", "event_type").collect()
        ):
            lines.setdefault(r[0], set()).add((r[1], r[2], r[3]))
    assert [i for i, seen in lines.items() if len(seen) > 1] == []


def test_each_dead_letter_is_compensated_once(tmp_path: pathlib.Path, spark: Any, oldest_first: pathlib.Path) -> None:
    from rocketmq_retry.compensation import run as compensation_run
    from rocketmq_retry.compensation.ledger import Ledger

    wh = tmp_path / "warehouse"
    shutil.copytree(oldest_first, wh)
    config = ["--config", str(ESTATE / "rocketmq-retry.yaml"), "--warehouse", str(wh)]
    for ds in DATES:
        assert compensation_run.main(["--date", ds, *config]) == 0
    # a re-run of an earlier date after the later ones: its partitions are replaced, the ledger keeps its rows
    assert reconstruct.main(["--date", DATES[1], *config]) == 0
    assert compensation_run.main(["--date", DATES[1], *config]) == 0
    with Ledger.open(f"sqlite:///{wh}/compensation.db") as ledger:
        rows = ledger.rows()
    true = {(r["consumer_group"], r["msg_id"]) for ds in DATES for r in truth("dead_letters_by_date.csv", ds)}
    assert sorted((r.consumer_group, r.msg_id) for r in rows) == sorted(true)
    assert {(r.state.value, r.attempts) for r in rows} == {("DONE", 1)}
