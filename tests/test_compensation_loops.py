"""Re-drive loops: a business key compensated on earlier dates that dead-letters again is counted, and held for
review once the count reaches compensation.max_loops (docs/compensation.md "Re-drive loops")."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import pytest

from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.compensation.ledger import Ledger
from rocketmq_retry.compensation.model import Registration, State
from test_compensation_support import dead_letter_rows, effects, pg_schema_url, write_config, write_partition

D1, D2, D3 = "2026-11-20", "2026-11-21", "2026-11-22"
RECORD = {"type": "python", "callable": "test_compensation_support:record_effect"}


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/ledger.db"
    else:
        with pg_schema_url() as url:
            yield url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = rocketmq_retry(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def listed(capsys: pytest.CaptureFixture[str], wh: pathlib.Path, config: pathlib.Path) -> dict[tuple[str, str], dict]:
    _, out = run(capsys, "compensation", "list", "--warehouse", str(wh), "--config", str(config), "--format", "json")
    rows = [json.loads(line) for line in out.splitlines()]
    return {(r["dlq_date"], r["business_key"]): r for r in rows}


def test_a_key_compensated_then_dead_lettered_again_is_a_loop_and_held_at_max_loops(
    ledger_url: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    wh = tmp_path / "wh"
    # the same two orders dead-letter on three dates, each time as a new message (a new msg_id)
    for date in (D1, D2, D3):
        write_partition(wh, date, dead_letter_rows(2, date))
    config = write_config(
        tmp_path / "c.yaml",
        {"ledger_url": ledger_url, "routes": [{"handler": "record"}], "handlers": {"record": RECORD}},
    )
    args = ("--warehouse", str(wh), "--config", str(config))
    assert run(capsys, "compensate", "--date", D1, *args)[0] == 0
    code, out = run(capsys, "compensate", "--date", D2, *args)
    assert code == 0 and "executed 2 (done 2" in out
    rows = listed(capsys, wh, config)
    assert {k: (r["state"], r["loops"]) for k, r in rows.items()} == {
        (D1, "O100000"): ("DONE", 0),
        (D1, "O100001"): ("DONE", 0),
        (D2, "O100000"): ("DONE", 1),
        (D2, "O100001"): ("DONE", 1),
    }
    # the third date: compensated on two earlier dates = compensation.max_loops (2): held, never executed
    code, out = run(capsys, "compensate", "--date", D3, *args)
    assert code == 0
    assert "executed 0 (done 0" in out and "held for review as re-drive loops 2" in out
    held = [n for n in out.splitlines() if "held for review as a re-drive loop" in n]
    assert held == [
        f"  note: order-consumer/{dead_letter_rows(2, D3)[i]['msg_id']}: business key 'O10000{i}' compensated on 2 "
        "earlier date(s); held for review as a re-drive loop (compensation.max_loops 2)"
        for i in (0, 1)
    ]
    rows = listed(capsys, wh, config)
    assert {(r["state"], r["reason"], r["loops"], r["attempts"]) for k, r in rows.items() if k[0] == D3} == {
        ("HELD_FOR_REVIEW", "redrive_loop", 2, 0)
    }
    assert sum(effects().values()) == 4  # D1 and D2 only
    # an operator who reviewed them re-drives them: compensated once, not held again
    _, out = run(capsys, "compensation", "retry", "--date", D3, "--state", "HELD_FOR_REVIEW", *args)
    assert "executed 2 (done 2" in out
    assert {(r["state"], r["reason"], r["loops"]) for k, r in listed(capsys, wh, config).items() if k[0] == D3} == {
        ("DONE", "ok", 2)
    }
    assert sum(effects().values()) == 6


def test_max_loops_one_holds_the_first_return(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    write_partition(wh, D1, dead_letter_rows(1, D1))
    write_partition(wh, D2, dead_letter_rows(1, D2))
    config = write_config(tmp_path / "c.yaml", {"max_loops": 1})
    args = ("--warehouse", str(wh), "--config", str(config))
    run(capsys, "compensate", "--date", D1, *args)
    run(capsys, "compensate", "--date", D2, *args)
    rows = listed(capsys, wh, config)
    assert {k: (r["state"], r["loops"]) for k, r in rows.items()} == {
        (D1, "O100000"): ("DONE", 0),
        (D2, "O100000"): ("HELD_FOR_REVIEW", 1),
    }


def test_only_earlier_compensated_dates_of_the_same_group_and_key_count(tmp_path: pathlib.Path) -> None:
    def reg(group: str, msg_id: str, date: str, key: str | None) -> Registration:
        return Registration(group, msg_id, date, "orders", "log-only", key)

    with Ledger.open(f"sqlite:///{tmp_path}/l.db", max_loops=2) as led:
        led.register([reg("g", "a", D1, "K"), reg("g", "b", D1, "K"), reg("h", "c", D1, "K"), reg("g", "f", D1, "F")])
        for m, group in (("a", "g"), ("b", "g"), ("c", "h")):
            claim = led.claim(group, m, worker="w")
            assert claim is not None and led.complete(claim, "ok")
        claim = led.claim("g", "f", worker="w")
        assert claim is not None and led.fail(claim, "boom", permanent=True) == State.GAVE_UP
        led.register([reg("g", "d", D1, "K"), reg("g", "e", D2, "K"), reg("g", "x", D2, "F"), reg("g", "n", D2, None)])
        got = {m: (led.get("g", m).loops, led.get("g", m).state.value) for m in "dexn"}  # type: ignore[union-attr]
    # the same date is not a loop; two DONE rows of one earlier date are one loop; another group's, a failed
    # compensation's and a missing key count nothing
    assert got == {"d": (0, "PENDING"), "e": (1, "PENDING"), "x": (0, "PENDING"), "n": (0, "PENDING")}


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "2"])
def test_max_loops_must_be_a_whole_number_of_at_least_one(tmp_path: pathlib.Path, value: object) -> None:
    from rocketmq_retry.config import load_config
    from rocketmq_retry.errors import ConfigError

    path = write_config(tmp_path / "c.yaml", {"max_loops": value})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"invalid config {path}: compensation.max_loops: {value!r} is not a whole number of at least 1: the earlier "
        "compensated dates of a business key after which its next dead letter is held for review (1 holds the first "
        "re-dead-lettering)"
    )
    assert load_config(write_config(tmp_path / "ok.yaml", {})).compensation.max_loops == 2
