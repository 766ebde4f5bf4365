"""Damaged lines in 4.x client and Spring logs are quarantined with their reason, never counted as noise or as a
continuation; the continuation lines real logs have (stack traces, exception lines, wrapped messages) stay so."""

from __future__ import annotations

from typing import Any

import pytest

DS = "2026-11-21"
NOT_CONT = "line without a log head that is not a continuation"
MALFORMED = "malformed head line (timestamp, level or layout)"

CLIENT4 = [
    ("2026-11-21 23:25:01,000 WARN RocketmqClient - updateTopicRouteInfoFromNameServer Exception", "ignored", None),
    (
        "org.apache.rocketmq.client.exception.MQClientException: CODE: 17  DESC: No topic route info",
        "continuation",
        None,
    ),
    ("For more information, please visit the url, http://rocketmq.apache.org/docs/faq/", "continuation", None),
    (
        "\tat org.apache.rocketmq.client.impl.MQClientAPIImpl.getTopicRouteInfo(MQClientAPIImpl.java:1363)",
        "continuation",
        None,
    ),
    ("Caused by: java.net.ConnectException: Connection refused", "continuation", None),
    ("\t... 5 more", "continuation", None),
    ("", "continuation", None),
    # text after a stack frame or a blank line is not the wrapped message of anything
    ("stray text after the trace", "quarantined", NOT_CONT),
    ("2026-11-21 23:25:02,000 INFO RocketmqClient - heartbeat to broker", "ignored", None),
    # a record cut inside its head: the rest of it lands on a line of its own
    ("ketmqClient - send heart beat to broker[broker-a 0 127.0.0.1:10911] success", "quarantined", NOT_CONT),
    ("2026-11-21 23:25:03,000 INFO RocketmqClient - rebalance", "ignored", None),
    ("x" * 100_000, "quarantined", NOT_CONT),  # a 100,000-character line
    ("2026-11-21 23:25:04,000 INFO RocketmqClient - offset flush", "ignored", None),
    ("\x1b\x07\x10}q#\x02\x7f:x", "quarantined", NOT_CONT),  # random bytes that happen to be valid UTF-8
    ("\x00\x00\x00\x00\x00\x00", "quarantined", "NUL byte in line"),  # a NUL run
    ("2026-11-21 23:25:05,000 INFO Rocketmq\x07Client - heartbeat", "quarantined", MALFORMED),  # junk in the head
    ("2026-11-21 23:25:06,000 INFO Rocket\ufffd\ufffdClient - heartbeat", "quarantined", MALFORMED),
    ("2026-11-21 23:25:07,000 INFO RocketmqClient - consume ok", "ignored", None),
    ("See http://rocketmq.apache.org/docs/faq/ for further details.", "continuation", None),  # wrapped message
]
SPRING = [
    ("2026-11-21 23:25:07.000  INFO 12345 --- [main] o.s.b.StartupInfoLogger : Starting App", "ignored", None),
    ("rtupInfoLogger : Started App in 3.2 seconds (process running for 3.9)", "quarantined", NOT_CONT),
    ("07.000  WARN 12345 --- [main] o.s.b.StartupInfoLogger : cut", "quarantined", NOT_CONT),
    ("2026-11-21 23:25:08.000  INFO 12345 --- [main] o.s.b.§§ : junk logger", "quarantined", MALFORMED),
    (
        "2026-11-21 23:25:09.000 ERROR 12345 --- [main] o.s.b.SpringApplication : Application run failed",
        "ignored",
        None,
    ),
    ("java.lang.IllegalStateException: boom", "continuation", None),
    ("\tat com.example.App.main(App.java:10)", "continuation", None),
]


@pytest.fixture(scope="module")
def classified(spark: Any) -> dict[tuple[str, int], tuple[str, str | None]]:
    from rocketmq_retry.jobs.ingest import parse

    rows = [
        (fmt, name, i, line, "UTC", None)
        for fmt, name, lines in (("rocketmq-client-4x", "c4.log", CLIENT4), ("spring-listener", "app.log", SPRING))
        for i, (line, _, _) in enumerate(lines, 1)
    ]
    df = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    out = parse.classify(df, DS, day_zone="UTC").select("source_file", "line_no", "category", "reason").collect()
    return {(r["source_file"], r["line_no"]): (r["category"], r["reason"]) for r in out}


@pytest.mark.spark
@pytest.mark.parametrize(("name", "lines"), [("c4.log", CLIENT4), ("app.log", SPRING)])
def test_damaged_lines_are_quarantined_with_exact_reasons(
    classified: dict[tuple[str, int], tuple[str, str | None]], name: str, lines: list[tuple[str, str, str | None]]
) -> None:
    got = [classified[(name, i)] for i in range(1, len(lines) + 1)]
    assert got == [(cat, reason) for _, cat, reason in lines]


@pytest.mark.spark
def test_a_head_line_between_two_runs_is_counted_once(spark: Any) -> None:
    # A rolled file opening with the end of a trace, then a failure line and its own trace: the failure line is
    # both the line after the opening run and the line before the next one, and was read (and counted) twice.
    from rocketmq_retry.jobs.ingest import parse

    lines = [
        "\tat java.base/java.lang.Thread.run(Thread.java:840)",
        "2026-11-21T23:25:07.000Z  WARN 12345 --- [ConsumeMessageThread_1] o.a.r.s.s.DefaultRocketMQListenerContainer "
        ": consume message failed. messageId:7F0000013EA75FFD2B276C05973E0000, topic:ORDER_CREATED, reconsumeTimes:2",
        "",
        "java.lang.NullPointerException",
        "\tat com.example.A.b(A.java:1)",
        "",
    ]
    df = spark.createDataFrame(
        [("spring-listener", "rolled.log", i, line, "UTC", None) for i, line in enumerate(lines, 1)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    classified = parse.classify(df, DS, day_zone="UTC")
    got = sorted((r["line_no"], r["category"]) for r in classified.select("line_no", "category").collect())
    assert got == [(1, "quarantined"), (2, "event"), *((n, "continuation") for n in range(3, 7))]
    assert parse.events_of(classified).count() == 1
