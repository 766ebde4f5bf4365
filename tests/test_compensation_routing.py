"""The one routing rule, and the one business key: the reconstruction job's ``compensation_handler`` column (Spark)
and the batch service's ``route_for`` (Python) read the same route patterns the same way, as ``fnmatch`` does; the
business key is the column reconstruction writes, and compensation hands it on unchanged."""

from __future__ import annotations

import fnmatch
import itertools
from typing import Any

from rocketmq_retry.compensation.batches import prepare
from rocketmq_retry.compensation.model import DeadLetter
from rocketmq_retry.config import parse_config
from rocketmq_retry.routing import handler_for, matches, pattern_regex, route_for

PATTERNS = ["*", "order-*", "?", "[a-c]*", "[!a-c]x", "[]]", "[!]]", "[", "a[b", "[z-a]", "[!z-a]", "[a-]", "[--0]"]
PATTERNS += ["a.b", "%RETRY%*", "x|y", "*_*", "[^a]", "a\\b", "[a\\]b", "日本*", "a**b", "[!]", "a&&b", "[&&]", ""]
VALUES = ["", "order-events", "a", "b", "d", "dx", "ax", "]", "x", "[", "a[b", "ab", "a.b", "axb", "%RETRY%g"]
VALUES += ["x|y", "a_b", "^", "a\\b", "\\", "日本x", "a\nb", "-", "/", "0", "a&&b", "&", "!", "order-events\n"]


def test_pattern_regex_reads_wildcards_as_fnmatch_does() -> None:
    for pattern, value in itertools.product(PATTERNS, VALUES):
        assert matches(pattern, value) == fnmatch.fnmatchcase(value, pattern), (pattern, value, pattern_regex(pattern))
    assert pattern_regex("order-*") == r"order\-.*"
    assert pattern_regex("[!a-c]?") == "[^a-c]."
    assert matches("*", None) and not matches("?", None)  # an unknown topic is the empty string


def _config(routes: list[dict[str, str]], business_key: dict[str, str] | None = None) -> Any:
    handlers = {name: {"type": "python", "callable": "rocketmq_retry.compensation.handlers:log_only"} for name in "abc"}
    compensation: dict[str, Any] = {"routes": routes, "handlers": handlers}
    if business_key is not None:
        compensation["business_key"] = business_key
    return parse_config({"compensation": compensation})


def test_spark_column_and_batch_service_route_every_case_alike(spark: Any) -> None:
    from rocketmq_retry.jobs.reconstruct.dead_letters import compensation_handler

    # Each pattern once as a topic route and once as a group route, first match wins; no catch-all, and a group
    # ("zz9") that no group pattern matches, so that "no route" is reached too.
    routes = [{"topic": p, "group": "g*", "handler": "a"} for p in PATTERNS if p != "*"]
    routes += [{"topic": "*", "group": p, "handler": "b"} for p in PATTERNS if p != "*"]
    routes += [{"topic": "pay?", "group": "*", "handler": "c"}]
    cfg = _config(routes)
    cases = [(topic, group) for topic in [*VALUES, None, "pays"] for group in ["g1", "h", "zz9", *VALUES[:8]]]
    df = spark.createDataFrame(cases, "original_topic string, consumer_group string")
    got = {
        (r.original_topic, r.consumer_group): r.h
        for r in df.select("*", compensation_handler(cfg).alias("h")).collect()
    }
    expected = {(topic, group): route_for(cfg.compensation, topic, group) for topic, group in cases}
    assert got == expected
    # the table exercises every outcome, so agreeing is not agreeing on "nothing"
    assert set(expected.values()) == {"a", "b", "c", None}
    assert expected[("pays", "zz9")] == "c" and expected[("order-events", "g1")] == "a"
    assert expected[(None, "h")] == "b" and expected[(None, "zz9")] is None


def test_handler_for_the_routes_in_force_decide() -> None:
    cfg = _config([{"topic": "payments", "group": "*", "handler": "a"}])
    assert handler_for(cfg.compensation, "payments", "g") == ("a", "route")
    assert handler_for(cfg.compensation, "orders", "g") == (
        None,
        "no compensation route matches topic 'orders', group 'g'",
    )


BODY_SKU = {"from": "body", "json_path": "$.order.items[1]['sku id']"}
BODY_ID = {"from": "body", "json_path": "$.orderId"}
BUSINESS_KEYS: list[tuple[dict[str, str] | None, list[tuple[str | None, str | None, str | None]]]] = [
    (
        None,  # the default: the first non-empty KEYS entry
        [
            ("ORD-1 trace-9", None, "ORD-1"),
            ("  ORD-2", None, "ORD-2"),
            ("ORD-3  x", None, "ORD-3"),
            (None, '{"orderId": 1}', None),
            ("   ", None, None),
        ],
    ),
    (
        BODY_SKU,
        [
            ("K", '{"order": {"items": [{"sku id": "A"}, {"sku id": "B"}]}}', "B"),
            ("K", "not json", None),
            ("K", '{"order": {"items": []}}', None),
        ],
    ),
    (
        BODY_ID,
        [
            (None, '{"orderId": 12345}', "12345"),
            (None, '{"orderId": true}', "true"),
            (None, '{"orderId": null}', None),
            ("K", None, None),
        ],
    ),
]


def test_business_key_column(spark: Any) -> None:
    from rocketmq_retry.jobs.reconstruct.lifecycles import business_key as business_key_column

    for business_key, cases in BUSINESS_KEYS:
        cfg = _config([{"handler": "a"}], business_key)
        df = spark.createDataFrame(
            [(i, keys, body) for i, (keys, body, _) in enumerate(cases)], "i int, keys string, body string"
        )
        got = [r.k for r in df.orderBy("i").select(business_key_column(cfg).alias("k")).collect()]
        assert got == [expected for _, _, expected in cases], business_key


def test_compensation_hands_on_the_business_key_of_the_column() -> None:
    """The batch service does not decide a key of its own: a KEYS entry that differs from the column is ignored."""
    cfg = _config([{"handler": "a"}])
    letter = DeadLetter(consumer_group="g", msg_id="m", dlq_date="2026-11-20", keys="OTHER", business_key="ORD-9")
    [(prepared, registration)] = prepare(cfg, [letter])
    assert prepared.business_key == registration.business_key == "ORD-9" and registration.handler == "a"
