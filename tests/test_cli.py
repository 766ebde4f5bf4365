"""The rocketmq-retry console script: schedule output (exact §3.1 values), dispatch, and one-line errors."""

from __future__ import annotations

import functools
import json
import pathlib
import subprocess
import sys

import pytest

from rocketmq_retry import cli
from rocketmq_retry.airflow.connections import airflow_connection
from rocketmq_retry.cli import main
from rocketmq_retry.dates import format_duration

# §3.1 default retry schedule: retry k uses level 3 + r with these delays (ms).
DEFAULT_LEVEL_DELAYS_MS = {
    3: 10_000, 4: 30_000, 5: 60_000, 6: 120_000, 7: 180_000, 8: 240_000, 9: 300_000, 10: 360_000,
    11: 420_000, 12: 480_000, 13: 540_000, 14: 600_000, 15: 1_200_000, 16: 1_800_000, 17: 3_600_000, 18: 7_200_000,
}  # fmt: skip


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_config(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return str(path)


def final_without_settings(record: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in record.items() if key != "settings"}


def table_start(lines: list[str]) -> int:
    """Index of the table's header row (the settings block above it varies by consumer kind)."""
    return next(i for i, line in enumerate(lines) if line.split()[:2] == ["hop", "reconsume_times"])


def test_schedule_json_default_group_is_the_reference_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "schedule", "--group", "any", "--format", "json")
    assert (code, err) == (0, "")
    records = [json.loads(line) for line in out.splitlines()]
    retries, final = records[:-1], records[-1]
    cumulative = 0
    expected = []
    for hop, level in enumerate(range(3, 19), start=1):
        cumulative += DEFAULT_LEVEL_DELAYS_MS[level]
        expected.append(
            {
                "hop": hop,
                "reconsume_times": hop - 1,
                "delay_level": level,
                "delay_ms": DEFAULT_LEVEL_DELAYS_MS[level],
                "cumulative_ms": cumulative,
                "topic": "SCHEDULE_TOPIC_XXXX",
            }
        )
    assert retries == expected
    assert retries[-1]["cumulative_ms"] == ((4 * 60 + 45) * 60 + 40) * 1000  # 4h45m40s
    assert final_without_settings(final) == {"final": "DEAD_LETTERED", "topic": "%DLQ%any", "deliveries": 17}
    assert final["settings"] == {
        "group": "any",
        "broker_version": "4.9.4",
        "client_version": "4.9.4",
        "protocol": "remoting",
        "consume_mode": "concurrently",
        "message_model": "clustering",
        "message_delay_level": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        "max_delay_level": 18,
        "max_reconsume_times": -1,
        "effective_max_reconsume_times": 16,
        "retry_max_times": 16,
        "delay_level_when_next_consume": 0,
        "retry_queue_nums": 1,
        "suspend_current_queue_time_millis": 1000,
        "consume_timeout_minutes": 15,
        "pop_invisible_time_ms": 60000,
        "invisible_duration_ms": 15000,
        "enable_retry_topic_v2": False,
        "pop_consumer_kv_service_enable": False,
        "pop_revive_skip_if_group_absent": False,
        "retry_policy": {"type": "customized", "next_ms": None},
    }


def test_schedule_table_is_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schedule", "--group", "any")
    assert code == 0
    lines = out.splitlines()
    assert lines[:10] == [
        "Expected path for consumer group 'any'",
        "  broker_version                 4.9.4 (4.x rules)",
        "  client_version                 4.9.4",
        "  consumer                       remoting, concurrently, clustering",
        '  message_delay_level            "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h" (18 levels)',
        "  max_reconsume_times            -1 (16 in effect)",
        "  delay_level_when_next_consume  0 (the broker picks level 3 + reconsume_times)",
        "  retry_queue_nums               1",
        "  consume_timeout_minutes        15",
        "",
    ]
    head = table_start(lines)
    assert head == 10
    assert lines[head].split() == ["hop", "reconsume_times", "delay_level", "delay", "cumulative", "topic"]
    assert lines[head + 1].split() == ["1", "0", "3", "10s", "10s", "SCHEDULE_TOPIC_XXXX", "q2", "->", "%RETRY%any"]
    assert lines[head + 16].split()[:5] == ["16", "15", "18", "2h", "4h45m40s"]
    assert lines[-1] == "final: DEAD_LETTERED in %DLQ%any after 17 deliveries, 4h45m40s of retry delays"
    # Columns are aligned: every row's "delay" cell ends where the header's does.
    end = lines[head].index("delay ") + len("delay")
    assert all(row[end - 1] != " " for row in lines[head + 1 : head + 17])


