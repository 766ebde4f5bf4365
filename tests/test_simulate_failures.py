"""The simulator's planned failures (examples/failures): outages, poison messages and a throttling listener. The
truth is consistent with the deliveries it records, and the ingest reads each failure's exception as the truth
says: the expected exception and root cause classes, one fingerprint per outage."""

from __future__ import annotations

import csv
import datetime as dt
import pathlib
import shlex
from collections import Counter, defaultdict
from typing import Any

import pytest

from rocketmq_retry.contract import FAILURE_KINDS, FLOW_CONTROL, OUTAGE, POISON, SAFE, partition_dir
from rocketmq_retry.simulate.cli import main as simulate
from rocketmq_retry.simulate.exceptions import Throwable, print_stack_trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "failures"
DAY = "2026-11-20"


def _command() -> list[str]:
    readme = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if ln.startswith("rocketmq-retry simulate "))
    return shlex.split(line)[2:]


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("failures") / "landing"
    args = [str(ROOT / a) if a.startswith("examples/") else a for a in _command()]
    args[args.index("--out") + 1] = str(out)
    assert simulate([*args, "--quiet"]) == 0
    return out


def _truth(landing: pathlib.Path, name: str) -> list[dict[str, str]]:
    with (landing / "_truth" / name).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _deliveries(row: dict[str, str]) -> list[tuple[int, str, str]]:
    """(start ms, outcome, kind) of each delivery."""
    times = [_ms(t) for t in row["delivery_times"].split(";")]
    return list(zip(times, row["delivery_outcomes"].split(";"), row["delivery_kinds"].split(";"), strict=True))


def test_print_stack_trace_folds_the_frames_a_cause_shares_with_its_enclosing_trace() -> None:
    root = Throwable(
        "java.net.ConnectException", "Connection refused", ("a.B.c(B.java:1)", "x.Y.z(Y.java:2)", "m.N.o(N.java:3)")
    )
    top = Throwable("com.acme.Wrapped", None, ("q.R.s(R.java:9)", "x.Y.z(Y.java:2)", "m.N.o(N.java:3)"), root)
    assert print_stack_trace(top) == [
        "com.acme.Wrapped",
        "\tat q.R.s(R.java:9)",
        "\tat x.Y.z(Y.java:2)",
        "\tat m.N.o(N.java:3)",
        "Caused by: java.net.ConnectException: Connection refused",
        "\tat a.B.c(B.java:1)",
        "\t... 2 more",
    ]


def test_outage_messages_fail_only_inside_their_window(landing: pathlib.Path) -> None:
    incidents = {r["incident_id"]: r for r in _truth(landing, "incidents.csv")}
    rows = [r for r in _truth(landing, "lifecycles.csv") if r["true_kind"] == OUTAGE]
    per_incident: Counter[str] = Counter()
    for r in rows:
        inc = incidents[r["incident_id"]]
        assert (int(r["incident_start_ms"]), int(r["incident_end_ms"])) == (int(inc["start_ms"]), int(inc["end_ms"]))
        assert r["consumer_group"] == inc["consumer_group"] and r["true_cause"] == inc["cause"]
        for at, outcome, kind in _deliveries(r):
            inside = int(inc["start_ms"]) <= at < int(inc["end_ms"])
            assert (kind == OUTAGE) == inside, (r["msg_id"], at, kind)
            assert (outcome == "SUCCESS") == (kind == "")
        per_incident[r["incident_id"]] += 1
    assert set(per_incident) == set(incidents)
    for inc_id, inc in incidents.items():
        assert int(inc["messages"]) >= per_incident[inc_id] >= 5  # mixed lifecycles count in the window too
        assert inc["root_cause_class"] in ("java.net.ConnectException", "java.net.SocketTimeoutException")
    # dead letters of an outage: every retry of a small-max group falls inside a long window
    assert {r["consumer_group"] for r in rows if r["final_state"] == "DEAD_LETTERED"} >= {
        "GID_invoice_mailer", "GID_inventory_reserve", "GID_risk_scoring",
    }  # fmt: skip
    # and outages that end before the retries do: the messages are consumed after the window
    assert any(r["final_state"] == "CONSUMED" for r in rows if r["consumer_group"] == "GID_order_fulfilment")
    assert sum(int(inc["dead_letters"]) for inc in incidents.values()) == sum(
        1 for r in _truth(landing, "lifecycles.csv") if r["incident_id"] and r["final_state"] == "DEAD_LETTERED"
    )


