"""Where the earlier dates a reconstruction reads are, and which of them ingest catches up (jobs/ingest/catchup.py,
docs/reconstruction.md "Dates and look-back"). No Spark: folders, a config and the commit manifests' folders."""

from __future__ import annotations

import pathlib

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir
from rocketmq_retry.jobs.ingest.catchup import catch_up, date_ranges, landing_layout, lookback_dates

D = "2026-11-21"
LOGS = {"format": "broker", "path": "*/broker*.log*"}


def test_the_layout_comes_from_the_template_the_path_the_globs_or_a_folder_named_by_the_date() -> None:
    plain = parse_config({"sources": [LOGS]})
    dated_globs = parse_config({"sources": [{"format": "broker", "path": "*/broker.{ds}.log*"}]})
    assert landing_layout(plain, "/l/2026-11-21", D, "/l/{ds}").template == "/l/{ds}"
    assert landing_layout(plain, "/l/{ds}/in", D).template == "/l/{ds}/in"
    assert landing_layout(dated_globs, "/l", D).template == "/l"  # the same root, the globs take the date
    assert landing_layout(plain, "/l/2026-11-21/in", D).template == "/l/{ds}/in"
    undated = landing_layout(plain, "/l/today", D)
    assert undated.template is None and undated.folder("2026-11-20") is None


def test_lookback_dates_cover_the_events_look_back_and_the_attribution_days() -> None:
    config = parse_config({"attribution": {"lookback_days": 1}, "brokers": {"default": {}}})
    assert lookback_dates(config, D) == ["2026-11-20"]  # 9h45m40s and one day of bindings
    assert lookback_dates(config, D, lookback_ms=2 * 86_400_000) == ["2026-11-19", "2026-11-20"]


def test_catch_up_takes_dates_with_files_and_no_events(tmp_path: pathlib.Path) -> None:
    config = parse_config({"attribution": {"lookback_days": 3}, "sources": [LOGS]})
    landing, wh = tmp_path / "landing", tmp_path / "wh"
    for ds in ("2026-11-18", "2026-11-19", "2026-11-20"):
        (landing / ds / "broker-a").mkdir(parents=True)
    (landing / "2026-11-19" / "broker-a" / "broker.log").write_text("x\n")
    (landing / "2026-11-20" / "broker-a" / "broker.log").write_text("x\n")
    partition_dir(wh, "events", "2026-11-20").mkdir(parents=True)  # ingested already
    layout = landing_layout(config, str(landing / "{ds}"), D)
    todo = catch_up(config, layout, str(wh), D)
    # 11-18 has a folder but no file the sources read; 11-20 is committed
    assert (todo.pending, todo.missing) == (["2026-11-19"], [])
    undated = catch_up(config, landing_layout(config, str(landing / "all"), D), str(wh), D)
    assert (undated.pending, undated.missing) == ([], ["2026-11-18", "2026-11-19"])


def test_date_ranges_fold_consecutive_dates() -> None:
    assert date_ranges(["2026-11-06", "2026-11-07", "2026-11-08", "2026-11-10"]) == "2026-11-06..2026-11-08, 2026-11-10"
    assert date_ranges([]) == ""