def test_schedule_clamps_levels_above_the_table(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(
        tmp_path,
        'brokers:\n  default: {message_delay_level: "1s 2s 3s"}\ngroups:\n  GID_fast: {max_reconsume_times: 5}\n',
    )
    code, out, _ = run_cli(capsys, "schedule", "--group", "GID_fast", "--config", cfg, "--format", "json")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["reconsume_times"], r["delay_level"], r["delay_ms"], r["cumulative_ms"]) for r in records[:-1]] == [
        (0, 3, 3000, 3000),
        (1, 3, 3000, 6000),
        (2, 3, 3000, 9000),
        (3, 3, 3000, 12000),
        (4, 3, 3000, 15000),
    ]
    assert final_without_settings(records[-1]) == {"final": "DEAD_LETTERED", "topic": "%DLQ%GID_fast", "deliveries": 6}
    code, table, _ = run_cli(capsys, "schedule", "--group", "GID_fast", "--config", cfg)
    lines = table.splitlines()
    assert "3 (asked 7)" in lines[table_start(lines) + 5]
    assert "final: DEAD_LETTERED in %DLQ%GID_fast after 6 deliveries, 15s of retry delays" in table


def test_schedule_orderly_default_retries_forever(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, "groups:\n  ord: {consume_mode: orderly}\n")
    code, out, _ = run_cli(capsys, "schedule", "--group", "ord", "--config", cfg, "--format", "json", "--limit", "3")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(r["hop"], r["delay_level"], r["delay_ms"]) for r in records[:-1]] == [
        (1, None, 1000),
        (2, None, 1000),
        (3, None, 1000),
    ]
    assert final_without_settings(records[-1]) == {"final": "RETRYING_FOREVER", "topic": "<topic>", "deliveries": 3}


def test_schedule_limit_does_not_invent_forever(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    """A path cut by --limit keeps its true final state (retryMaxTimes 3 -> maxAttempts 4, §5.2)."""
    cfg = write_config(
        tmp_path, 'brokers:\n  b5: {version: "5.2.0"}\ngroups:\n  g: {broker: b5, protocol: grpc, retry_max_times: 3}\n'
    )
    code, out, _ = run_cli(capsys, "schedule", "--group", "g", "--config", cfg, "--format", "json", "--limit", "1")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert len(records) == 2
    assert final_without_settings(records[-1]) == {"final": "DEAD_LETTERED", "topic": "%DLQ%g", "deliveries": 4}


def test_schedule_broadcasting_never_retries(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, "groups:\n  bc: {message_model: broadcasting}\n")
    code, out, _ = run_cli(capsys, "schedule", "--group", "bc", "--config", cfg, "--format", "json")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [final_without_settings(r) for r in records] == [{"final": "DROPPED", "topic": None, "deliveries": 1}]


COUPON_CONFIG = """\
brokers:
  default: {version: "4.9.4", message_delay_level: "1s 5s 10s"}
groups:
  GID_coupon_audit: {max_reconsume_times: 3, delay_level_when_next_consume: 2}
  GID_refund_validator: {max_reconsume_times: 3, delay_level_when_next_consume: -1}
"""


def test_schedule_group_delay_level_2_table(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, COUPON_CONFIG)
    code, out, err = run_cli(capsys, "schedule", "--group", "GID_coupon_audit", "--config", cfg)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Expected path for consumer group 'GID_coupon_audit'",
        "  broker_version                 4.9.4 (4.x rules)",
        "  client_version                 4.9.4",
        "  consumer                       remoting, concurrently, clustering",
        '  message_delay_level            "1s 5s 10s" (3 levels)',
        "  max_reconsume_times            3",
        "  delay_level_when_next_consume  2 (every retry asks level 2)",
        "  retry_queue_nums               1",
        "  consume_timeout_minutes        15",
        "",
        "hop  reconsume_times  delay_level  delay  cumulative  topic",
        "  1                0            2     5s          5s  SCHEDULE_TOPIC_XXXX q1 -> %RETRY%GID_coupon_audit",
        "  2                1            2     5s         10s  SCHEDULE_TOPIC_XXXX q1 -> %RETRY%GID_coupon_audit",
        "  3                2            2     5s         15s  SCHEDULE_TOPIC_XXXX q1 -> %RETRY%GID_coupon_audit",
        "",
        "final: DEAD_LETTERED in %DLQ%GID_coupon_audit after 4 deliveries, 15s of retry delays",
    ]


