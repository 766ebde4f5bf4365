"""The simulator's landing: every format present, line shapes equal to the real 4.9.4 files, dumps with the same
property sets, ground truth consistent with the engine, same seed → same bytes."""

from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import gzip
import itertools
import json
import pathlib
import re
from collections import Counter, defaultdict

import pytest

from rocketmq_retry.config import load_config, parse_config
from rocketmq_retry.engine import expected_path
from rocketmq_retry.errors import UserError
from rocketmq_retry.logformats import layouts, statements, timefmt, trace
from rocketmq_retry.logformats.dump import DUMP_KEYS
from rocketmq_retry.simulate.cli import main
from rocketmq_retry.simulate.run import simulate
from rocketmq_retry.simulate.scenario import GroupScenario, Settings, load_scenario

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "rocketmq-retry.yaml"
SCENARIO = ROOT / "examples" / "simulate-scenario.yaml"
DATE = _dt.date(2026, 11, 20)

# The shape of a MessageExt rendering, field by field (samples client/consumers.rocketmq_client.log, §6.2).
MESSAGE_EXT_RE = (
    r"MessageExt \[brokerName=[\w-]+, queueId=\d+, storeSize=\d+, queueOffset=\d+, sysFlag=0, bornTimestamp=\d{13}, "
    r"bornHost=/[\d.]+:\d+, storeTimestamp=\d{13}, storeHost=/[\d.]+:\d+, msgId=[0-9A-F]{32}, commitLogOffset=\d+, "
    r"bodyCRC=\d+, reconsumeTimes=\d+, preparedTransactionOffset=0, toString\(\)=Message\{topic='[^']+', flag=0, "
    r"properties=\{(?P<props>[^}]*)\}, body=\[(?:-?\d+(?:, -?\d+)*)?\], transactionId='null'\}\]"
)
MQ_RE = r"MessageQueue \[topic=\S+, brokerName=[\w-]+, queueId=\d+\]"
L_C1_RE = (
    r"consumeMessage exception: [\w.$]+: .*, [\w.$/]+\([\w.]+:\d+\) Group: \S+ Msgs: \["
    + MESSAGE_EXT_RE
    + r"\] MQ: "
    + MQ_RE
)
L_C2_RE = r"consumeMessage return null, Group: \S+ Msgs: \[" + MESSAGE_EXT_RE + r"\] MQ: " + MQ_RE


def _scenario() -> dict[str, GroupScenario]:
    scenario = load_scenario(SCENARIO)
    # enough always-failing default-group lifecycles to check the 17-delivery path in every run
    scenario["GID_order_fulfilment"] = dataclasses.replace(
        scenario["GID_order_fulfilment"], behaviour={"ok": 0.4, "always": 0.6}
    )
    # and 5.x remoting listeners that throw, for the 5.x line shapes
    scenario["GID_points_accrual"] = dataclasses.replace(
        scenario["GID_points_accrual"], behaviour={"ok": 0.5, "until": 0.5}, failure_kinds={"exception": 1.0}
    )
    return scenario


def _settings(out: pathlib.Path, **kw: object) -> Settings:
    base: dict[str, object] = {
        "date": DATE,
        "out": out,
        "messages": 160,
        "seed": 7,
        "noise": 0.02,
        "rotate_bytes": 64 * 1024,
        "scenario": _scenario(),
        "timeout_rate": 0.02,
        "send_back_fault_rate": 0.05,
        "producer_fault_rate": 0.05,
    }
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("sim") / "landing"
    simulate(load_config(CONFIG), _settings(out))
    return out