def test_poison_messages_fail_on_every_delivery_while_their_group_succeeds(landing: pathlib.Path) -> None:
    rows = _truth(landing, "lifecycles.csv")
    poison = [r for r in rows if r["true_kind"] == POISON]
    assert len(poison) >= 20
    assert len({r["consumer_group"] for r in poison}) >= 4
    for r in poison:
        assert {kind for _, _, kind in _deliveries(r)} == {POISON}
        assert r["final_state"] == "DEAD_LETTERED"
        assert int(r["deliveries"]) >= int(r["max_reconsume_times"]) + 1  # + local resubmits after a send-back fault
    for group in {r["consumer_group"] for r in poison}:
        others = [r for r in rows if r["consumer_group"] == group and r["true_kind"] != POISON]
        assert sum(r["final_state"] == "CONSUMED" for r in others) / len(others) > 0.9
    assert {r["true_kind"] for r in rows} <= {"", *FAILURE_KINDS}


def test_the_throttling_group_consumes_each_refused_message_on_its_first_retry(landing: pathlib.Path) -> None:
    rows = [r for r in _truth(landing, "lifecycles.csv") if r["consumer_group"] == "GID_points_sync"]
    refused = [r for r in rows if r["true_kind"] == FLOW_CONTROL]
    firsts = [_deliveries(r)[0][0] for r in refused]
    assert max(firsts) - min(firsts) >= 15 * 60_000  # a sustained period
    for r in refused:
        (_, o1, k1), (_, o2, k2) = _deliveries(r)  # exactly two deliveries
        assert (o1, k1, o2, k2) == ("RECONSUME_LATER", FLOW_CONTROL, "SUCCESS", "")
        assert r["final_state"] == "CONSUMED" and r["root_cause_class"] == ""  # no exception: RECONSUME_LATER
    in_window = [r for r in rows if min(firsts) <= _deliveries(r)[0][0] <= max(firsts)]
    assert 0.35 <= len(refused) / len(in_window) <= 0.65
    assert all(r["true_kind"] in ("", FLOW_CONTROL) for r in rows)


