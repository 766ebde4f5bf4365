"""The read layer on a tiny literal warehouse (tests/explore_literal.py): exact overview, dead-letter filters,
paging and CSV, find, a two-group story, groups, and the refusals (bad parameters, links out of the warehouse,
no ledger created by looking). No Spark: the read layer never needs it."""

from __future__ import annotations

import csv
import io
import os
import pathlib
from collections.abc import Iterator

import pytest

import explore_literal as L
from rocketmq_retry.dates import DateError
from rocketmq_retry.explore import DeadLetterFilter, ExploreError, Explorer, NotFound, open_warehouse


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    return L.build(tmp_path_factory.mktemp("explore"))


@pytest.fixture(scope="module")
def ex(built: dict[str, pathlib.Path]) -> Iterator[Explorer]:
    with open_warehouse(built["warehouse"], built["config"]) as explorer:
        yield explorer


def test_dates_newest_first(ex: Explorer) -> None:
    assert ex.dates() == [L.D2, L.D1]
    assert ex.dates("events") == [L.D1]


def test_run_overview_counts(ex: Explorer, built: dict[str, pathlib.Path]) -> None:
    o = ex.run_overview(L.D1)
    assert (o.lifecycles, o.dead_letters, o.held_for_review, o.unattributed_lines) == (5, 3, 1, 4)
    assert o.final_states == {"CONSUMED": 1, "DEAD_LETTERED": 3, "IN_RETRY": 0, "DROPPED": 1, "UNKNOWN": 0}
    g = {x.consumer_group: x for x in o.groups}
    assert (g["G1"].lifecycles, g["G1"].dead_lettered, g["G1"].dead_letter_rate) == (2, 2, 1.0)
    assert (g["G2"].lifecycles, g["G2"].dead_lettered, g["G2"].dead_letters, g["G2"].held_for_review) == (3, 1, 1, 1)
    assert [(a.code, a.lifecycles, [(e.consumer_group, e.msg_id) for e in a.examples]) for a in o.anomalies] == [
        ("EARLY_DLQ", 1, [("G1", "M2")]),
        ("LATE_REDELIVERY", 2, [("G1", "M1"), ("G1", "M2")]),
    ]
    # only the minute whose difference has a cause is a gap
    assert [(r.consumer_group, r.send_back_diff, r.cause) for r in o.reconciliation_gaps] == [
        ("G1", -1, "not-collected")
    ]
    assert o.reconciliation_gaps[0].cause_text.startswith("the counter shows more than the collected sources")
    u = o.unattributed[0]
    assert (u.reason, u.candidates, u.fix, u.lines) == ("ambiguous", ["G1", "G2"], "sources[2].consumer_group", 4)
    assert u.reason_text == "several groups consume this topic in this instance"
    i = o.ingest
    assert i is not None
    assert (i.files, i.lines_read, i.events, i.ignored, i.continuation, i.quarantined) == (2, 100, 10, 80, 7, 3)
    assert i.quarantined_by_reason == {"bad-timestamp": 2, "too-long": 1}
    assert [(f.source_file, f.status, f.reason) for f in i.files_not_read] == [
        ("app1/logs/rocketmq_client.1.log.gz", "quarantined", "damaged gzip")
    ]
    v = o.validation
    assert v is not None and (v.success, v.evaluated, v.critical_failures) == (False, 30, ["lifecycles.key_unique"])
    assert v.docs_page == "runs/dt=2026-11-20.html"
    assert (pathlib.Path(v.docs_root) / v.docs_page).is_file()
    data = o.to_dict()
    assert data["reconciliation_gaps"][0]["minute"] == "2026-11-20T01:00:00Z"
    # a date reconstructed without ingest accounting or validation: those parts are None, not errors
    o2 = ex.run_overview(L.D2)
    assert (o2.lifecycles, o2.dead_letters, o2.ingest, o2.validation) == (121, 120, None, None)


