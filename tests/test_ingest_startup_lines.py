"""What every Spring Boot application prints at start is noise, and a known statement cut short is damage.

A Spring Boot application's standard output opens with its banner (``SpringBootBanner``: a blank line, six lines
of art, `` :: Spring Boot ::`` with the version, a blank line) and Tomcat's container logs under a logger name with
brackets (``ContainerBase#getLogName``: ``o.a.c.c.C.[Tomcat].[localhost].[/]`` once abbreviated): neither may be
quarantined. A line whose message stops inside a statement's literal prefix (a collector that cut the line) is
that statement, truncated: it is quarantined as such, never counted as noise.
"""

from __future__ import annotations

from typing import Any

import pytest

DS = "2026-11-21"
BANNER = "Spring Boot start-up banner"
BLANK = "blank line before the file's first head line"
MALFORMED = "malformed head line (timestamp, level or layout)"

SPRING = [
    ("", "ignored", None, BLANK),
    ("  .   ____          _            __ _ _", "ignored", None, BANNER),
    (" /\\\\ / ___'_ __ _ _(_)_ __  __ _ \\ \\ \\ \\", "ignored", None, BANNER),
    ("( ( )\\___ | '_ | '_| | '_ \\/ _` | \\ \\ \\ \\", "ignored", None, BANNER),
    (" \\\\/  ___)| |_)| | | | | || (_| |  ) ) ) )", "ignored", None, BANNER),
    ("  '  |____| .__|_| |_|_| |_\\__, | / / / /", "ignored", None, BANNER),
    (" =========|_|==============|___/=/_/_/_/", "ignored", None, BANNER),
    (" :: Spring Boot ::                (v3.2.5)", "ignored", None, BANNER),
    ("", "ignored", None, BLANK),
    (
        "2026-11-21T23:25:07.000Z  INFO 12345 --- [           main] o.s.b.w.e.tomcat.TomcatWebServer         "
        ": Tomcat initialized with port 8080 (http)",
        "ignored",
        None,
        "o.s.b.w.e.tomcat.TomcatWebServer INFO",
    ),
    (
        "2026-11-21T23:25:08.000Z  INFO 12345 --- [           main] o.a.c.c.C.[Tomcat].[localhost].[/]       "
        ": Initializing Spring embedded WebApplicationContext",
        "ignored",
        None,
        "o.a.c.c.C.[Tomcat].[localhost].[/] INFO",
    ),
    # a blank line after a head line is the %wEx blank of a trace or a message's own: a continuation as before
    ("", "continuation", None, None),
    (
        "2026-11-21T23:25:09.000Z  WARN 12345 --- [essageThread_18] a.r.s.s.DefaultRocketMQListenerContainer "
        ": consume message f",
        "quarantined",
        "truncated S-1 statement",
        None,
    ),
    # the banner again (the application restarted into the same file)
    (" :: Spring Boot ::        (v2.7.18)", "ignored", None, BANNER),
    # an offset without its colon (a pattern's "Z" instead of Boot's "XXX") is a valid head and time
    (
        "2026-11-21T23:25:09.500+0000  INFO 12345 --- [main] o.s.b.StartupInfoLogger : Started App",
        "ignored",
        None,
        "o.s.b.StartupInfoLogger INFO",
    ),
    # a logger with brackets that is not a name is still a damaged head
    ("2026-11-21T23:25:10.000Z  INFO 12345 --- [main] o.a.[Tomcat.§ : x", "quarantined", MALFORMED, None),
]
CLIENT4 = [
    (
        "2026-11-21 23:25:11,000 WARN RocketmqClient - consumeMess",
        "quarantined",
        "truncated L-C1 or L-C2 or L-C3 or L-C14 statement",
        None,
    ),
    ("2026-11-21 23:25:12,000 INFO RocketmqClient - consume ok", "ignored", None, "RocketmqClient INFO"),
    (
        "2026-11-21 23:25:13,000 INFO RocketmqClient - [persistAll] Group: G ClientId: c",
        "ignored",
        None,
        "RocketmqClient INFO",
    ),
    (
        "2026-11-21 23:25:14,000 WARN RocketmqClient - consumeMessage exception: ",
        "quarantined",
        "truncated or malformed L-C1 statement",
        None,
    ),
]
STATS = [
    ("2026-11-21 23:25:15 INFO - [SNDB", "quarantined", "truncated L-B9 or L-B10 statement", None),
    (
        "2026-11-21 23:25:16 INFO - [TOPIC_PUT_NUMS] [ORDERS] Stats In One Minute, SUM: 3 TPS: 0.05 AVGPT: 1.00",
        "ignored",
        None,
        "stats TOPIC_PUT_NUMS",
    ),
]
FILES = (
    ("spring-listener", "stdout.log", SPRING),
    ("rocketmq-client-4x", "rocketmq_client.log", CLIENT4),
    ("broker-stats", "stats.log", STATS),
)


@pytest.fixture(scope="module")
def classified(spark: Any) -> dict[tuple[str, int], tuple[str, str | None, str | None]]:
    from rocketmq_retry.jobs.ingest import parse

    rows = [(fmt, name, i, line, "UTC", None) for fmt, name, lines in FILES for i, (line, *_) in enumerate(lines, 1)]
    df = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    out = parse.classify(df, DS, day_zone="UTC").select("source_file", "line_no", "category", "reason", "kind")
    return {(r["source_file"], r["line_no"]): (r["category"], r["reason"], r["kind"]) for r in out.collect()}


@pytest.mark.spark
@pytest.mark.parametrize(("name", "lines"), [(name, lines) for _, name, lines in FILES])
def test_start_up_lines_are_noise_and_cut_statements_are_truncated(
    classified: dict[tuple[str, int], tuple[str, str | None, str | None]], name: str, lines: list[Any]
) -> None:
    got = [classified[(name, i)] for i in range(1, len(lines) + 1)]
    want = [(cat, reason, kind) for _, cat, reason, kind in lines]
    assert got == want
