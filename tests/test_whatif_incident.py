"""The what-if of a group's current incident (the groups page's), on test_whatif.py's literal two-date warehouse:
group G (remoting concurrently, maxReconsumeTimes 2, the default delay table), outage I1 from D1 23:58:00 to D2
00:03:00 (open in D1's row, ended in D2's). Five minutes: the retries come at 10 s, 40 s, 1m40, 3m40, 6m40 after
the first, so maxReconsumeTimes 5 is the smallest whose last delivery (6m40) comes after it (3m40 does not).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from rocketmq_retry import contract
from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.explore import open_warehouse
from rocketmq_retry.whatif import IncidentWhatIf, current_incidents, incident_what_ifs
from rocketmq_retry.whatif import incident as incident_module
from rocketmq_retry.whatif.propose import Proposal
from test_whatif import D1, D2, FP, at, build, commit, life

D3 = "2026-11-22"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    return build(tmp_path_factory.mktemp("whatif-incident"))


def whatifs(built: dict[str, pathlib.Path], first: str, last: str) -> dict[str, IncidentWhatIf]:
    with open_warehouse(built["warehouse"], built["config"]) as ex:
        return incident_what_ifs(ex, first, last)


def test_the_current_incident_of_each_group_is_its_newest_row_in_the_range(built: dict[str, pathlib.Path]) -> None:
    with open_warehouse(built["warehouse"], built["config"]) as ex:
        both = current_incidents(ex, D1, D3)
        first = current_incidents(ex, D1, D1)
        none = current_incidents(ex, D3, D3)
    assert sorted(both) == ["G"] and none == {}  # EMPTY and S had no incident; OTHER's failure made none
    i = both["G"]
    assert (i.incident_id, i.fingerprint, i.state, i.first_date, i.last_date) == ("I1", FP, contract.ENDED, D1, D2)
    assert (i.started_at, i.ended_at) == (at(f"{D1}T23:58:00"), at(f"{D2}T00:03:00"))
    assert i.cause_label == FP  # no failure_causes row names it: the fingerprint itself
    # D1 alone: the incident as D1 saw it, open
    assert (first["G"].state, first["G"].ended_at, first["G"].last_date) == (contract.OPEN, None, D1)


def test_the_proposal_is_replayed_over_the_incidents_dates(built: dict[str, pathlib.Path]) -> None:
    # the incident's dates and the day after its last (the look-back settles a message there), within the page's
    w = whatifs(built, D1, D3)["G"]
    assert (w.date_from, w.date_to, w.duration_ms, w.still_open, w.error) == (D1, D3, 300_000, False, None)
    assert w.proposal is not None and (w.proposal.proposed, w.proposal.outcome) == (5, "EXCEPTION")
    assert w.command == f"rocketmq-retry whatif --group G --from {D1} --to {D3} --max-reconsume-times 5"
    r = w.result
    assert r is not None and r.dates == (D1, D2)
    assert [(s.name, s.current, s.proposed) for s in r.settings] == [
        ("max_reconsume_times", 2, 5),
        ("effective_max_reconsume_times", 2, 5),
    ]
    # A: 23:58:00 + 6m40 = 00:04:40, its 6th delivery; B: 23:59:30 + 3m40 = 00:03:10, its 5th
    assert [(c.msg_id, c.proposed_at, c.proposed_deliveries) for c in r.rescued] == [
        ("B", at(f"{D2}T00:03:10"), 5),
        ("A", at(f"{D2}T00:04:40"), 6),
    ]
    assert (r.observed.dead_letters, r.current.dead_letters, r.proposed.dead_letters) == (3, 3, 1)  # P stays poison
    # deliveries A 6, B 5, P 6, U 2 = 19 against 3 + 3 + 3 + 2 = 11; one schedule write per retry: 15 against 7
    assert (r.proposed.deliveries, w.extra_deliveries) == (19, 8)
    assert (r.proposed.schedule_topic_writes, w.extra_schedule_topic_writes) == (15, 8)
    assert r.lost == () and r.current_mismatches == 0


def test_the_page_answer_is_the_commands_answer(
    built: dict[str, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    w = whatifs(built, D1, D2)["G"]
    argv = w.command.split()[1:]
    code = rocketmq_retry([*argv, "--warehouse", str(built["warehouse"]), "--config", str(built["config"]),
                           "--format", "json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert w.result is not None and json.loads(out) == w.result.as_dict()
    page: dict[str, Any] = json.loads(json.dumps(w.as_dict()))  # JSON-ready, as the page's template takes it
    assert page["proposal"]["knob"]["option"] == "--max-reconsume-times" and page["extra_deliveries"] == 8
    assert page["incident"]["ended_at"] == f"{D2}T00:03:00Z"


def test_the_range_is_capped_to_the_pages_dates(built: dict[str, pathlib.Path]) -> None:
    # the page ends on D1: the incident is still open there, and lasted 100 s to the end of observation (D1's
    # latest lifecycle event, B at 23:59:40); the retries at 10 s, 40 s, 1m40 reach it with maxReconsumeTimes 3
    w = whatifs(built, D1, D1)["G"]
    assert (w.date_from, w.date_to, w.duration_ms, w.still_open) == (D1, D1, 100_000, True)
    assert w.proposal is not None and w.proposal.proposed == 3
    assert w.command.endswith(f"--from {D1} --to {D1} --max-reconsume-times 3")
    assert w.result is not None and w.result.dates == (D1,)
    assert any("still open at the end of observation" in a for a in w.result.assumptions)


def test_a_missing_partition_is_a_sentence(tmp_path: pathlib.Path) -> None:
    wh = tmp_path / "wh"
    incident = {"consumer_group": "G", "incident_id": "I9", "fingerprint": FP, "started_at": at(f"{D1}T01:00:00"),
                "state": contract.OPEN}  # fmt: skip
    life_a = life("A", contract.IN_RETRY, f"{D1}T01:00:00", f"{D1}T01:00:00", 1, contract.OUTAGE)
    commit(wh, D1, {"lifecycles": [life_a], "incidents": [incident]})  # written before the failures table
    config = tmp_path / "c.yaml"
    config.write_text("groups:\n  G: {max_reconsume_times: 2}\n")
    w = whatifs({"warehouse": wh, "config": config}, D1, D1)["G"]
    assert (w.result, w.proposal) == (None, None)
    assert w.error is not None and w.error.startswith(f"The failures of {D1}..{D1} could not be read: ")
    assert f"no failures partition for {D1}" in w.error and "run reconstruct for them again" in w.error
    assert w.command == f"rocketmq-retry whatif --group G --from {D1} --to {D1}"


def test_a_refused_policy_is_a_sentence(built: dict[str, pathlib.Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # The derivation proposes only values RocketMQ takes; a proposal the config refuses (a maximum below -1) drives
    # the path a refused policy takes: the config's own reason, no result.
    real = incident_module.propose

    def below(*args: Any) -> Proposal:
        import dataclasses

        return dataclasses.replace(real(*args), proposed=-2)

    monkeypatch.setattr(incident_module, "propose", below)
    w = whatifs(built, D1, D2)["G"]
    assert w.result is None and w.proposal is not None
    assert w.error is not None and w.error.startswith("the new policy is refused: ")
    assert "max_reconsume_times: Input should be greater than or equal to -1" in w.error