def test_overview_of_a_date_never_reconstructed(ex: Explorer) -> None:
    with pytest.raises(NotFound, match=r"no lifecycles for 2026-11-22: .*lifecycles/dt=2026-11-22 does not exist"):
        ex.run_overview("2026-11-22")


def _page(ex: Explorer, **filters: str) -> list[tuple[str, str, str]]:
    page = ex.dead_letters(L.D1, L.D2, DeadLetterFilter(**filters), 1, 1000)
    assert page.total == len(page.rows)
    return [(r.consumer_group, r.msg_id, r.compensation_state) for r in page.rows]


def test_dead_letter_filters(ex: Explorer) -> None:
    assert len(_page(ex)) == 123
    assert _page(ex, group="G1") == [("G1", "M1", "DONE"), ("G1", "M2", "PENDING")]
    assert _page(ex, topic="T2") == [("G2", "M3", "NOT_COMPENSABLE")]
    assert _page(ex, tag="tagB") == [("G1", "M2", "PENDING")]
    assert _page(ex, key="BK-1") == [("G1", "M1", "DONE")]  # business key substring
    assert _page(ex, key="<script>") == [("G1", "M2", "PENDING")]  # KEYS substring
    assert _page(ex, key="100%_x") == [("G1", "M2", "PENDING")]
    assert _page(ex, key="%") == [("G1", "M2", "PENDING")]  # a literal character, not a LIKE wildcard
    assert _page(ex, attribution="thread") == [("G2", "M3", "NOT_COMPENSABLE")]
    assert _page(ex, compensation_state="done") == [("G1", "M1", "DONE")]
    assert _page(ex, compensation_state="not-compensable") == [("G2", "M3", "NOT_COMPENSABLE")]
    assert len(_page(ex, compensation_state="PENDING")) == 11  # M2 and the ten registered G3 rows
    assert len(_page(ex, compensation_state="NOT_REGISTERED")) == 110
    assert _page(ex, group="G1", compensation_state="FAILED") == []
    assert _page(ex, msg_id="M3") == [("G2", "M3", "NOT_COMPENSABLE")]


def test_dead_letter_row_fields(ex: Explorer) -> None:
    row = ex.dead_letters(L.D1, L.D1, DeadLetterFilter(msg_id="M1"), 1, 10).rows[0]
    assert (row.date, row.topic, row.tag, row.keys, row.business_key, row.reconsume_times) == (
        L.D1, "T1", "tagA", "K1 BK-1", "BK-1", 2,
    )  # fmt: skip
    assert (row.attribution, row.compensable, row.review_reason) == (["line"], True, None)
    assert (row.compensation_state, row.attempts, row.handler, row.last_error) == ("DONE", 2, "log-only", None)
    held = ex.dead_letters(L.D1, L.D1, DeadLetterFilter(msg_id="M3"), 1, 10).rows[0]
    assert (held.compensable, held.review_reason, held.attempts) == (False, "DLQ arrival not observed", 0)


def test_dead_letter_paging(ex: Explorer) -> None:
    pages = [ex.dead_letters(L.D2, L.D2, DeadLetterFilter(group="G3"), n, 50) for n in (1, 2, 3, 4)]
    assert [p.total for p in pages] == [120] * 4 and pages[0].pages == 3
    assert [len(p.rows) for p in pages] == [50, 50, 20, 0]
    ids = [r.msg_id for p in pages for r in p.rows]
    assert ids == [f"P{i:04d}" for i in range(120)]  # stable order, no row twice, none skipped
    # the ledger is looked up per page: the ten registered rows are PENDING, the others never registered
    assert [r.compensation_state for r in pages[0].rows[:11]] == ["PENDING"] * 10 + ["NOT_REGISTERED"]
    # newest date first across a range
    assert ex.dead_letters(None, None, None, 1, 1).rows[0].date == L.D2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"page": 0}, "pages start at 1"),
        ({"page_size": 5000}, "page size 5000 is not between 1 and 1000"),
        ({"filters": DeadLetterFilter(compensation_state="LOST")}, "compensation state 'LOST' is not one of"),
        ({"filters": DeadLetterFilter(attribution="guess")}, "attribution 'guess' is not one of"),
        ({"filters": DeadLetterFilter(key="x" * 600)}, "at most 512 are searched"),
    ],
)
def test_dead_letter_bad_parameters(ex: Explorer, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"date_from": L.D1, "date_to": L.D2, "filters": None, "page": 1, "page_size": 50}
    args.update(kwargs)
    with pytest.raises(ExploreError, match=message):
        ex.dead_letters(**args)  # type: ignore[arg-type]


