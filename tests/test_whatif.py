"""``rocketmq-retry whatif``: a literal two-date warehouse (every table in the contract's schema, committed as the
reconstruct job commits) replayed under another policy, with the engine's exact times and write counts.

Group G: remoting concurrently on the default 4.9.4 broker, maxReconsumeTimes 2 in the config, so a failing
message is delivered 3 times (0 s, +10 s, +30 s: levels 3 and 4) and dead-lettered. An outage I1 runs from D1
23:58:00 to D2 00:03:00 (its D1 row is still open, its D2 row has ended). Under maxReconsumeTimes 16 its messages
keep being retried (levels 3, 4, 5, 6, 7: +10 s, +30 s, +1 m, +2 m, +3 m) and are consumed at the first delivery
after 00:03:00; the poison message runs the whole 17-delivery schedule (4 h 45 min 40 s) into the DLQ.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rocketmq_retry import contract
from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.config import parse_config
from rocketmq_retry.engine import ConsumeOutcome, GroupPolicy, Protocol
from rocketmq_retry.engine.model import ConsumeMode
from rocketmq_retry.errors import UserError
from rocketmq_retry.warehouse.partitions import write_partitions
from rocketmq_retry.whatif import (
    PolicyChange,
    PolicyRefused,
    WhatIf,
    changed_settings,
    parse_retry_policy,
    proposed_policy,
    render,
    replay,
)
from rocketmq_retry.whatif.model import Incident, Observation, ObservedFailure, ObservedMessage
from rocketmq_retry.whatif.replay import OUTCOME_OF_CAUSE, plan_of, run_message

D1, D2 = "2026-11-20", "2026-11-21"
FP = "0123456789abcdef0123456789abcdef"  # an exception's fingerprint
_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "array<string>": pa.list_(pa.string()),
}


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def commit(warehouse: pathlib.Path, ds: str, tables: dict[str, list[dict[str, Any]]]) -> None:
    def writer(name: str, rows: list[dict[str, Any]]) -> Any:
        schema = pa.schema([(c, _TYPES[t]) for c, t in contract.SCHEMAS[name]])
        data = pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)

        def write(path: pathlib.Path) -> None:
            path.mkdir(parents=True, exist_ok=True)
            pq.write_table(data, path / "part-00000.parquet")

        return write

    write_partitions(warehouse, ds, {n: writer(n, rows) for n, rows in tables.items()}, job="reconstruct")


def life(msg_id: str, state: str, first: str, last: str, deliveries: int, kind: str, **kw: Any) -> dict[str, Any]:
    return {
        "consumer_group": "G", "msg_id": msg_id, "original_topic": "T", "first_seen": at(first), "last_seen": at(last),
        "deliveries": deliveries, "final_state": state, "failure_kind": kind, **kw,
    }  # fmt: skip


def fail(
    msg_id: str, r: int, when: str, cause: str = FP, kind: str = contract.UNKNOWN_KIND, **kw: Any
) -> dict[str, Any]:
    return {"consumer_group": "G", "msg_id": msg_id, "reconsume_times": r, "failed_at": at(when), "cause": cause,
            "failure_kind": kind, **kw}  # fmt: skip


OUT = {"failure_kind": contract.OUTAGE, "incident_id": "I1"}


def build(base: pathlib.Path) -> dict[str, pathlib.Path]:
    wh, config = base / "wh", base / "c.yaml"
    config.write_text(
        "timezone: UTC\n"
        "groups:\n  G: {max_reconsume_times: 2}\n  EMPTY: {}\n"
        "  S: {protocol: grpc, consume_mode: simple, broker: five}\n"
        "brokers:\n  five: {version: '5.3.0'}\n"
    )
    incident = {"consumer_group": "G", "incident_id": "I1", "fingerprint": FP, "started_at": at(f"{D1}T23:58:00")}
    commit(
        wh,
        D1,
        {
            "lifecycles": [
                life(
                    "A",
                    contract.DEAD_LETTERED,
                    f"{D1}T23:58:00",
                    f"{D1}T23:58:40",
                    3,
                    contract.OUTAGE,
                    incident_id="I1",
                ),
                # B's retries cross midnight: D1 sees it in retry, D2 settles it
                life("B", contract.IN_RETRY, f"{D1}T23:59:30", f"{D1}T23:59:40", 2, contract.OUTAGE, incident_id="I1"),
                life("OK", contract.CONSUMED, f"{D1}T09:00:00", f"{D1}T09:00:00", 1, None),
            ],
            "failures": [
                *(fail("A", r, f"{D1}T23:58:{s}", **OUT) for r, s in ((0, "00"), (1, "10"), (2, "40"))),
                fail("B", 0, f"{D1}T23:59:30", **OUT),
                fail("B", 1, f"{D1}T23:59:40", **OUT),
                {**fail("A", 0, f"{D1}T23:58:00"), "consumer_group": "OTHER"},
            ],
            "dead_letters": [{"consumer_group": "G", "msg_id": "A", "dlq_at": at(f"{D1}T23:58:40")}],
            "incidents": [{**incident, "last_failure_at": at(f"{D1}T23:59:40"), "state": "open"}],
        },
    )
    commit(
        wh,
        D2,
        {
            "lifecycles": [
                life(
                    "B",
                    contract.DEAD_LETTERED,
                    f"{D1}T23:59:30",
                    f"{D2}T00:00:10",
                    3,
                    contract.OUTAGE,
                    incident_id="I1",
                ),
                life("P", contract.DEAD_LETTERED, f"{D2}T11:00:00", f"{D2}T11:00:40", 3, contract.POISON),
                life("U", contract.CONSUMED, f"{D2}T12:00:00", f"{D2}T12:00:10", 2, contract.UNKNOWN_KIND),
                life("X", contract.IN_RETRY, f"{D2}T13:00:00", f"{D2}T13:00:00", 1, contract.UNKNOWN_KIND),
            ],
            "failures": [
                fail("B", 2, f"{D2}T00:00:10", **OUT),
                *(fail("P", r, f"{D2}T11:00:{s}", kind=contract.POISON) for r, s in ((0, "00"), (1, "10"), (2, "40"))),
                fail("U", 0, f"{D2}T12:00:00", cause=contract.CauseCode.RETURNED_NULL),
                fail("X", 0, f"{D2}T13:00:00"),
            ],
            "dead_letters": [
                {"consumer_group": "G", "msg_id": "B", "dlq_at": at(f"{D2}T00:00:10")},
                {"consumer_group": "G", "msg_id": "P", "dlq_at": at(f"{D2}T11:00:40")},
            ],
            "incidents": [
                {
                    **incident,
                    "last_failure_at": at(f"{D2}T00:00:10"),
                    "ended_at": at(f"{D2}T00:03:00"),
                    "state": "ended",
                }
            ],
        },
    )
    return {"warehouse": wh, "config": config}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    return build(tmp_path_factory.mktemp("whatif"))


def whatif(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path], *argv: str) -> tuple[int, str, str]:
    where = ["--warehouse", str(built["warehouse"]), "--config", str(built["config"])]
    code = rocketmq_retry(["whatif", *argv, *where])
    out, err = capsys.readouterr()
    return code, out, err


def json_of(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path], *argv: str) -> dict[str, Any]:
    code, out, err = whatif(capsys, built, "--group", "G", "--from", D1, "--to", D2, "--format", "json", *argv)
    assert (code, err) == (0, "")
    result: dict[str, Any] = json.loads(out)
    return result


def test_the_outage_dead_letters_are_consumed_under_a_longer_schedule(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    w = json_of(capsys, built, "--max-reconsume-times", "16")
    assert (w["failed_messages"], w["replayed"]) == (5, 4)
    assert w["by_kind"] == {"outage": 2, "poison": 1, "unknown": 1}
    assert w["not_replayed"] == {"unsettled": 1}  # X: in retry, kind unknown
    assert w["dates"] == [D1, D2]
    assert [(s["name"], s["current"], s["proposed"]) for s in w["settings"]] == [
        ("max_reconsume_times", 2, 16),
        ("effective_max_reconsume_times", 2, 16),
    ]
    rescued = {c["msg_id"]: c for c in w["rescued"]}
    assert sorted(rescued) == ["A", "B"]
    # A: 23:58:00, :10, :40, 23:59:40, 00:01:40 fail; 00:04:40 is after the outage's end (00:03:00)
    assert rescued["A"]["proposed_at"] == f"{D2}T00:04:40Z" and rescued["A"]["proposed_deliveries"] == 6
    assert rescued["A"]["to_end_ms"] == 400_000 and rescued["A"]["observed_at"] == f"{D1}T23:58:40Z"
    # B: 23:59:30, :40, 00:00:10, 00:01:10 fail; 00:03:10 succeeds
    assert rescued["B"]["proposed_at"] == f"{D2}T00:03:10Z" and rescued["B"]["proposed_deliveries"] == 5
    assert w["lost"] == [] and w["current_mismatches"] == 0


def test_the_totals_and_write_counts(capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]) -> None:
    w = json_of(capsys, built, "--max-reconsume-times", "16")
    observed, current, proposed = w["observed"], w["current"], w["proposed"]
    assert (observed["dead_letters"], observed["consumed"], observed["deliveries"]) == (3, 1, 11)
    assert observed["schedule_topic_writes"] is None and observed["broker_writes"] is None
    # current (max 2): A, B, P each 3 deliveries, 2 scheduled retries and a DLQ copy; U one scheduled retry
    assert {k: current[k] for k in ("dead_letters", "consumed", "deliveries")} == {
        "dead_letters": 3, "consumed": 1, "deliveries": 11,
    }  # fmt: skip
    assert (current["schedule_topic_writes"], current["retry_topic_writes"], current["dlq_writes"]) == (7, 7, 3)
    assert current["broker_writes"] == 17
    assert (current["longest_to_consumption_ms"], current["longest_msg_id"]) == (10_000, "U")
    # new (max 16): A 5 retries, B 4, P 16 then the DLQ, U 1
    assert {k: proposed[k] for k in ("dead_letters", "consumed", "deliveries")} == {
        "dead_letters": 1, "consumed": 3, "deliveries": 30,
    }  # fmt: skip
    assert (proposed["schedule_topic_writes"], proposed["retry_topic_writes"], proposed["dlq_writes"]) == (26, 26, 1)
    assert proposed["broker_writes"] == 53
    assert (proposed["longest_to_consumption_ms"], proposed["longest_msg_id"]) == (400_000, "A")


def test_a_poison_message_dead_letters_under_every_policy(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    for argv in (["--max-reconsume-times", "16"], ["--max-reconsume-times", "0"], ["--delay-levels", "1s 1s 1s 2h"]):
        w = json_of(capsys, built, *argv)
        assert "P" not in {c["msg_id"] for c in w["rescued"]}, argv
        assert w["proposed"]["dead_letters"] >= 1, argv
    # maxReconsumeTimes 0: every failing message goes to the DLQ at its first failure; U (consumed) is lost
    w = json_of(capsys, built, "--max-reconsume-times", "0")
    assert (w["proposed"]["dead_letters"], w["proposed"]["deliveries"], w["proposed"]["dlq_writes"]) == (4, 4, 4)
    assert [(c["msg_id"], c["proposed_state"], c["proposed_at"]) for c in w["lost"]] == [
        ("U", contract.DEAD_LETTERED, f"{D2}T12:00:00Z")
    ]


def test_a_longer_second_retry_alone_outlasts_the_outage_with_no_extra_write(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    # levels 3 and 4 of "1s 1s 1s 2h" are 1 s and 2 h: the third delivery comes 2 h 1 s after the first, after the
    # outage's end, with the same maxReconsumeTimes 2 and the same number of writes
    w = json_of(capsys, built, "--delay-levels", "1s 1s 1s 2h")
    assert [(c["msg_id"], c["proposed_at"], c["proposed_deliveries"]) for c in w["rescued"]] == [
        ("A", f"{D2}T01:58:01Z", 3),
        ("B", f"{D2}T01:59:31Z", 3),
    ]
    assert (w["proposed"]["dead_letters"], w["proposed"]["schedule_topic_writes"]) == (1, 7)
    assert w["proposed"]["schedule_topic_writes"] == w["current"]["schedule_topic_writes"]
    assert (w["proposed"]["longest_to_consumption_ms"], w["proposed"]["longest_msg_id"]) == (7_201_000, "B")
    setting = w["settings"][0]
    assert (setting["name"], setting["proposed"]) == ("message_delay_level", "1s 1s 1s 2h")
    assert setting["note"] == (
        "a setting of broker 'default': every group on it would get this table; a level above 4 is stored at 4 (§3.2)"
    )


def test_the_text_says_what_changed_and_what_it_assumed(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    code, out, err = whatif(capsys, built, "--group", "G", "--from", D1, "--to", D2, "--max-reconsume-times", "16")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"what if: consumer group G, {D1}..{D2} (2 reconstructed date(s): {D1}, {D2})"
    assert "failed messages: 5, replayed 4 (outage 2, poison 1, unknown 1)" in lines
    table = {line.split("  ")[1].strip(): line.split() for line in lines if line.startswith("  ") and "  " in line[2:]}
    assert table["dead letters"][-4:] == ["3", "3", "1", "-2"]
    assert table["SCHEDULE_TOPIC_XXXX writes"][-4:] == ["-", "7", "26", "+19"]
    assert table["broker writes"][-4:] == ["-", "17", "53", "+36"]
    assert any(line.split()[:3] == ["A", "outage", f"{D1}"] and "6m40s" in line for line in lines)
    assert "dead letters consumed under the new policy (2):" in lines
    assert "assumptions:" in lines
    assert any("keeps failing" in line for line in lines)


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--invisible-duration", "5s"], "invisible_duration_ms 5000 is outside the proxy's bounds"),
        (["--delay-levels", "1s 5x"], "unknown unit 'x'"),
        (["--max-reconsume-times", "-2"], "max_reconsume_times: Input should be greater than or equal to -1"),
        (["--pop-invisible-time", "1s"], "popInvisibleTime Out of range"),
    ],
)
def test_a_policy_the_broker_or_client_refuses_is_refused_with_its_reason(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path], argv: list[str], reason: str
) -> None:
    code, out, err = whatif(capsys, built, "--group", "G", "--from", D1, "--to", D2, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("rocketmq-retry whatif: the new policy is refused: ") and reason in err, err


def test_no_failures_in_range_is_said_plainly(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    code, out, err = whatif(capsys, built, "--group", "EMPTY", "--from", D1, "--to", D2)
    assert (code, err) == (0, "")
    assert f"No failures of EMPTY in {D1}..{D2}: there is nothing to replay." in out.splitlines()


def test_unknown_group_and_missing_partitions_name_what_is_missing(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    code, out, err = whatif(capsys, built, "--group", "NOPE", "--from", D1, "--to", D2)
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"rocketmq-retry whatif: consumer group 'NOPE' is not in the config and has no lifecycle in {D1}..{D2} "
        "(groups there: G)"
    )
    code, _, err = whatif(capsys, built, "--group", "G", "--from", "2026-12-01", "--to", "2026-12-02")
    assert code == 2
    assert "no reconstructed partition between 2026-12-01 and 2026-12-02" in err
    assert f"reconstructed dates there: {D1}, {D2}" in err


def test_a_date_without_the_failures_table_is_named(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    commit(wh, D1, {"lifecycles": [life("A", contract.CONSUMED, f"{D1}T01:00:00", f"{D1}T01:00:00", 1, None)]})
    code = rocketmq_retry(["whatif", "--group", "G", "--from", D1, "--to", D1, "--warehouse", str(wh)])
    _, err = capsys.readouterr()
    assert code == 2 and f"no failures partition for {D1}" in err and "run reconstruct for them again" in err


def test_each_cause_code_tells_the_engine_its_outcome() -> None:
    assert OUTCOME_OF_CAUSE == {
        "RETURNED_NULL": ConsumeOutcome.RETURN_NULL,
        "RECONSUME_LATER": ConsumeOutcome.RECONSUME_LATER,
        "CONSUME_TIMEOUT": ConsumeOutcome.TIMEOUT,
        "INVISIBLE_TIME_EXPIRED": ConsumeOutcome.RECONSUME_LATER,
        "UNKNOWN": ConsumeOutcome.RECONSUME_LATER,
    }


# --- the pure replay ------------------------------------------------------------------------------------------------


def _observation(messages: list[ObservedMessage], incidents: dict[str, Incident], end: str) -> Observation:
    return Observation("S", D1, D1, (D1,), at(end), tuple(messages), incidents, True)


def test_an_open_incident_fails_until_the_end_of_observation_and_says_so() -> None:
    """A gRPC SimpleConsumer group: each failed delivery comes back after invisibleDuration (15 s configured),
    retryMaxTimes 16. Widening the invisible time to 1 min carries the message past the end of observation."""
    config = parse_config({"brokers": {"five": {"version": "5.3.0"}},
                           "groups": {"S": {"protocol": "grpc", "consume_mode": "simple", "broker": "five",
                                            "retry_max_times": 2}}})  # fmt: skip
    current = config.group_policy("S")
    proposed = proposed_policy(config, "S", PolicyChange(invisible_duration_ms=60_000))
    failures = tuple(ObservedFailure(r, at(f"{D1}T10:00:{15 * r:02d}"), "INVISIBLE_TIME_EXPIRED") for r in range(3))
    message = ObservedMessage("M", "T", at(f"{D1}T10:00:00"), at(f"{D1}T10:00:30"), 3, contract.DEAD_LETTERED,
                              contract.OUTAGE, "I9", at(f"{D1}T10:00:45"), failures)  # fmt: skip
    observation = _observation([message], {"I9": Incident("I9", at(f"{D1}T10:00:00"), None)}, f"{D1}T10:01:30")
    w = replay(observation, current, proposed)
    assert isinstance(w, WhatIf)
    # current: 10:00:00, :15, :30 fail, the third revive (reconsumeTimes 3 >= maxAttempts 3) is TO_DLQ at 10:00:45
    assert (w.current.dead_letters, w.current.deliveries, w.current.dlq_writes, w.current.retry_topic_writes) == (
        1, 3, 1, 2,
    )  # fmt: skip
    assert w.current.schedule_topic_writes == 0  # a revive never passes through SCHEDULE_TOPIC_XXXX
    # new: 10:00:00, 10:01:00 fail (before 10:01:30), 10:02:00 succeeds
    [rescued] = w.rescued
    assert (rescued.proposed_at, rescued.proposed_deliveries) == (at(f"{D1}T10:02:00"), 3)
    assert any("still open at the end of observation (2026-11-20T10:01:30Z)" in a for a in w.assumptions)
    assert "still open at the end of observation" in render(w)


def test_a_grpc_max_that_the_consumer_does_not_read_is_noted() -> None:
    config = parse_config({"brokers": {"five": {"version": "5.3.0"}},
                           "groups": {"S": {"protocol": "grpc", "broker": "five"}}})  # fmt: skip
    proposed = proposed_policy(config, "S", PolicyChange(max_reconsume_times=3))
    assert isinstance(proposed, GroupPolicy) and proposed.protocol == Protocol.GRPC
    assert proposed.consume_mode == ConsumeMode.CONCURRENTLY
    settings = changed_settings(config.group_policy("S"), proposed, "five")
    assert [s.name for s in settings] == ["max_reconsume_times", "effective_max_reconsume_times"]
    assert settings[1].current == settings[1].proposed == 16 and "retryMaxTimes" in settings[1].note
    with pytest.raises(PolicyRefused, match="retry_policy"):
        proposed_policy(config, "S", PolicyChange(retry_policy={"type": "exponential", "initial": -1}))


def test_a_consume_timeout_is_sent_back_at_level_3_every_time() -> None:
    """ProcessQueue#cleanExpiredMsg sends a timed-out message back at level 3 (10 s) whatever its reconsume times
    (§1.6), so a poison message that times out reaches the DLQ after 16 × 10 s, where one that throws takes the
    whole 4 h 45 min 40 s schedule: the failure's cause reaches the engine."""
    policy = parse_config({"timezone": "UTC"}).group_policy("G")
    ends = {}
    for name, cause in (("timeout", contract.CauseCode.CONSUME_TIMEOUT), ("exception", FP)):
        message = ObservedMessage(name, "T", at(f"{D1}T10:00:00"), None, 17, contract.DEAD_LETTERED, contract.POISON,
                                  None, None, (ObservedFailure(0, at(f"{D1}T10:00:00"), cause),))  # fmt: skip
        w = replay(_observation([message], {}, f"{D1}T23:00:00"), policy, policy)
        assert (w.proposed.dead_letters, w.proposed.deliveries, w.proposed.schedule_topic_writes) == (1, 17, 16)
        plan = plan_of(message, {}, None)
        assert not isinstance(plan, str)
        ends[name] = run_message(policy, start=plan.start, fails=plan.fails, outcome=plan.outcome, topic="T").ended_at
    assert ends == {"timeout": at(f"{D1}T10:02:40"), "exception": at(f"{D1}T14:45:40")}


