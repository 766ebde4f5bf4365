"""The rocketmq-retry console script: schedule output (exact §3.1 values), dispatch, and one-line errors."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from rocketmq_retry import cli
from rocketmq_retry.cli import format_duration, main

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
    assert final == {"final": "DEAD_LETTERED", "topic": "%DLQ%any", "deliveries": 17}


def test_schedule_table_is_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schedule", "--group", "any")
    assert code == 0
    lines = out.splitlines()
    assert lines[2].split() == ["hop", "reconsume_times", "delay_level", "delay", "cumulative", "topic"]
    assert lines[3].split() == ["1", "0", "3", "10s", "10s", "SCHEDULE_TOPIC_XXXX", "q2", "->", "%RETRY%any"]
    assert lines[18].split()[:5] == ["16", "15", "18", "2h", "4h45m40s"]
    assert lines[-1] == "final: DEAD_LETTERED in %DLQ%any after 17 deliveries, 4h45m40s of retry delays"
    # Columns are aligned: every row's "delay" cell ends where the header's does.
    end = lines[2].index("delay ") + len("delay")
    assert all(row[end - 1] != " " for row in lines[3:19])


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
    assert records[-1] == {"final": "DEAD_LETTERED", "topic": "%DLQ%GID_fast", "deliveries": 6}
    code, table, _ = run_cli(capsys, "schedule", "--group", "GID_fast", "--config", cfg)
    assert "3 (asked 7)" in table.splitlines()[7]
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
    assert records[-1] == {"final": "RETRYING_FOREVER", "topic": "<topic>", "deliveries": 3}


def test_schedule_limit_does_not_invent_forever(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    """A path cut by --limit keeps its true final state (retryMaxTimes 3 -> maxAttempts 4, §5.2)."""
    cfg = write_config(
        tmp_path, 'brokers:\n  b5: {version: "5.2.0"}\ngroups:\n  g: {broker: b5, protocol: grpc, retry_max_times: 3}\n'
    )
    code, out, _ = run_cli(capsys, "schedule", "--group", "g", "--config", cfg, "--format", "json", "--limit", "1")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert len(records) == 2
    assert records[-1] == {"final": "DEAD_LETTERED", "topic": "%DLQ%g", "deliveries": 4}


def test_schedule_broadcasting_never_retries(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, "groups:\n  bc: {message_model: broadcasting}\n")
    code, out, _ = run_cli(capsys, "schedule", "--group", "bc", "--config", cfg, "--format", "json")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [{"final": "DROPPED", "topic": None, "deliveries": 1}]


def test_bad_config_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, "groups:\n  g: {max_reconsume_time: 3}\n")
    code, out, err = run_cli(capsys, "schedule", "--group", "g", "--config", cfg)
    assert code == 2 and out == ""
    assert err == f"rocketmq-retry schedule: invalid config {cfg}: groups.g.max_reconsume_time: unknown key\n"


def test_unknown_and_unbuilt_commands(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run_cli(capsys, "frobnicate")
    assert code == 2 and err.startswith("rocketmq-retry: unknown command 'frobnicate'")
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "schedule" in out and "simulate" in out and "run " in out
    # A command whose module is missing says so and exits 3: it never pretends to have run.
    monkeypatch.setitem(cli.DELEGATED, "compensate", ("rocketmq_retry.not_here:main", "claim dead letters", "issue #7"))
    code, out, err = run_cli(capsys, "compensate", "--date", "2026-11-20")
    assert (code, out) == (3, "")
    assert (
        err
        == "rocketmq-retry compensate: 'compensate' (claim dead letters) is not built yet; it arrives with issue #7\n"
    )
    code, out, _ = run_cli(capsys, "--help")
    assert "[not built yet: issue #7]" in out


def test_console_script_is_installed() -> None:
    script = pathlib.Path(sys.executable).with_name("rocketmq-retry")
    result = subprocess.run(
        [str(script), "schedule", "--group", "any", "--format", "json"], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout.splitlines()[-1]) == {
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