def test_csv_quotes_hostile_keys(ex: Explorer) -> None:
    text = "".join(ex.dead_letters_csv(L.D1, L.D1, DeadLetterFilter(group="G1")))
    assert text.startswith("date,msg_id,consumer_group,topic,tag,keys,business_key,reconsume_times,dlq_at,")
    assert '"a,""b""\n<script>alert(1)</script> 100%_x"' in text
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [(r["msg_id"], r["keys"], r["compensation_state"], r["attempts"]) for r in rows] == [
        ("M1", "K1 BK-1", "DONE", "2"),
        ("M2", L.HOSTILE_KEY, "PENDING", "0"),
    ]
    assert rows[0]["dlq_at"] == "2026-11-20T01:00:12.700000Z" and rows[0]["attribution"] == "line"
    everything = list(csv.DictReader(io.StringIO("".join(ex.dead_letters_csv(None, None)), newline="")))
    assert len(everything) == 123  # every filtered row, not one page


def test_find_by_msg_id_offset_id_and_business_key(ex: Explorer) -> None:
    def found(q: str) -> list[tuple[str, str, str, str | None, str]]:
        return [(f.date, f.consumer_group, f.msg_id, f.final_state, f.matched_by) for f in ex.find(q)]

    both = [(L.D1, "G1", "M1", "DEAD_LETTERED"), (L.D1, "G2", "M1", "CONSUMED")]
    assert found("M1") == [(*k, "msg_id") for k in both]
    assert found("BK-1") == [(*k, "business_key") for k in both]
    assert found("K1") == [(*k, "keys") for k in both]
    # a copy in G1's DLQ is G1's message only; the business topic's copy is every group's
    assert found("OFF-DLQ") == [(L.D1, "G1", "M1", "DEAD_LETTERED", "offset_msg_id")]
    assert found("OFF-BIZ") == [(*k, "offset_msg_id") for k in both]
    assert found("nothing-like-it") == []
    assert ex.find("P0001", L.D1, L.D1) == []  # the range bounds the search
    with pytest.raises(ExploreError, match="nothing to search for"):
        ex.find("  ")


def test_find_by_prefix_keys_in_any_case(ex: Explorer) -> None:
    def found(q: str) -> list[tuple[str, str, str, str]]:
        return [(f.date, f.consumer_group, f.msg_id, f.matched_by) for f in ex.find(q)]

    # the start of a msg_id, in any case; newest date first, then msg_id and group
    assert found("m") == [
        (L.D2, "G1", "M9", "msg_id"),
        (L.D1, "G1", "M1", "msg_id"),
        (L.D1, "G2", "M1", "msg_id"),
        (L.D1, "G1", "M2", "msg_id"),
        (L.D1, "G2", "M3", "msg_id"),
        (L.D1, "G2", "M4", "msg_id"),
    ]
    # the start of a business key or of one of the KEYS, case-insensitively (stored as BK-1 and K1)
    assert found("bk-") == [(L.D1, "G1", "M1", "business_key"), (L.D1, "G2", "M1", "business_key"),
                            (L.D1, "G1", "M2", "business_key")]  # fmt: skip
    assert found("k1") == [(L.D1, "G1", "M1", "keys"), (L.D1, "G2", "M1", "keys")]
    # a prefix, not a substring; LIKE's wildcards are ordinary characters
    assert found("-1") == [] and found("%") == [] and found("_") == []
    # an offset msg id is only ever copied: it stays exact
    assert found("OFF-DL") == []


