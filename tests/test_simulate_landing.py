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


# --- applications, Spring patterns, client versions, start-up days (rocketmq-facts Q1, Q6, Q7, Q11, Q12) ------------


def _text(landing: pathlib.Path, pattern: str) -> str:
    """The files matching ``pattern`` (one file and its rolled siblings) as one text, oldest content first."""

    def age(p: pathlib.Path) -> tuple[int, str, int]:
        dated = re.search(r"\.(\d{4}-\d{2}-\d{2})\.(\d+)(?:\.gz)?$", p.name)  # Spring: app.log.<day>.<i>.gz
        if dated:
            return (0, dated.group(1), int(dated.group(2)))
        window = re.search(r"[.-](\d+)(?:\.log)?(?:\.gz)?$", p.name)  # fixed windows: index 1 is the newest
        if window:
            return (1, "", -int(window.group(1)))
        return (2, "", 0)  # the current file

    return "".join(_read(p) for p in sorted(_files(landing, pattern), key=age))


def test_spring_application_with_two_containers_shares_its_logs(landing: pathlib.Path) -> None:
    host = "default-invoice-mailer-01"
    app = _text(landing, f"{host}/logs/app.log*")
    containers = re.findall(r"running container: (DefaultRocketMQListenerContainer\{.*\})$", app, re.M)
    # rocketmq-spring 2.2.2 (the release bundling the newest client up to the broker's 4.9.4): namespace and
    # tlsEnable, the stray quote after messageModel, no instanceName
    assert containers == [
        "DefaultRocketMQListenerContainer{consumerGroup='GID_invoice_mailer', namespace='', "
        "nameServer='10.0.0.5:9876', topic='INVOICE_ISSUED', consumeMode=CONCURRENTLY, selectorType=TAG, "
        "selectorExpression='*', messageModel=CLUSTERING', tlsEnable=false}",
        "DefaultRocketMQListenerContainer{consumerGroup='GID_invoice_reminder', namespace='', "
        "nameServer='10.0.0.5:9876', topic='INVOICE_OVERDUE', consumeMode=CONCURRENTLY, selectorType=TAG, "
        "selectorExpression='*', messageModel=CLUSTERING', tlsEnable=false}",
    ]
    assert app.count("Starting InvoiceMailerApplication") == 1 and app.count("Started InvoiceMailerApplication") == 1
    failed_topics = set(re.findall(r"consume message failed\. messageId:\w+, topic:(\w+),", app))
    assert failed_topics == {"INVOICE_ISSUED", "INVOICE_OVERDUE"}
    # one rocketmq_client.log for the JVM, one client instance (client id) per container
    client = _text(landing, f"{host}/logs/rocketmqlogs/rocketmq_client.log*")
    for group, topic in (("GID_invoice_mailer", "INVOICE_ISSUED"), ("GID_invoice_reminder", "INVOICE_OVERDUE")):
        assert f"the consumer [{group}] start beginning. messageModel=CLUSTERING, isUnitMode=false" in client
        assert re.search(
            rf"\[persistAll\] Group: {group} ClientId: 10\.0\.1\.\d+@10\.0\.0\.5:9876@\d+@\d+ "
            rf"updateConsumeOffsetToBroker MessageQueue \[topic={topic}, brokerName=broker-a, queueId=\d\] \d+",
            client,
        )
        assert f"rebalanced result changed. allocateMessageQueueStrategyName=AVG, group={group}, topic={topic}, " in (
            client
        )
    assert not _files(landing, "default-invoice-reminder-*/**/*")
    rows = _truth(landing, "lifecycles.csv")
    hosts = {
        (r["consumer_group"], r["client_host"], r["application"]) for r in rows if "invoice" in r["consumer_group"]
    }
    assert hosts == {
        ("GID_invoice_mailer", host, "invoice-mailer"),
        ("GID_invoice_reminder", host, "invoice-mailer"),
        ("GID_invoice_archive", "default-invoice-archive-01", "invoice-archive"),
    }
    manifest = json.loads((landing / "_truth" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["groups"]["GID_invoice_reminder"]["application"] == "invoice-mailer"
    assert manifest["groups"]["GID_invoice_reminder"]["spring_version"] == "2.2.2"


def test_grpc_listener_exception_names_broker_then_topic(landing: pathlib.Path) -> None:
    grpc = _text(landing, "v5-*/logs/rocketmq/rocketmq-client.log*")
    lines = re.findall(r"^.* - Message listener raised an exception while consuming messages, .*$", grpc, re.M)
    assert lines
    topics = {r["msg_id"]: r["topic"] for r in _truth(landing, "lifecycles.csv") if r["client"] == "grpc"}
    for line in lines:
        m = re.fullmatch(
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ERROR \[\d+\] \[RocketmqMessageConsumption-0-\d+\] "
            r"\[o\.a\.r\.c\.j\.i\.c\.ConsumeTask#\?:\?\] - Message listener raised an exception while consuming "
            r"messages, clientId=(v5-[\w-]+-01)@\d+@0@[0-9a-z]+, mq=broker-b\.(\w+)\.[0-3], messageId=(\w+)",
            line,
        )
        assert m is not None, line
        assert topics[m.group(3)] == m.group(2)  # MessageQueueImpl.toString(): broker.topic.queueId


def test_broadcasting_clients_persist_offsets_silently(landing: pathlib.Path) -> None:
    for host in ("default-cache-node-01", "default-cache-node-02"):
        client = _text(landing, f"{host}/logs/rocketmqlogs/rocketmq_client.log*")
        assert "[persistAll]" not in client  # LocalFileOffsetStore.persistAll logs nothing
        assert "rebalanced result changed" not in client
        assert re.search(
            r"^.* - messageQueueChanged GID_cache_node CACHE_INVALIDATE \[MessageQueue \[topic=CACHE_INVALIDATE, "
            r"brokerName=broker-a, queueId=0\], MessageQueue .*\] \[MessageQueue .*\]\r$",
            client,
            re.M,
        )
        assert "Created new MQClientInstance for clientId:[10.0.1." in client and "@DEFAULT]" in client


TOPOLOGY_CONFIG = {
    "timezone": "Asia/Shanghai",
    "brokers": {"default": {"version": "4.9.4"}, "v5": {"version": "5.2.0"}},
    "groups": {
        "GID_legacy_sync": {"max_reconsume_times": 2},
        "GID_legacy_ledger": {"max_reconsume_times": 2},
        "GID_boot2_mailer": {"max_reconsume_times": 2},
        "GID_report_builder": {"max_reconsume_times": 2},
        "GID_day_checker": {"max_reconsume_times": 2},
        "GID_five_one": {"broker": "v5", "max_reconsume_times": 2},
        "GID_five_two": {"broker": "v5", "max_reconsume_times": 2},
        "GID_pop_worker": {"broker": "v5", "consume_mode": "pop", "max_reconsume_times": 2},
    },
}
TOPOLOGY_SCENARIO = """
groups:
  GID_legacy_sync: {topic: LEGACY_SYNC, app: spring, application: legacy, client_version: "4.9.1",
                    spring_pattern: boot2-console, behaviour: {ok: 0.5, always: 0.5}}
  GID_legacy_ledger: {topic: LEGACY_LEDGER, app: spring, application: legacy, client_version: "4.9.1",
                      spring_pattern: boot2-console, behaviour: {ok: 0.5, always: 0.5}}
  GID_boot2_mailer: {topic: MAIL_REQUESTED, app: spring, spring_pattern: boot2-console, started_days_before: 3,
                     behaviour: {ok: 0.5, always: 0.5}}
  GID_report_builder: {topic: REPORT_REQUESTED, app: spring, started_days_before: 3, behaviour: {ok: 0.5, always: 0.5}}
  GID_day_checker: {topic: DAY_CHECKED, started_days_before: 0, behaviour: {ok: 0.5, always: 0.5}}
  GID_five_one: {topic: FIVE_ONE, client_version: "5.1.0", behaviour: {ok: 0.6, always: 0.4},
                 failure_kinds: {exception: 1.0}}
  GID_five_two: {topic: FIVE_TWO, behaviour: {ok: 0.6, always: 0.4}, failure_kinds: {exception: 1.0}}
  GID_pop_worker: {topic: POP_WORK, behaviour: {ok: 0.6, always: 0.4}, failure_kinds: {exception: 1.0}}
"""


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    folder = tmp_path_factory.mktemp("topology")
    (folder / "scenario.yaml").write_text(TOPOLOGY_SCENARIO, encoding="utf-8")
    out = folder / "landing"
    settings = _settings(
        out, messages=240, seed=3, noise=0.05, timeout_rate=0.3, scenario=load_scenario(folder / "scenario.yaml")
    )
    simulate(parse_config(TOPOLOGY_CONFIG), settings)
    return out


def _spring_heads(text: str) -> list[re.Match[str]]:
    return [m for line in text.splitlines() if (m := re.match(layouts.SPRING_LINE_RE, line))]


def test_boot2_console_threads_follow_the_client_version(topology: pathlib.Path) -> None:
    legacy = _text(topology, "default-legacy-01/logs/stdout.log*")
    heads = _spring_heads(legacy)
    assert heads and all(re.fullmatch(timefmt.SPRING_BOOT2_TS.regex, m.group("ts")) for m in heads)
    # rocketmq-spring 2.2.1 runs client 4.9.1: ConsumeMessageThread_<n>, cut by %15.15t; the two containers' pools
    # give the same names
    old_threads = {f"ConsumeMessageThread_{n}"[-15:].rjust(15) for n in range(1, 21)}
    failed = [m for m in heads if m.group("msg").startswith("consume message failed. ")]
    assert {m.group("thread") for m in failed} <= old_threads
    assert {m.group("msg").split("topic:")[1].split(",")[0] for m in failed} == {"LEGACY_SYNC", "LEGACY_LEDGER"}
    # the 2.2.1 toString: no namespace, no tlsEnable, no instanceName
    containers = re.findall(
        r"running container: DefaultRocketMQListenerContainer\{consumerGroup='(\w+)', nameServer=", legacy
    )
    assert sorted(containers) == ["GID_legacy_ledger", "GID_legacy_sync"]
    assert re.search(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  INFO \d+ --- \[           main\] "
        r"com\.example\.legacy\.LegacyApplication +: Starting LegacyApplication v1\.4\.2 using Java 11\.0\.22 on "
        r"default-legacy-01 with PID \d+ ",
        legacy,
        re.M,
    )
    # client 4.9.4 (rocketmq-spring 2.2.2): ConsumeMessageThread_<group>_<n>, of which the console keeps 15 chars
    mailer = _text(topology, "default-boot2-mailer-01/logs/stdout.log*")
    new_threads = {f"ConsumeMessageThread_GID_boot2_mailer_{n}"[-15:] for n in range(1, 21)}
    failed = [m for m in _spring_heads(mailer) if m.group("msg").startswith("consume message failed. ")]
    assert failed and {m.group("thread") for m in failed} <= new_threads
    line = next(line for line in mailer.splitlines() if " WARN " in line)
    assert re.fullmatch(
        r"2026-11-2[01] \d\d:\d\d:\d\d\.\d{3}  WARN \d+ --- \[(?:_boot2_mailer_\d|boot2_mailer_\d\d)\] "
        r"a\.r\.s\.s\.DefaultRocketMQListenerContainer : consume message failed\. messageId:[0-9A-F]{32}, "
        r"topic:MAIL_REQUESTED, reconsumeTimes:\d+",
        line,
    )


def test_client_threads_and_rebalance_lines_follow_the_client_version(topology: pathlib.Path) -> None:
    five_one = _text(topology, "v5-five-one-01/logs/rocketmqlogs/**/rocketmq_client*.log*")
    five_two = _text(topology, "v5-five-two-01/logs/rocketmqlogs/**/rocketmq_client*.log*")
    pop = _text(topology, "v5-pop-worker-01/logs/rocketmqlogs/**/rocketmq_client*.log*")

    def threads(text: str, needle: str) -> set[str]:
        return {
            m.group("thread")
            for line in text.splitlines()
            if needle in line and (m := re.match(layouts.CLIENT_5X_LINE_RE, line))
        }

    assert threads(five_one, " - consumeMessage exception: ") <= {
        f"ConsumeMessageThread_GID_five_one_{n}" for n in range(1, 21)
    }
    assert threads(five_one, " - consumeMessage exception: ")
    # the clean-expire pool carries the group from 5.1.1 on
    assert threads(five_one, " - send expire msg back. ") == {"CleanExpireMsgScheduledThread_1"}
    assert threads(five_two, " - send expire msg back. ") == {"CleanExpireMsgScheduledThread_GID_five_two_1"}
    # POP consume services never name the group
    assert threads(pop, " - consumeMessage exception: ") <= {f"ConsumeMessageThread_{n}" for n in range(1, 21)}
    assert threads(pop, " - consumeMessage exception: ")
    # 5.x: "client rebalanced result changed", no "add a new pull request"; 4.x: both 4.x forms
    for text, group in ((five_one, "GID_five_one"), (five_two, "GID_five_two")):
        assert f"] - client rebalanced result changed. allocateMessageQueueStrategyName=AVG, group={group}, " in text
        assert f"] - doRebalance, {group}, add a new mq, MessageQueue [topic=" in text
        assert "add a new pull request" not in text
    # a POP consumer's business queues come from the broker (queueId -1, POP mode) and have no offsets to persist
    assert (
        "] - broker rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=GID_pop_worker, "
        "topic=POP_WORK, clientId="
    ) in pop
    assert (
        ", assignmentSet=[MessageQueueAssignment [MessageQueue=MessageQueue [topic=POP_WORK, brokerName=broker-b, "
        "queueId=-1], Mode=POP]]\n"
    ) in pop
    assert (
        "] - doRebalance, GID_pop_worker, add a new pop mq, MessageQueue [topic=POP_WORK, brokerName=broker-b, " in pop
    )
    persisted = set(re.findall(r"updateConsumeOffsetToBroker MessageQueue \[topic=([^,]+),", pop))
    assert persisted == {"%RETRY%GID_pop_worker"}
    checker = _text(topology, "default-day-checker-01/logs/rocketmqlogs/rocketmq_client.log*")
    assert " - rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=GID_day_checker, " in checker
    assert re.search(
        r" - doRebalance, GID_day_checker, add a new pull request PullRequest \[consumerGroup=GID_day_checker, "
        r"messageQueue=MessageQueue \[topic=DAY_CHECKED, brokerName=broker-a, queueId=\d\], nextOffset=0\]\r$",
        checker,
        re.M,
    )


def test_started_days_before_dates_the_start_up_lines(topology: pathlib.Path) -> None:
    earlier = "2026-11-17"
    # Spring Boot's daily roll puts the start-up day in its own file: app.log.2026-11-17.0.gz
    (rolled,) = _files(topology, f"default-report-builder-01/logs/app.log.{earlier}.*")
    start_up = _read(rolled).splitlines()
    assert [re.sub(r"^\S+ +INFO \d+ --- \[main\] (\S+) +: (\w+ \w+).*$", r"\1 \2", line) for line in start_up] == [
        "c.e.r.ReportBuilderApplication Starting ReportBuilderApplication",
        "a.r.s.s.DefaultRocketMQListenerContainer running container",
        "c.e.r.ReportBuilderApplication Started ReportBuilderApplication",
    ]
    assert all(line.startswith(earlier + "T10:") for line in start_up)
    for host, group in (
        ("default-report-builder-01", "GID_report_builder"),
        ("default-boot2-mailer-01", "GID_boot2_mailer"),
    ):
        client = _text(topology, f"{host}/logs/rocketmqlogs/rocketmq_client.log*").split("\r\n")
        assert client[0].startswith(earlier) and f"the consumer [{group}] start beginning." in client[0]
        early = [line for line in client if line[:10] < "2026-11-20" and line[:4] == "2026"]
        assert any(" - rebalanced result changed. " in line for line in early)
        # periodic noise (offset persistence, heartbeats, stats) only runs from the simulated date's start
        assert not any("[persistAll]" in line or "heart beat" in line or "Stats In" in line for line in early)
    console = _text(topology, "default-boot2-mailer-01/logs/stdout.log*").splitlines()
    assert console[0].startswith(earlier + " 10:") and "Starting Boot2MailerApplication" in console[0]
    broker = _text(topology, "rmq-broker-a/logs/rocketmqlogs/**/broker*.log*")
    assert re.search(
        rf"^{earlier} 10:\d\d:\d\d INFO HeartbeatThread_1 - new consumer connected, group: GID_report_builder ",
        broker,
        re.M,
    )
    # started_days_before 0: in the date's first minute, and nothing is delivered before the consumer is up
    checker = _text(topology, "default-day-checker-01/logs/rocketmqlogs/rocketmq_client.log*").split("\r\n")
    assert re.match(
        r"2026-11-20 00:00:[2-4]\d,\d{3} INFO RocketmqClient - the consumer \[GID_day_checker\] start beginning",
        checker[0],
    )
    started = _dt.datetime.fromisoformat(checker[0][:19].replace(" ", "T") + "+08:00")
    for r in _truth(topology, "lifecycles.csv"):
        if r["consumer_group"] == "GID_day_checker":
            first = _dt.datetime.fromisoformat(r["delivery_times"].split(";")[0].replace("Z", "+00:00"))
            assert first > started
    manifest = json.loads((topology / "_truth" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["groups"]["GID_report_builder"]["started_days_before"] == 3
    for source in parse_config({"sources": manifest["sources"]}).sources:
        assert _files(topology, source.glob_for(DATE.isoformat())), source


def test_applications_must_agree(tmp_path: pathlib.Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "groups:\n  GID_a: {app: spring, application: shop}\n  GID_b: {app: spring, application: shop, instances: 2}\n",
        encoding="utf-8",
    )
    config = parse_config({"groups": {"GID_a": {}, "GID_b": {}}})
    with pytest.raises(UserError, match=r"GID_a and GID_b share application 'shop' .* differ in instances: 1 vs 2"):
        simulate(config, _settings(tmp_path / "x", messages=5, scenario=load_scenario(scenario)))
    for bad, match in (
        ("spring_pattern: boot4-file", "spring_pattern: expected one of boot3-file"),
        ("client_version: 4.9", "quoted string"),
        ('client_version: "5.0.0"', "not model"),
        ('spring_version: "2.1.1"', "spring_version: expected one of"),
        ("started_days_before: -1", "started_days_before: expected an integer >= 0"),
    ):
        scenario.write_text(f"groups:\n  GID_a: {{{bad}}}\n", encoding="utf-8")
        with pytest.raises(UserError, match=match):
            load_scenario(scenario)


TOPOLOGIES = ROOT / "benchmarks" / "topologies"


@pytest.mark.parametrize(
    "name", ["shared-topic", "spring-multi-container", "grpc-shared", "broadcast", "started-earlier", "production"]
)
def test_topology_fixtures_simulate_and_their_sources_match(name: str, tmp_path: pathlib.Path) -> None:
    config = load_config(TOPOLOGIES / f"{name}.yaml")
    assert all(source.consumer_group is None for source in config.sources)  # attribution must do without
    out = tmp_path / "landing"
    settings = _settings(
        out, messages=40, seed=3, noise=0, scenario=load_scenario(TOPOLOGIES / f"{name}-scenario.yaml")
    )
    simulate(config, settings)
    assert set(load_scenario(TOPOLOGIES / f"{name}-scenario.yaml")) == set(config.groups)
    for source in config.sources:
        assert _files(out, source.glob_for(DATE.isoformat())), (name, source.path)
    manifest = json.loads((out / "_truth" / "manifest.json").read_text(encoding="utf-8"))
    for source in parse_config({"sources": manifest["sources"]}).sources:
        assert _files(out, source.glob_for(DATE.isoformat())), (name, source.path)