@pytest.fixture(scope="module")
def warehouse(spark: Any, landing: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The day ingested and reconstructed, once for the module."""
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.reconstruct import job as reconstruct

    wh = tmp_path_factory.mktemp("failures-wh") / "wh"
    config = str(EXAMPLE / "rocketmq-retry.yaml")
    assert ingest.main(["--date", DAY, "--landing", str(landing), "--warehouse", str(wh), "--config", config]) == 0
    assert reconstruct.main(["--date", DAY, "--warehouse", str(wh), "--config", config]) == 0
    return wh


@pytest.mark.spark
def test_ingest_reads_each_planned_failure_as_the_truth_says(
    spark: Any, landing: pathlib.Path, warehouse: pathlib.Path
) -> None:
    wh = warehouse
    events = spark.read.parquet(str(partition_dir(wh, "events", DAY)))
    failed = events.filter("exception_class IS NOT NULL").select(
        "source", "msg_id", "topic", "event_time", "exception_class", "root_cause_class", "fingerprint", "app_frame"
    )
    truth = {(r["topic"], r["msg_id"]): r for r in _truth(landing, "lifecycles.csv")}
    by_incident: defaultdict[str, set[str | None]] = defaultdict(set)
    by_poison: defaultdict[str, set[str | None]] = defaultdict(set)
    checked: Counter[str] = Counter()
    for e in failed.collect():
        # the Spring and gRPC failure lines name no topic; every topic here has one group
        row = truth.get((e["topic"], e["msg_id"])) or next(
            (r for (_t, m), r in truth.items() if m == e["msg_id"]), None
        )
        assert row is not None, e["msg_id"]
        if row["true_kind"] not in (OUTAGE, POISON):
            continue
        assert e["exception_class"] == row["exception_class"], (e["msg_id"], e["exception_class"])
        if e["root_cause_class"] is not None:  # null only for a trace the end of its file cut
            assert e["root_cause_class"] == row["root_cause_class"]
        (by_incident[row["incident_id"]] if row["true_kind"] == OUTAGE else by_poison[row["consumer_group"]]).add(
            e["fingerprint"]
        )
        checked[f"{e['source']} {row['true_kind']}"] += 1
    # every family that prints exceptions showed both kinds
    assert {k for k, n in checked.items() if n} >= {
        "spring-listener outage", "spring-listener poison", "rocketmq-client-4x outage", "rocketmq-client-4x poison",
        "rocketmq-grpc-client outage", "rocketmq-grpc-client poison", "rocketmq-client-5x poison",
    }, checked  # fmt: skip
    # one cause, one fingerprint: an outage's failures share one, and so do a group's poison messages
    assert len(by_incident) == len(_truth(landing, "incidents.csv"))
    for key, prints in [*by_incident.items(), *by_poison.items()]:
        assert len(prints - {None}) == 1, (key, prints)
    # every line parses, MySQL's second paragraph (after the blank line in its message) included
    quarantined = spark.read.parquet(str(partition_dir(wh, "quarantine", DAY))).collect()
    assert quarantined == []


def _scores(pairs: list[tuple[str, str]], kind: str) -> tuple[float, float]:
    """(precision, recall) of ``kind`` over (true kind, found kind) pairs."""
    tp = sum(1 for t, f in pairs if t == kind and f == kind)
    found = sum(1 for _, f in pairs if f == kind)
    true = sum(1 for t, _ in pairs if t == kind)
    return tp / found, tp / true


@pytest.mark.spark
def test_the_rules_tell_outages_from_poison_messages_as_the_truth_says(
    spark: Any, landing: pathlib.Path, warehouse: pathlib.Path
) -> None:
    """docs/causes.md's rules on a day with known outages, poison messages and a throttling listener: each kind's
    precision at least 0.95 for outages and poison, the incidents the truth's, and no poison dead letter said to be
    safe to re-drive."""
    truth = {(r["consumer_group"], r["msg_id"]): r["true_kind"] for r in _truth(landing, "lifecycles.csv")}
    found = {
        (r["consumer_group"], r["msg_id"]): r["failure_kind"]
        for r in spark.read.parquet(str(partition_dir(warehouse, "lifecycles", DAY))).collect()
    }
    assert set(found) == set(truth)
    pairs = [(truth[k] or "", found[k] or "") for k in truth]
    scores = {kind: _scores(pairs, kind) for kind in (OUTAGE, POISON, FLOW_CONTROL)}
    assert scores[OUTAGE][0] >= 0.95 and scores[POISON][0] >= 0.95, scores
    assert scores[OUTAGE][1] >= 0.9 and scores[POISON][1] >= 0.9 and scores[FLOW_CONTROL][1] >= 0.5, scores
    assert all(f in (*FAILURE_KINDS, "") for _, f in pairs)
    # one incident per true outage, over the same messages
    incidents = spark.read.parquet(str(partition_dir(warehouse, "incidents", DAY))).collect()
    true_incidents = _truth(landing, "incidents.csv")
    assert sorted((i["consumer_group"], i["messages"], i["failures"]) for i in incidents) == sorted(
        (t["consumer_group"], int(t["messages"]), int(t["failures"])) for t in true_incidents
    )
    dead = spark.read.parquet(str(partition_dir(warehouse, "dead_letters", DAY))).collect()
    poison_safe = [
        d["msg_id"] for d in dead if truth[(d["consumer_group"], d["msg_id"])] == POISON and d["redrive_advice"] == SAFE
    ]
    assert poison_safe == []
    # an outage that ended leaves dead letters that are safe to re-drive
    assert any(d["redrive_advice"] == SAFE for d in dead)