def test_story_one_per_group(ex: Explorer) -> None:
    stories = ex.story("M1")
    assert [(s.consumer_group, s.final_state) for s in stories] == [("G1", "DEAD_LETTERED"), ("G2", "CONSUMED")]
    s = stories[0]
    assert [(h.hop, h.from_state, h.to_state, h.inferred, h.drift_ms) for h in s.hops] == [
        (0, "PUBLISHED", "DELIVERED", False, None),
        (1, "DELIVERED", "FAILED", False, None),
        (2, "FAILED", "SENT_BACK", True, None),
        (3, "SENT_BACK", "SCHEDULED", False, 10),
        (4, "SCHEDULED", "READY", False, 1940),
        (5, "READY", "DELIVERED", False, 2440),
        (6, "DELIVERED", "FAILED", False, None),
        (7, "FAILED", "SENT_BACK", True, None),
        (8, "SENT_BACK", "DEAD_LETTERED", False, 100),
    ]
    # G2's delivery line (e7) is G2's evidence, never G1's
    assert [(e.event_id, f"{e.source_file}:{e.line_no}") for e in s.evidence] == [
        ("e1", "trace/t.trace:3"),
        ("e2", "app1/logs/rocketmq_client.log:17"),
        ("e3", "dumps/schedule.jsonl:1"),
        ("e4", "dumps/retry.jsonl:1"),
        ("e5", "trace/t.trace:9"),
        ("e6", "broker-a/logs/broker.log:42"),
    ]
    assert [e.event_id for e in stories[1].evidence] == ["e7"]
    assert s.dead_letter is not None and s.dead_letter.compensation_state == "DONE"
    assert s.compensation is not None and (s.compensation.state, s.compensation.attempts) == ("DONE", 2)
    assert s.compensation.result == "logged" and stories[1].compensation is None
    # G1 is configured with max_reconsume_times 2: the engine's path is two retries, then the DLQ
    path = s.expected_path
    assert [(x.reconsume_times, x.delay_level, x.delay_ms) for x in path.steps] == [(0, 3, 10_000), (1, 4, 30_000)]
    assert (path.final, path.final_topic, path.deliveries) == ("DEAD_LETTERED", "%DLQ%G1", 3)
    assert ("max_reconsume_times", "2") in path.settings
    assert s.to_dict()["hops"][8]["observed_at"] == "2026-11-20T01:00:12.700000Z"
    assert [x.consumer_group for x in ex.story("M1", group="G2")] == ["G2"]
    assert [x.consumer_group for x in ex.story("OFF-DLQ")] == ["G1"]  # an offset msg id of G1's DLQ copy


def test_story_not_found_names_what_was_searched(ex: Explorer) -> None:
    with pytest.raises(NotFound, match=r"msg_id 'M404' not found in lifecycles of every date under .*2 date"):
        ex.story("M404")
    with pytest.raises(NotFound, match=r"msg_id 'M1' not found for group 'G9' in lifecycles of date 2026-11-20"):
        ex.story("M1", group="G9", date_from=L.D1, date_to=L.D1)
    with pytest.raises(NotFound, match=r"no reconstructed dates \(dates 2027-01-01..…\)"):
        ex.story("M1", date_from="2027-01-01")


def test_groups_policy_levels_and_trend(ex: Explorer) -> None:
    views = {g.consumer_group: g for g in ex.groups(L.D2, days=3)}
    assert sorted(views) == ["G1", "G2", "G3", "G4"]  # seen in the window or configured
    assert (views["G4"].configured, views["G3"].configured) == (True, False)
    g3 = views["G3"]
    assert [(x.delay_level, x.retries) for x in g3.retries_by_level] == [(3, 60), (4, 60)]
    assert [(t.date, t.lifecycles, t.dead_lettered, t.dead_letter_rate) for t in g3.trend] == [
        ("2026-11-19", 0, 0, None),
        (L.D1, 0, 0, None),
        (L.D2, 120, 120, 1.0),
    ]
    assert [(t.date, t.lifecycles, t.dead_lettered) for t in views["G1"].trend][1:] == [(L.D1, 2, 2), (L.D2, 1, 0)]
    assert views["G1"].expected_path.deliveries == 3 and views["G3"].expected_path.deliveries == 17