def test_a_grpc_push_group_outlasts_the_outage_with_an_exponential_policy() -> None:
    """gRPC PushConsumer, retryMaxTimes 2 (maxAttempts 3): the built-in customized backoff retries after 1 s and
    5 s, and the third delivery's nack is dead-lettered 10 s later; exponential from 2 min retries at +2 min and
    +4 min, after the outage (10:00 .. 10:05)."""
    config = parse_config({"brokers": {"five": {"version": "5.3.0"}},
                           "groups": {"P": {"protocol": "grpc", "broker": "five", "retry_max_times": 2}}})  # fmt: skip
    proposed = proposed_policy(config, "P", PolicyChange(retry_policy=parse_retry_policy("exponential initial=2m")))
    failures = tuple(ObservedFailure(r, at(f"{D1}T10:00:0{s}"), FP) for r, s in ((0, 0), (1, 1), (2, 6)))
    message = ObservedMessage("M", "T", at(f"{D1}T10:00:00"), at(f"{D1}T10:00:06"), 3, contract.DEAD_LETTERED,
                              contract.OUTAGE, "I", at(f"{D1}T10:00:16"), failures)  # fmt: skip
    incident = Incident("I", at(f"{D1}T10:00:00"), at(f"{D1}T10:05:00"))
    w = replay(_observation([message], {"I": incident}, f"{D1}T12:00:00"), config.group_policy("P"), proposed)
    assert (w.current.dead_letters, w.current.deliveries, w.current.retry_topic_writes, w.current.dlq_writes) == (
        1, 3, 2, 1,
    )  # fmt: skip
    assert w.current_mismatches == 0
    [rescued] = w.rescued
    assert (rescued.proposed_at, rescued.proposed_deliveries, rescued.to_end_ms) == (at(f"{D1}T10:06:00"), 3, 360_000)
    assert [s.name for s in changed_settings(config.group_policy("P"), proposed, "five")] == ["retry_policy"]


def test_a_retry_policy_that_is_not_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], built: dict[str, pathlib.Path]
) -> None:
    code, out, err = whatif(capsys, built, "--group", "G", "--from", D1, "--to", D2, "--retry-policy", "linear 5s")
    assert (code, out) == (2, "")
    assert "--retry-policy 'linear 5s': use 'customized [1s 5s 10s …]' or 'exponential" in err
    with pytest.raises(UserError, match="multiplier 'x' is not a number"):
        parse_retry_policy("exponential multiplier=x")
    assert parse_retry_policy("customized 250ms 1m") == {"type": "customized", "next": [250, 60_000]}
