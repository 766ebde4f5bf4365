"""The real RocketMQ 4.9.4 logs: ingest, reconstruct, and compare with the sample's ground-truth.csv.

Done-when of issue 5: final state and delivery count match for every consumed, dead-lettered and dropped row.
Broadcasting rows are one per instance in the ground truth; a lifecycle is one per (group, msg_id), so the
instances' deliveries are summed before comparing.
"""

from __future__ import annotations

import csv
import pathlib
from collections import defaultdict
from typing import Any

import pytest

from rocketmq_retry.contract import partition_dir

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATE = "2026-11-21"
FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
# The sample's broker table and client settings (samples README, "Scenarios").
SAMPLE_CONFIG = f"""
timezone: Asia/Shanghai
brokers:
  default: {{version: "4.9.4", message_delay_level: "{FAST}"}}
groups:
  GID_inventory_reserve: {{max_reconsume_times: 3}}
  GID_ledger_writer: {{max_reconsume_times: 3}}
  GID_carrier_gateway: {{max_reconsume_times: 3}}
  GID_invoice_mailer: {{max_reconsume_times: 3}}
  GID_refund_validator: {{max_reconsume_times: 3}}
  GID_coupon_audit: {{max_reconsume_times: 3}}
  GID_cache_node: {{max_reconsume_times: 3, message_model: broadcasting}}
  GID_order_state_machine: {{max_reconsume_times: 2, consume_mode: orderly}}
  GID_welcome_email: {{max_reconsume_times: 2}}
  GID_crm_sync: {{max_reconsume_times: 2}}
"""
STATE = {"CONSUMED": "CONSUMED", "DLQ": "DEAD_LETTERED", "DROPPED_BROADCAST": "DROPPED"}


def ground_truth(samples: pathlib.Path) -> dict[tuple[str, str], tuple[str, int, str]]:
    """(group, msgId) -> (final state, deliveries, scenario) for the consumed, dead-lettered and dropped rows."""
    acc: dict[tuple[str, str], list[Any]] = defaultdict(lambda: ["", 0, ""])
    with (samples / "ground-truth.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["final_state"] not in STATE:
                continue
            key = (row["consumer_group"], row["msgId_uniqKey"])
            # a broadcasting lifecycle spans the instances: DROPPED when any instance dropped it
            if acc[key][0] != "DROPPED":
                acc[key][0] = STATE[row["final_state"]]
            acc[key][1] += int(row["deliveries_observed"])
            acc[key][2] = row["scenario"]
    return {k: (v[0], v[1], v[2]) for k, v in acc.items()}


def compare(
    truth: dict[tuple[str, str], tuple[str, int, str]], got: dict[tuple[str, str], tuple[str, int]]
) -> list[str]:
    problems = []
    for key, (state, deliveries, scenario) in sorted(truth.items()):
        mine = got.get(key)
        if mine != (state, deliveries):
            problems.append(f"{scenario} {key}: truth {(state, deliveries)}, reconstructed {mine}")
    return problems


@pytest.mark.spark
def test_real_sample_matches_ground_truth(spark: Any, samples_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.reconstruct import job as reconstruct

    wh = tmp_path / "wh"
    cfg = tmp_path / "sample.yaml"
    cfg.write_text((ROOT / "tests" / "data" / "samples-4.9.4.yaml").read_text() + SAMPLE_CONFIG.replace(
        "timezone: Asia/Shanghai\n", ""))  # fmt: skip
    assert (
        ingest.main(["--date", DATE, "--landing", str(samples_dir), "--warehouse", str(wh), "--config", str(cfg)]) == 0
    )
    assert reconstruct.main(["--date", DATE, "--warehouse", str(wh), "--config", str(cfg)]) == 0
    rows = spark.read.parquet(str(partition_dir(wh, "lifecycles", DATE))).collect()
    got = {(r["consumer_group"], r["msg_id"]): (r["final_state"], r["deliveries"]) for r in rows}
    truth = ground_truth(samples_dir)
    assert len(truth) == 27
    assert compare(truth, got) == []