def test_schedule_group_delay_level_json(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, COUPON_CONFIG)
    code, out, _ = run_cli(capsys, "schedule", "--group", "GID_coupon_audit", "--config", cfg, "--format", "json")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert records[:-1] == [
        {"hop": 1, "reconsume_times": 0, "delay_level": 2, "delay_ms": 5000, "cumulative_ms": 5000,
         "topic": "SCHEDULE_TOPIC_XXXX"},
        {"hop": 2, "reconsume_times": 1, "delay_level": 2, "delay_ms": 5000, "cumulative_ms": 10000,
         "topic": "SCHEDULE_TOPIC_XXXX"},
        {"hop": 3, "reconsume_times": 2, "delay_level": 2, "delay_ms": 5000, "cumulative_ms": 15000,
         "topic": "SCHEDULE_TOPIC_XXXX"},
    ]  # fmt: skip
    final = records[-1]
    assert final_without_settings(final) == {
        "final": "DEAD_LETTERED",
        "topic": "%DLQ%GID_coupon_audit",
        "deliveries": 4,
    }
    settings = final["settings"]
    assert (settings["delay_level_when_next_consume"], settings["max_reconsume_times"]) == (2, 3)
    assert (settings["broker_version"], settings["client_version"]) == ("4.9.4", "4.9.4")
    assert (settings["pop_invisible_time_ms"], settings["invisible_duration_ms"]) == (60000, 15000)
    # -1: the first failure goes straight to the DLQ.
    code, out, _ = run_cli(capsys, "schedule", "--group", "GID_refund_validator", "--config", cfg, "--format", "json")
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 1
    assert final_without_settings(records[0]) == {
        "final": "DEAD_LETTERED",
        "topic": "%DLQ%GID_refund_validator",
        "deliveries": 1,
    }
    assert records[0]["settings"]["delay_level_when_next_consume"] == -1
    code, table, _ = run_cli(capsys, "schedule", "--group", "GID_refund_validator", "--config", cfg)
    assert "  delay_level_when_next_consume  -1 (straight to %DLQ%GID_refund_validator)" in table.splitlines()
    assert (
        table.splitlines()[-1]
        == "final: DEAD_LETTERED in %DLQ%GID_refund_validator after 1 delivery, 0ms of retry delays"
    )