def _read(path: pathlib.Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def _files(landing: pathlib.Path, pattern: str) -> list[pathlib.Path]:
    return sorted(p for p in landing.glob(pattern) if p.is_file())


def _truth(landing: pathlib.Path, name: str) -> list[dict[str, str]]:
    with (landing / "_truth" / name).open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_configured_source_matches_files(landing: pathlib.Path) -> None:
    config = load_config(CONFIG)
    formats = set()
    for source in config.sources:
        matched = _files(landing, source.glob_for(DATE.isoformat()))
        assert matched, f"{source.format}: nothing matches {source.path}"
        formats.add(source.format)
    assert formats == {
        "rocketmq-client-4x",
        "rocketmq-client-5x",
        "rocketmq-grpc-client",
        "spring-listener",
        "broker",
        "broker-stats",
        "trace",
        "message-dump",
    }
    assert list(landing.rglob("*.gz")), "rotation with gzip should have rolled some files"
    # the manifest's suggested sources are a valid config section that covers this layout
    suggested = json.loads((landing / "_truth" / "manifest.json").read_text(encoding="utf-8"))["sources"]
    for source in parse_config({"sources": suggested}).sources:
        assert _files(landing, source.glob_for(DATE.isoformat())), source
    assert not list(landing.parent.glob(".landing.partial-*")), "the temp directory must be renamed away"


# --- rocketmq-client-4x ------------------------------------------------------------------------------------------


def test_client_4x_lines_have_the_sample_shape(landing: pathlib.Path, samples_dir: pathlib.Path) -> None:
    real = (samples_dir / "client/consumers.rocketmq_client.log").read_bytes().decode("utf-8")
    real_c1 = [m for m in re.finditer(r"^.* - (consumeMessage exception: .*)\r$", real, re.M)]
    assert real_c1 and all(re.fullmatch(L_C1_RE, m.group(1)) for m in real_c1)  # the regex is the sample's shape
    files = _files(landing, "default-*/logs/rocketmqlogs/rocketmq_client.log*")
    text = "".join(_read(p) for p in files)
    assert text and "\r\n" in text
    assert not re.search(r"[^\r]\n", text), "every 4.x ClientLogger line ends in \\r\\n"
    c1 = c2 = c3 = 0
    for line in text.split("\r\n"):
        m = re.match(layouts.CLIENT_4X_LINE_RE, line)
        if not m:
            assert (
                line == "" or line.startswith(("\tat ", "Caused by: ")) or re.match(r"[\w.$]+(Exception|Error)", line)
            )
            continue
        msg = m.group("msg")
        if msg.startswith("consumeMessage exception"):
            c1 += 1
            assert re.fullmatch(L_C1_RE, msg), msg[:300]
        elif msg.startswith("consumeMessage return null"):
            c2 += 1
            assert re.fullmatch(L_C2_RE, msg), msg[:300]
        elif msg.startswith("consumeMessage Orderly return not OK"):
            c3 += 1
    assert c1 and c2 + c3 >= c1  # a thrown listener gives L-C1 then L-C2 (§12), or L-C3 when orderly (§4)


def test_dumped_property_sets_equal_the_samples(landing: pathlib.Path, samples_dir: pathlib.Path) -> None:
    def keysets(path: pathlib.Path, topic_prefix: str = "") -> set[frozenset[str]]:
        out = set()
        for line in path.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            assert tuple(d) == DUMP_KEYS
            # the sample is a 4.9.4 broker: compare with our 4.9.4 broker's copies (5.x adds MSG_REGION, TRACE_ON)
            if d["topic"].startswith(topic_prefix) and d["storeHost"] in ("/127.0.0.1:10911", "/10.0.0.11:10911"):
                out.add(frozenset(d["properties"]))
        return out

    real_business = keysets(samples_dir / "dumps/business-topics.jsonl")
    assert keysets(landing / "dumps/business-topics.jsonl") == real_business
    # retry copies of a 4.x concurrent group written by the broker's send-back: the sample's exact key set
    real_retry = keysets(samples_dir / "dumps/retry-topics.jsonl", "%RETRY%GID_inventory_reserve")
    ours = keysets(landing / "dumps/retry-topics.jsonl", "%RETRY%GID_inventory_reserve")
    assert real_retry <= ours or ours <= real_retry
    assert frozenset(next(iter(real_retry))) in ours
    real_dlq = keysets(samples_dir / "dumps/dlq-topics.jsonl", "%DLQ%GID_inventory_reserve")
    assert real_dlq & keysets(landing / "dumps/dlq-topics.jsonl", "%DLQ%GID_inventory_reserve")
    # delayLevel -1: straight to the DLQ with no REAL_TOPIC (samples README, §12)
    real_minus1 = keysets(samples_dir / "dumps/dlq-topics.jsonl", "%DLQ%GID_refund_validator")
    assert keysets(landing / "dumps/dlq-topics.jsonl", "%DLQ%GID_refund_validator") == real_minus1


def test_dlq_copies_carry_deliveries_as_reconsume_times(landing: pathlib.Path) -> None:
    dlq = {}
    for line in (landing / "dumps/dlq-topics.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        dlq[(d["topic"], d["msgId"])] = d
    rows = [
        r
        for r in _truth(landing, "lifecycles.csv")
        if r["final_state"] == "DEAD_LETTERED" and r["client"] == "4x" and r["consume_mode"] == "concurrently"
    ]
    rows = [r for r in rows if r["send_back_faults"] == "0" and r["timeouts"] == "0"]
    assert rows
    for r in rows:
        copy = dlq[(r["dlq_topic"], r["msg_id"])]
        assert copy["reconsumeTimes"] == int(r["deliveries"]) == int(r["dlq_reconsume_times"])  # §12
        assert copy["properties"]["DELAY"] == "0"


# --- ground truth against the engine -----------------------------------------------------------------------------


def test_default_concurrent_dlq_lifecycles_have_17_deliveries(landing: pathlib.Path) -> None:
    policy = load_config(CONFIG).group_policy("GID_order_fulfilment")
    path = expected_path(policy)
    assert path.deliveries == 17
    rows = [
        r
        for r in _truth(landing, "lifecycles.csv")
        if r["consumer_group"] == "GID_order_fulfilment" and r["final_state"] == "DEAD_LETTERED"
    ]
    clean = [r for r in rows if r["send_back_faults"] == "0" and r["timeouts"] == "0"]
    assert clean, "the scenario should dead-letter some default-group messages"
    for r in clean:
        assert int(r["deliveries"]) == 17
        assert r["delivery_reconsume_times"] == ";".join(str(i) for i in range(17))
        assert r["hop_delay_levels"].split(";")[:16] == [str(3 + i) for i in range(16)]
        times = [_dt.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in r["delivery_times"].split(";")]
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
        expected = [s.next.delay_ms / 1000 for s in path.steps][:16]
        for gap, want in zip(gaps, expected, strict=True):
            assert want <= gap < want + 5  # consume time, schedule poll and pull lag on top of the delay level


def test_final_states_and_broadcast_and_orderly(landing: pathlib.Path) -> None:
    rows = _truth(landing, "lifecycles.csv")
    _, day_end = timefmt.day_bounds_ms(DATE, "Asia/Shanghai")
    midnight = _iso(day_end)
    crossing = [r for r in rows if r["published_at"] < midnight < r["delivery_times"].split(";")[-1]]
    assert crossing, "some lifecycles must cross local midnight"
    by_group: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_group[r["consumer_group"]][r["final_state"]] += 1
    assert set(by_group["GID_cache_node"]) <= {"CONSUMED", "DROPPED"}
    assert by_group["GID_cache_node"]["DROPPED"] > 0
    broadcast = [r for r in rows if r["consumer_group"] == "GID_cache_node"]
    assert {r["instance"] for r in broadcast} == {"0", "1"}
    assert all(r["deliveries"] == "1" for r in broadcast)  # broadcasting never retries (§1.3)
    orderly_dlq = [
        r for r in rows if r["consumer_group"] == "GID_order_state_machine" and r["final_state"] == "DEAD_LETTERED"
    ]
    for r in orderly_dlq:
        assert int(r["deliveries"]) == 3  # max 2: three local deliveries, then the DLQ (samples D_ORDERLY_SUSPEND)
        assert r["dlq_reconsume_times"] == "2"
    refund = [r for r in rows if r["consumer_group"] == "GID_refund_validator" and r["final_state"] == "DEAD_LETTERED"]
    assert refund and all(r["deliveries"] == "1" for r in refund)


# --- broker, stats, 5.x ------------------------------------------------------------------------------------------


def test_broker_lines_and_dlq_log_in_gmt8(landing: pathlib.Path) -> None:
    for path in _files(landing, "rmq-broker-*/logs/rocketmqlogs/**/*.log*"):
        for line in _read(path).splitlines():
            pattern = layouts.STATS_LINE_RE if "stats" in path.name else layouts.BROKER_LINE_RE
            assert re.match(pattern, line), (path, line)
    dlq_lines = [
        line
        for p in _files(landing, "rmq-broker-b/logs/rocketmqlogs/**/broker_default*.log*")
        for line in _read(p).splitlines()
        if " - send msg to DLQ " in line
    ]
    assert dlq_lines
    clock = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8)
    for line in dlq_lines:
        m = re.match(layouts.BROKER_LINE_RE, line)
        assert m is not None
        args = re.fullmatch(statements.template_regex(statements.L_B7.template), m.group("msg"))
        assert args is not None and args.group(1).startswith("%DLQ%") and args.group(2) == "null"
        assert m.group("ts") == clock.format(int(args.group(6)))
    # 4.x brokers write no DLQ line at all (§6.3 gaps)
    assert not _files(landing, "rmq-broker-a/logs/rocketmqlogs/broker_default.log*")


def test_stats_send_back_sums_match_the_truth(landing: pathlib.Path, samples_dir: pathlib.Path) -> None:
    real = (samples_dir / "broker/stats.log").read_text(encoding="utf-8").splitlines()
    assert all(re.match(layouts.STATS_LINE_RE, line) for line in real)
    sums: Counter[str] = Counter()
    for p in _files(landing, "rmq-broker-a/logs/rocketmqlogs/**/stats*.log*"):
        for line in _read(p).splitlines():
            m = re.search(
                r"\[SNDBCK_PUT_NUMS\] \[([^\]]+)\] Stats In One Minute, SUM: (\d+) TPS: \d+\.\d\d AVGPT: 1\.00$", line
            )
            if m:
                sums[m.group(1)] += int(m.group(2))
    hops = _truth(landing, "hops.csv")
    lifecycles = {r["lifecycle_id"]: r for r in _truth(landing, "lifecycles.csv")}
    expected: Counter[str] = Counter()
    for h in hops:
        lc = lifecycles[h["lifecycle_id"]]
        if h["consumer_group"] != "GID_order_fulfilment" or h["kind"] != "HOP":
            continue
        # every send-back the broker stored through consumerSendMsgBack: retries and §2.2 dead letters
        if h["action"] == "SCHEDULED_RETRY" or (h["action"] == "DEAD_LETTER" and "§2.2" in h["rule"]):
            expected[f"{lc['topic']}@GID_order_fulfilment"] += 1
    key = next(iter(expected))
    # send-backs stored before the horizon are all counted once in some minute line
    assert 0 < sums[key] <= expected[key]
    assert expected[key] - sums[key] <= 2


def test_client_5x_and_grpc_and_spring_lines(landing: pathlib.Path) -> None:
    text5 = "".join(_read(p) for p in _files(landing, "v5-*/logs/rocketmqlogs/**/rocketmq_client*.log*"))
    assert "\r" not in text5
    heads = [line for line in text5.splitlines() if re.match(layouts.CLIENT_5X_LINE_RE, line)]
    assert any("[o.a.r.c.i.c.ConsumeMessageConcurrentlyService#?:?] - consumeMessage exception: " in h for h in heads)
    assert any(" +08:00" not in h and h[:4] == "2026" for h in heads)
    grpc = "".join(_read(p) for p in _files(landing, "v5-*/logs/rocketmq/rocketmq-client*.log*"))
    assert "] - Message listener raised an exception while consuming messages, clientId=" in grpc
    assert "Failed to consume fifo message finally, run out of attempt times, maxAttempts=4" in grpc
    spring = "".join(_read(p) for p in _files(landing, "*/logs/app.log*"))
    assert "a.r.s.s.DefaultRocketMQListenerContainer : running container: DefaultRocketMQListenerContainer{" in spring
    entries = re.findall(
        r"^(\S+) +WARN \d+ --- \[[^\]]+\] a\.r\.s\.s\.DefaultRocketMQListenerContainer : "
        r"consume message failed\. messageId:([0-9A-F]{32}), topic:(\w+), reconsumeTimes:(\d+)\n\n([\w.$]+: .*)\n\tat ",
        spring,
        re.M,
    )
    assert entries
    assert all(re.fullmatch(timefmt.SPRING_TS.regex, e[0]) and e[0].endswith("+08:00") for e in entries)


def test_trace_records_follow_truth(landing: pathlib.Path) -> None:
    befores: dict[tuple[str, str], list[int]] = defaultdict(list)
    pairs: Counter[str] = Counter()
    # rolled exports first, oldest (highest index) to newest, then the current file
    rolled = sorted(_files(landing, "trace/RMQ_SYS_TRACE_TOPIC.trace.*"), key=lambda p: -int(p.name.split(".")[2]))
    files = [*rolled, landing / "trace/RMQ_SYS_TRACE_TOPIC.trace"]
    for line in "".join(_read(p) for p in files).splitlines():
        assert line.endswith(trace.FIELD_SPLITOR)
        for record in trace.decode_body(line):
            assert len(record.fields) == len(trace.FIELDS_BY_TYPE[record.type])
            if record.type == trace.SUB_BEFORE:
                befores[(record.fields[3], record.fields[5])].append(int(record.fields[6]))
                pairs[record.fields[4]] += 1
            elif record.type == trace.SUB_AFTER:
                pairs[record.fields[1]] += 1
                assert record.fields[6] in "01234"
    rows = {(r["consumer_group"], r["msg_id"]): r for r in _truth(landing, "lifecycles.csv") if r["instance"] == "0"}
    checked = 0
    for key, retry_times in befores.items():
        # two broadcasting instances write identical-looking SubBefore records for one message (§12)
        if key in rows and rows[key]["final_state"] in ("CONSUMED", "DEAD_LETTERED") and key[0] != "GID_cache_node":
            assert ";".join(map(str, retry_times)) == rows[key]["delivery_reconsume_times"], key
            checked += 1
    assert checked > 50
    assert all(v == 2 for v in pairs.values())  # every SubBefore has its SubAfter (same requestId)


# --- determinism, knobs, CLI ---------------------------------------------------------------------------------------


def _iso(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _snapshot(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes(tmp_path: pathlib.Path) -> None:
    config = load_config(CONFIG)
    simulate(config, _settings(tmp_path / "a", messages=40))
    simulate(config, _settings(tmp_path / "b", messages=40))
    simulate(config, _settings(tmp_path / "c", messages=40, seed=8))
    a, b, c = (_snapshot(tmp_path / x) for x in "abc")
    assert a == b
    assert a != c


def test_cli_runs_and_reports_errors(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "landing"
    args = ["--date", "2026-11-20", "--out", str(out), "--messages", "20", "--noise", "0", "--quiet"]
    assert main([*args, "--client4x-timezone", "UTC"]) == 0
    assert "lifecycles" in capsys.readouterr().out
    first = next(p for p in out.rglob("rocketmq_client.log"))
    assert re.match(r"2026-11-1\d \d\d:\d\d:\d\d,\d{3} INFO ", first.read_text(encoding="utf-8"))
    with pytest.raises(UserError, match="not empty"):
        main(args)
    assert main([*args, "--force"]) == 0
    with pytest.raises(UserError, match="YYYY-MM-DD"):
        main(["--date", "20-11-2026", "--out", str(tmp_path / "x")])
    with pytest.raises(UserError, match="--failure-mix"):
        main(["--date", "2026-11-20", "--out", str(tmp_path / "x"), "--failure-mix", "boom=1"])
    with pytest.raises(UserError, match="time zone"):
        main(["--date", "2026-11-20", "--out", str(tmp_path / "x"), "--app-timezone", "Mars/Base"])
    with pytest.raises(UserError, match="GID_nope"):
        main(["--date", "2026-11-20", "--out", str(tmp_path / "x"), "--config", str(CONFIG), "--groups", "GID_nope"])
    assert not (tmp_path / "x").exists()
    only = tmp_path / "only"
    args = [
        "--date",
        "2026-11-20",
        "--out",
        str(only),
        "--config",
        str(CONFIG),
        "--groups",
        "GID_crm_sync,GID_cache_node",
    ]
    assert main([*args, "--messages", "10", "--noise", "0", "--quiet"]) == 0
    assert {r["consumer_group"] for r in _truth(only, "lifecycles.csv")} == {"GID_crm_sync", "GID_cache_node"}