@pytest.mark.parametrize("bad", ["../../etc", "2026-11-20/../../x", "2026-02-30", "20261120"])
def test_dates_never_become_paths(ex: Explorer, bad: str) -> None:
    with pytest.raises(DateError):
        ex.run_overview(bad)
    with pytest.raises(DateError):
        ex.dead_letters(bad, None)


def test_partition_linked_out_of_the_warehouse_is_refused(
    built: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = built["warehouse"] / "lifecycles" / "dt=2026-11-23"
    os.symlink(outside, link)
    try:
        with open_warehouse(built["warehouse"], built["config"]) as ex:
            assert "2026-11-23" not in ex.dates()
            with pytest.raises(ExploreError, match="resolves outside the warehouse"):
                ex.run_overview("2026-11-23")
    finally:
        link.unlink()


def test_no_ledger_is_read_only(built: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"compensation: {{ledger_url: 'sqlite:///{tmp_path}/absent/ledger.db'}}\n")
    with open_warehouse(built["warehouse"], config) as ex:
        page = ex.dead_letters(L.D1, L.D1, DeadLetterFilter(group="G1"), 1, 10)
        assert [r.compensation_state for r in page.rows] == ["NOT_REGISTERED", "NOT_REGISTERED"]
        assert ex.story("M1", group="G1")[0].compensation is None
    assert not (tmp_path / "absent").exists()  # looking created neither the file nor its folder


def test_causes_are_the_contracts() -> None:
    from rocketmq_retry import contract
    from rocketmq_retry.explore.warehouse import CAUSES
    from rocketmq_retry.jobs.reconstruct.reconciliation import CAUSES as JOB_CAUSES

    # one spelling in the contract, which imports no Spark: the pages never load pyspark to print a cause
    assert CAUSES is JOB_CAUSES is contract.RECONCILIATION_CAUSES


def test_ledger_rows_reloaded_when_the_ledger_changes(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.compensation.ledger import Ledger

    built = L.build(tmp_path)
    with open_warehouse(built["warehouse"], built["config"]) as ex:
        failed = DeadLetterFilter(compensation_state="FAILED")
        assert ex.dead_letters(L.D1, L.D1, failed).total == 0
        assert ex.dead_letters(L.D1, L.D1, DeadLetterFilter(compensation_state="PENDING")).total == 1
        with Ledger.open(f"sqlite:///{built['ledger']}") as ledger:
            claim = ledger.claim("G1", "M2", worker="w2", handler="log-only")
            assert claim is not None
            ledger.fail(claim, "HTTP 502", permanent=False, handler="log-only")
        rows = ex.dead_letters(L.D1, L.D1, failed).rows  # the same range again: the cached rows are stale
        assert [(r.msg_id, r.attempts, r.last_error) for r in rows] == [("M2", 1, "HTTP 502")]
        csv_rows = list(csv.DictReader(io.StringIO("".join(ex.dead_letters_csv(L.D1, L.D1, failed)), newline="")))
        assert [(r["msg_id"], r["compensation_state"], r["attempts"]) for r in csv_rows] == [("M2", "FAILED", "1")]


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://evil.example/")', '\'=HYPERLINK("http://evil.example/")'),
        ("+1-555", "'+1-555"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("ORDER-1", "ORDER-1"),
        (None, ""),
        (-1, -1),  # a number is no formula
    ],
)
def test_a_csv_cell_never_runs_as_a_formula(value: object, cell: object) -> None:
    from rocketmq_retry.explore.dead_letters import _csv_text, csv_cell

    assert csv_cell(value) == cell
    # written and read back, the value stays readable: only the leading apostrophe is added
    [[back]] = list(csv.reader(io.StringIO(_csv_text([[csv_cell(value)]]), newline="")))
    assert back == str(cell)
