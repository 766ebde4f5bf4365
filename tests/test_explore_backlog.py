"""The dead-letter backlog across dates (explore/backlog.py) over literal partitions and a real SQLite ledger."""

from __future__ import annotations

import csv
import io
import pathlib

import pytest

from explore_literal import at, commit, dead
from rocketmq_retry.compensation.ledger import Ledger, Registration
from rocketmq_retry.explore import open_warehouse
from rocketmq_retry.explore.backlog import as_of_end, backlog, backlog_csv
from rocketmq_retry.explore.model import NotFound

OLD, D20, D22, D23 = "2026-11-12", "2026-11-20", "2026-11-22", "2026-11-23"
FORMULA = "=cmd|' /C calc'!A0"


def build(base: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    wh = base / "wh"
    config = base / "c.yaml"
    config.write_text(
        "timezone: UTC\nbrokers:\n  short: {file_reserved_time_hours: 24}\ngroups:\n  G2: {broker: short}\n",
        encoding="utf-8",
    )
    commit(wh, OLD, {"dead_letters": [dead("G1", "m1", dlq_at=at("2026-11-12T10:00:00"))]})
    commit(
        wh,
        D20,
        {
            "dead_letters": [
                dead("G1", "m2", dlq_at=at("2026-11-20T12:00:00")),
                dead("G1", "m3", dlq_at=at("2026-11-20T00:00:00")),
                dead("G2", "m4", dlq_at=at("2026-11-20T06:00:00")),
            ]
        },
    )
    commit(
        wh,
        D22,
        {
            "dead_letters": [
                dead("G1", "m5", dlq_at=at("2026-11-22T23:00:00")),
                dead("G1", "m6", dlq_at=None),
                dead("G1", "m7", dlq_at=at("2026-11-22T01:00:00")),
                dead(FORMULA, "m9", dlq_at=at("2026-11-22T12:00:00")),
            ]
        },
    )
    commit(wh, D23, {"dead_letters": [dead("G1", "m8", dlq_at=at("2026-11-23T05:00:00"))]})
    with Ledger.open(f"sqlite:///{wh}/compensation.db", max_attempts=3) as led:
        led.register(
            [Registration("G1", m, d, "T1", "log-only", None) for m, d in (("m2", D20), ("m7", D22), ("m8", D23))]
        )
        done = led.claim("G1", "m7", worker="w")
        assert done is not None and led.complete(done, "ok")
        failed = led.claim("G1", "m2", worker="w")
        assert failed is not None and led.fail(failed, "HTTP 503", permanent=False, reason="http_5xx")
    return wh, config


@pytest.fixture
def built(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    return build(tmp_path)


def test_backlog_by_group_age_retention_and_concentration(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    wh, config = built
    with open_warehouse(wh, config) as ex:
        b = backlog(ex, D22)
    assert (b.as_of, b.as_of_end, b.first_date, b.dates, b.ledger_available) == (
        D22, at("2026-11-23T00:00:00"), OLD, 3, True,
    )  # fmt: skip
    got = {
        g.consumer_group: (
            g.broker, g.retention_hours, g.dead_letters, g.compensated, g.backlog, g.by_age, g.oldest_dlq_at,
            g.oldest_age_hours, g.past_retention, g.undated,
        )
        for g in b.groups
    }  # fmt: skip
    assert got == {
        # m7 DONE; m2 FAILED is still backlog; m6 has no dlq_at: aged from its day's end (0 h), counted undated;
        # m1 (254 h) and m3 (exactly 72 h) are past the default broker's 72 h
        "G1": ("default", 72, 6, 1, 5, (2, 1, 1, 1), at("2026-11-12T10:00:00"), 254, 2, 1),
        # 66 h old, 1-3 d, past the 24 h of its broker "short"
        "G2": ("short", 24, 1, 0, 1, (0, 1, 0, 0), at("2026-11-20T06:00:00"), 66, 1, 0),
        FORMULA: ("default", 72, 1, 0, 1, (1, 0, 0, 0), at("2026-11-22T12:00:00"), 12, 0, 0),
    }
    assert [g.consumer_group for g in b.groups] == ["G1", "G2", FORMULA]  # most backlog first, then the oldest
    assert (b.total_dead_letters, b.total_backlog, b.total_by_age, b.total_past_retention) == (8, 7, (3, 2, 1, 1), 3)
    assert (b.concentration, b.concentration_share) == ("G1", 5 / 7)
    assert b.oldest_dlq_at == at("2026-11-12T10:00:00")


def test_the_as_of_date_defaults_to_the_newest_committed_date(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    wh, config = built
    with open_warehouse(wh, config) as ex:
        b = backlog(ex)
        with pytest.raises(NotFound, match="no committed dead_letters partition up to 2026-11-01"):
            backlog(ex, "2026-11-01")
    assert (b.as_of, b.as_of_end, b.dates) == (D23, at("2026-11-24T00:00:00"), 4)
    g1 = next(g for g in b.groups if g.consumer_group == "G1")
    # a day later everything is a day older: m5 (25 h) and m6 (24 h, undated) leave "< 1 d"; m2 (84 h) is past 72 h
    assert (g1.dead_letters, g1.backlog, g1.by_age, g1.past_retention) == (7, 6, (1, 2, 2, 1), 3)


def test_age_is_counted_from_the_end_of_the_day_in_the_configured_zone() -> None:
    assert as_of_end(D22, "Asia/Shanghai") == at("2026-11-22T16:00:00")
    assert as_of_end(D22, "UTC") == at("2026-11-23T00:00:00")


def test_without_a_ledger_nothing_counts_as_compensated(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    wh, config = built
    (wh / "compensation.db").unlink()
    for extra in ("compensation.db-wal", "compensation.db-shm"):
        (wh / extra).unlink(missing_ok=True)
    with open_warehouse(wh, config) as ex:
        b = backlog(ex, D22)
    assert (b.ledger_available, b.total_backlog, b.total_dead_letters) == (False, 8, 8)
    assert not (wh / "compensation.db").exists()  # looking created nothing


def test_the_csv_neutralises_formulas_and_keeps_the_value_readable(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    wh, config = built
    with open_warehouse(wh, config) as ex:
        text = "".join(backlog_csv(backlog(ex, D22)))
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:5] == ["consumer_group", "broker", "dead_letters", "compensated", "backlog"]
    assert rows[1] == [
        "G1", "default", "6", "1", "5", "2", "1", "1", "1", "2026-11-12T10:00:00Z", "254", "2", "72", "1", "0.7143",
    ]  # fmt: skip
    assert rows[3][0] == "'" + FORMULA
