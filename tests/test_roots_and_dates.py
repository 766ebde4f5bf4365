"""One resolver for the deployment's roots and every DAG's path params, one parser for every date: a param or an
argument never escapes its root nor names a partition folder other than ``dt=YYYY-MM-DD``, and looking at the
ledger never creates one."""

from __future__ import annotations

import pathlib

import pytest

from rocketmq_retry.airflow.compensation_tasks import plan_redrive_params
from rocketmq_retry.airflow.settings import PathOutsideRootError
from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.dates import DateError, dates_between, partition_date
from test_compensation_support import dead_letter_rows, write_config, write_partition

DATE = "2026-11-20"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("20261120", "is not a date: expected YYYY-MM-DD"),  # fromisoformat takes it since 3.11
        ("2026-W47-5", "is not a date"),  # so does this ISO week date
        ("../../x", "is not a date"),
        ("2026-11-20/../../x", "is not a date"),
        ("2026-02-30", "does not exist in the calendar"),
        ("", "is not a date"),
    ],
)
def test_one_date_parser_refuses_what_is_not_a_partition_date(value: str, message: str) -> None:
    with pytest.raises(DateError, match=message):
        partition_date(value)


def test_partition_dates_and_ranges() -> None:
    assert partition_date(" 2026-11-20 ") == DATE
    assert dates_between("2026-02-27", "2026-03-01") == ["2026-02-27", "2026-02-28", "2026-03-01"]
    with pytest.raises(DateError, match="the last date comes before the first"):
        dates_between("2026-11-21", DATE)


@pytest.mark.parametrize(
    "argv",
    [
        ["reconstruct", "--date", "20261120", "--warehouse", "wh"],
        ["ingest", "--date", "2026-W47-5", "--landing", "l", "--warehouse", "wh"],
        ["validate", "--date", "../../x", "--warehouse", "wh"],
        ["run", "--date", "20261120", "--landing", "l", "--warehouse", "wh"],
        ["compensation", "list", "--date", "../../x", "--warehouse", "wh"],
        ["compensation", "retry", "--from", "2026-11-20", "--to", "20261121", "--warehouse", "wh"],
        ["compensation", "review", "--date", "2026-02-30", "--warehouse", "wh"],
    ],
)
def test_every_command_refuses_a_bad_date_before_touching_anything(
    argv: list[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = rocketmq_retry(argv)
    except SystemExit as exit_:  # argparse's own usage error
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert "expected YYYY-MM-DD" in err or "does not exist in the calendar" in err
    assert list(tmp_path.iterdir()) == []  # no warehouse, no ledger, no partition folder


def test_read_only_ledger_commands_create_nothing(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    wh.mkdir()
    for argv in (["list", "--date", DATE], ["show", "0A0000010000000000000001"]):
        code = rocketmq_retry(["compensation", *argv, "--warehouse", str(wh)])
        assert code == 2
        assert f"no compensation ledger at {wh}/compensation.db" in capsys.readouterr().err
    assert list(wh.iterdir()) == []


def test_read_only_ledger_commands_do_not_migrate(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    wh = tmp_path / "wh"
    wh.mkdir()
    sqlite3.connect(wh / "compensation.db").close()  # an empty file: a ledger at no revision
    code = rocketmq_retry(["compensation", "list", "--warehouse", str(wh)])
    assert code == 2
    assert "run 'rocketmq-retry compensation migrate' first" in capsys.readouterr().err
    tables = sqlite3.connect(wh / "compensation.db").execute("select name from sqlite_master").fetchall()
    assert tables == []


# --- the re-drive DAG's params: the same roots and rules as the daily DAG's ----------------------------------


@pytest.fixture
def deployment(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, pathlib.Path]:
    """A deployment whose roots come from its config file's ``airflow:`` section only (no root env var)."""
    for env in ("ROCKETMQ_RETRY_WAREHOUSE_ROOT", "ROCKETMQ_RETRY_CONFIG_ROOT", "ROCKETMQ_RETRY_LANDING_ROOT"):
        monkeypatch.delenv(env, raising=False)
    roots = {name: tmp_path / name for name in ("warehouse", "configs", "outside")}
    for path in roots.values():
        path.mkdir()
    deployment = roots["configs"] / "deployment.yaml"
    deployment.write_text(f"airflow:\n  warehouse_root: {roots['warehouse']}\n  config_root: {roots['configs']}\n")
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG", str(deployment))
    write_partition(roots["warehouse"] / "prod", DATE, dead_letter_rows(2, DATE))
    write_config(roots["outside"] / "evil.yaml", {"routes": [{"handler": "log-only"}]})
    (roots["configs"] / "link.yaml").symlink_to(roots["outside"] / "evil.yaml")
    (roots["warehouse"] / "link").symlink_to(roots["outside"])
    return roots


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("warehouse", "../outside", "outside the configured warehouse root"),
        ("warehouse", "{outside}", "outside the configured warehouse root"),
        ("warehouse", "link", "outside the configured warehouse root"),
        ("config", "../outside/evil.yaml", "outside the configured config root"),
        ("config", "{outside}/evil.yaml", "outside the configured config root"),
        ("config", "link.yaml", "outside the configured config root"),
    ],
)
def test_redrive_params_outside_their_roots_are_refused(
    deployment: dict[str, pathlib.Path], param: str, value: str, message: str
) -> None:
    params = {"date_from": DATE, "date_to": DATE, "warehouse": "prod", param: value.format(**deployment)}
    with pytest.raises(PathOutsideRootError, match=message):
        plan_redrive_params(params)
    assert not (deployment["outside"] / "compensation.db").exists()


@pytest.mark.parametrize("param", ["date_from", "date_to"])
def test_redrive_dates_go_through_the_one_parser(deployment: dict[str, pathlib.Path], param: str) -> None:
    with pytest.raises(DateError, match=f"param {param} '../x' is not a date"):
        plan_redrive_params({"date_from": DATE, "date_to": DATE, "warehouse": "prod", param: "../x"})


def test_redrive_reads_the_warehouse_root_from_the_deployments_config(deployment: dict[str, pathlib.Path]) -> None:
    batches = plan_redrive_params({"date_from": DATE, "date_to": DATE, "warehouse": "prod"})
    assert {b["warehouse"] for b in batches} == {str(deployment["warehouse"] / "prod")}
    assert (deployment["warehouse"] / "prod" / "compensation.db").is_file()
