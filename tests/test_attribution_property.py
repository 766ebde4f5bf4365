"""Simulated days of random topologies (several groups on one topic, Spring applications with several containers,
cut and legacy thread names, broadcasting), with a config that names no consumer group on any source, through
ingest and reconstruction: no dead letter is ever put on a group that did not dead-letter that message
(precision exactly 1.0), and every consumer line that names no group is either attributed by evidence or counted.
"""

from __future__ import annotations

import csv
import pathlib
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_retry.contract import partition_dir

pytestmark = [pytest.mark.spark, pytest.mark.slow]

D, D1 = "2026-11-20", "2026-11-21"
FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
SOURCES = [
    {"format": "rocketmq-client-4x", "path": "default-*/logs/rocketmqlogs/rocketmq_client*.log*", "timezone": "UTC"},
    {"format": "spring-listener", "path": "default-*/logs/app.log*", "timezone": "UTC"},
    {"format": "spring-listener", "path": "default-*/logs/stdout.log*", "timezone": "UTC"},
    {"format": "broker", "path": "rmq-broker-*/logs/rocketmqlogs/**/broker*.log*"},
    {"format": "broker-stats", "path": "rmq-broker-*/logs/rocketmqlogs/**/stats*.log*"},
    {"format": "trace", "path": "trace/*.trace*"},
    {"format": "message-dump", "path": "dumps/*.jsonl*"},
]
FAILING = {"ok": 0.4, "always": 0.4, "until": 0.2}


@st.composite
def topologies(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, scenario): 2-4 groups over 1-2 topics of a 4.9.4 broker, the first two always on one topic. Spring
    groups may share an application (one JVM: one pattern, one client, one start day); a client before 4.9.3
    names no group in its threads, and an application started three days ago left no start-up line in the days
    the pipeline reads."""
    n_topics = draw(st.integers(1, 2))
    groups: dict[str, Any] = {}
    scenario: dict[str, Any] = {}
    shared_app = draw(st.booleans())
    app_client = draw(st.sampled_from(["4.9.1", "4.9.4"]))
    app_start = draw(st.sampled_from([None, 3]))
    for i in range(draw(st.integers(2, 4))):
        name = f"GID_g{i}"
        topic = "TOPIC_0" if i < 2 else f"TOPIC_{draw(st.integers(0, n_topics - 1))}"
        spring = draw(st.booleans())
        spec: dict[str, Any] = {"topic": topic, "tags": "t", "key_prefix": "K", "behaviour": FAILING}
        group: dict[str, Any] = {"max_reconsume_times": draw(st.integers(1, 3))}
        if spring:
            spec.update(
                app="spring",
                spring_pattern=draw(st.sampled_from(["boot2-console", "boot3-console", "boot3-file"])),
                client_version=draw(st.sampled_from(["4.9.1", "4.9.4"])),
                started_days_before=draw(st.sampled_from([None, 3])),
            )
            if shared_app:
                spec.update(
                    application="shop",
                    spring_pattern="boot2-console",
                    client_version=app_client,
                    started_days_before=app_start,
                )
            if spec["started_days_before"] is None:
                del spec["started_days_before"]
        elif draw(st.booleans()):
            group["message_model"] = "broadcasting"
            spec["instances"] = 2
        groups[name] = group
        scenario[name] = spec
    config = {
        "timezone": "UTC",
        "brokers": {"default": {"version": "4.9.4", "message_delay_level": FAST}},
        "groups": groups,
        "sources": SOURCES,
    }
    return config, {"groups": scenario}


def true_dead_letters(landing: pathlib.Path) -> set[tuple[str, str]]:
    with (landing / "_truth" / "lifecycles.csv").open(newline="") as fh:
        return {(r["consumer_group"], r["msg_id"]) for r in csv.DictReader(fh) if r["final_state"] == "DEAD_LETTERED"}


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,  # the same estates in every run, so CI is reproducible
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(topology=topologies())
def test_no_dead_letter_on_a_wrong_group_and_every_groupless_line_counted(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, topology: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    from pyspark.sql import functions as F

    from rocketmq_retry.config import parse_config
    from rocketmq_retry.jobs.ingest import job as ingest
    from rocketmq_retry.jobs.ingest.parse import GROUP_EVENTS, LOG_FORMATS
    from rocketmq_retry.jobs.reconstruct import job as reconstruct
    from rocketmq_retry.jobs.reconstruct.attribution import GrpcGroups, read_bindings
    from rocketmq_retry.jobs.reconstruct.events import observations
    from rocketmq_retry.simulate.cli import main as simulate

    config, scenario = topology
    work = tmp_path_factory.mktemp("topology")
    cfg, scn = work / "config.yaml", work / "scenario.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    scn.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    landing, wh = work / "landing", work / "wh"
    args = ["--date", D, "--out", str(landing), "--config", str(cfg), "--scenario", str(scn), "--messages", "40"]
    assert simulate([*args, "--seed", "11", "--quiet", "--noise", "0.05"]) == 0
    for day in (D, D1):
        assert (
            ingest.main(["--date", day, "--landing", str(landing), "--warehouse", str(wh), "--config", str(cfg)]) == 0
        )
        assert reconstruct.main(["--date", day, "--warehouse", str(wh), "--config", str(cfg)]) == 0

    found = {
        (r["consumer_group"], r["msg_id"])
        for day in (D, D1)
        for r in spark.read.parquet(str(partition_dir(wh, "dead_letters", day))).collect()
    }
    truth = true_dead_letters(landing)
    assert found - truth == set(), f"dead letters on a group that did not dead-letter the message: {found - truth}"

    # Every consumer line of D that names no group is attributed by evidence or counted in unattributed/.
    parsed = parse_config(config)
    events = spark.read.parquet(str(partition_dir(wh, "events", D))).withColumn("dt", F.lit(D))
    groupless = events.where(
        F.col("consumer_group").isNull() & F.col("event_type").isin(*GROUP_EVENTS) & F.col("source").isin(*LOG_FORMATS)
    ).count()
    obs = observations(
        events,
        D,
        "UTC",
        tuple(parsed.groups),
        bindings=read_bindings(spark, str(wh), D, 14),
        grpc=GrpcGroups.of(parsed),
    )
    from_logs = obs.where(F.col("source").isin(*LOG_FORMATS))
    attributed = from_logs.where(F.col("attribution").isin("container", "thread", "client-log", "single-group")).count()
    counted = (
        spark.read.parquet(str(partition_dir(wh, "unattributed", D)))
        .where(F.col("source").isin(*LOG_FORMATS))
        .agg(F.coalesce(F.sum("lines"), F.lit(0)).alias("n"))
        .collect()[0]["n"]
    )
    assert attributed + counted == groupless