def test_schedule_group_delay_level_is_clamped(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(
        tmp_path,
        'brokers:\n  default: {message_delay_level: "1s 5s"}\n'
        "groups:\n  g: {max_reconsume_times: 2, delay_level_when_next_consume: 4}\n",
    )
    code, table, _ = run_cli(capsys, "schedule", "--group", "g", "--config", cfg)
    lines = table.splitlines()
    assert code == 0
    assert "  delay_level_when_next_consume  4 (every retry asks level 4; the store clamps it to 2)" in lines
    head = table_start(lines)
    assert [line.split()[2:5] for line in lines[head + 1 : head + 3]] == [["2", "(asked", "4)"]] * 2


def test_schedule_pop_and_simple_show_their_invisible_times(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    cfg = write_config(
        tmp_path,
        'brokers:\n  b5: {version: "5.2.0", enable_retry_topic_v2: true}\n'
        "groups:\n"
        '  p: {broker: b5, consume_mode: pop, client_version: "5.3.1", pop_invisible_time_ms: 30000}\n'
        "  s: {broker: b5, consume_mode: simple, invisible_duration_ms: 20000}\n",
    )
    code, table, _ = run_cli(capsys, "schedule", "--group", "p", "--config", cfg)
    lines = table.splitlines()
    assert code == 0
    assert lines[: table_start(lines)] == [
        "Expected path for consumer group 'p'",
        "  broker_version                 5.2.0 (5.x rules)",
        "  client_version                 5.3.1",
        "  consumer                       remoting, pop, clustering",
        "  max_reconsume_times            -1 (16 in effect)",
        "  delay_level_when_next_consume  0 (popDelayLevel[reconsume_times])",
        "  pop_invisible_time_ms          30000",
        "  enable_retry_topic_v2          true (%RETRY%p+<topic>)",
        "",
    ]
    code, table, _ = run_cli(capsys, "schedule", "--group", "s", "--config", cfg)
    lines = table.splitlines()
    assert lines[: table_start(lines)] == [
        "Expected path for consumer group 's'",
        "  broker_version         5.2.0 (5.x rules)",
        "  consumer               grpc, simple, clustering",
        "  retry_max_times        16 (maxAttempts 17)",
        "  invisible_duration_ms  20000",
        "  enable_retry_topic_v2  true (%RETRY%s+<topic>)",
        "",
    ]


def test_schedule_shows_the_pop_revive_switches_of_brokers_that_have_them(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    cfg = write_config(
        tmp_path,
        "brokers:\n"
        '  b55: {version: "5.5.0", pop_consumer_kv_service_enable: true}\n'
        '  b532: {version: "5.3.2"}\n'
        '  b531: {version: "5.3.1"}\n'
        "groups:\n"
        '  p: {broker: b55, consume_mode: pop, client_version: "5.3.1", pop_invisible_time_ms: 60000}\n'
        "  g: {broker: b532, protocol: grpc}\n"
        "  o: {broker: b531, protocol: grpc}\n",
    )
    code, table, _ = run_cli(capsys, "schedule", "--group", "p", "--config", cfg)
    lines = table.splitlines()
    assert code == 0
    assert lines[table_start(lines) - 3 : table_start(lines)] == [
        "  pop_consumer_kv_service_enable   true (PopConsumerService on RocksDB; a revive failing 16 times is "
        "dropped, 14h36m10s after the first failure)",
        "  pop_revive_skip_if_group_absent  true (once the group's config is gone, un-acked pops are dropped)",
        "",
    ]
    code, table, _ = run_cli(capsys, "schedule", "--group", "g", "--config", cfg)
    lines = table.splitlines()
    assert lines[table_start(lines) - 2] == (
        "  pop_consumer_kv_service_enable  false (PopReviveService, checkpoints in the revive log topic)"
    )
    assert "pop_revive_skip_if_group_absent" not in table  # 5.3.2 has no such switch
    code, table, _ = run_cli(capsys, "schedule", "--group", "o", "--config", cfg)
    assert "pop_consumer_kv_service_enable" not in table  # nor 5.3.1 this one


def test_bad_config_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, "groups:\n  g: {max_reconsume_time: 3}\n")
    code, out, err = run_cli(capsys, "schedule", "--group", "g", "--config", cfg)
    assert code == 2 and out == ""
    assert err == f"rocketmq-retry schedule: invalid config {cfg}: groups.g.max_reconsume_time: unknown key\n"


def test_unknown_command_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "frobnicate")
    assert code == 2 and err.startswith("rocketmq-retry: unknown command 'frobnicate'")
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    commands = [line.split()[0] for line in out.splitlines()[3:]]
    assert commands == ["schedule", *cli.COMMANDS, "run"]


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_resolves_to_its_main(command: str) -> None:
    main = cli._main_of(command)
    if isinstance(main, functools.partial):  # compensate: handed Airflow's connections when Airflow is installed
        assert command == "compensate" and main.keywords == {"connections": airflow_connection}
        main = main.func
    assert main.__name__ == "main" and main.__module__.startswith("rocketmq_retry.")


def test_console_script_is_installed() -> None:
    script = pathlib.Path(sys.executable).with_name("rocketmq-retry")
    result = subprocess.run(
        [str(script), "schedule", "--group", "any", "--format", "json"], capture_output=True, text=True, check=True
    )
    assert final_without_settings(json.loads(result.stdout.splitlines()[-1])) == {
        "final": "DEAD_LETTERED",
        "topic": "%DLQ%any",
        "deliveries": 17,
    }


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0ms"), (250, "250ms"), (1000, "1s"), (1500, "1.5s"), (100_000, "1m40s"), (17_140_000, "4h45m40s"),
     (3_600_000, "1h"), (93_600_000, "1d2h")],
)  # fmt: skip
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text
