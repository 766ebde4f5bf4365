"""The cause of a failed delivery (docs/causes.md "Causes"): which evidence wins, and what an unknown cause says is
missing. Literal observations and attempts, exact causes."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_retry.contract import CauseCode, EventType, HopState
from rocketmq_retry.jobs.reconstruct.causes import cause_facts, counter_minutes, failures_of
from rocketmq_retry.logformats import CLIENT_4X, SPRING_LISTENER, TRACE

pytestmark = pytest.mark.spark

G, SIMPLE = "GID_a", "GID_simple"
FP = "0123456789abcdef0123456789abcdef"
T0 = 1_795_000_020_000  # ms, a minute's start
OBS = (
    "consumer_group string, msg_id string, attempt int, kind string, event_type string, status_code string, "
    "source string, fingerprint string, exception_class string, root_cause_class string, root_cause_message string, "
    "app_frame string, event_id string, t_ms bigint, detail string, event_time timestamp"
)
PLAN = (
    "consumer_group string, msg_id string, attempt int, outcome string, failed_ms bigint, sendback_at bigint, "
    "sbf_at bigint, local_at bigint, sched_at bigint, ready_at bigint, wait_ms bigint, prev_next_expected_ms bigint, "
    "prev_ready_at bigint"
)


def ob(
    msg: str, kind: str, et: str, status: str | None, source: str, eid: str, fp: str | None = None, **kw: Any
) -> tuple:
    exc = (
        ("java.lang.IllegalStateException", "java.net.ConnectException", "refused", "a.B.c(B.java:1)")
        if fp
        else (None,) * 4
    )
    t = kw.get("t", T0 + 1_000)
    return (
        kw.get("group", G),
        msg,
        kw.get("attempt", 0),
        kind,
        et,
        status,
        source,
        fp,
        *exc,
        eid,
        t,
        kw.get("detail"),
        None,
    )


def failed(msg: str, fail_t: int | None = T0 + 1_000, group: str = G, **kw: int) -> tuple:
    return (
        group,
        msg,
        0,
        HopState.FAILED,
        fail_t,
        kw.get("sendback_at"),
        None,
        None,
        kw.get("sched_at"),
        kw.get("ready_at"),
        kw.get("wait_ms"),
        None,
        kw.get("prev_ready_at"),
    )


def test_the_most_specific_evidence_names_the_cause(spark: Any) -> None:
    from pyspark.sql import functions as F

    FAIL, E = "FAIL", EventType.CONSUME_FAILED
    obs = spark.createDataFrame(
        [
            # an exception read from the 4.x line's trace, and the L-C2 line 4.x prints after it (§12)
            ob("m1", FAIL, E, "EXCEPTION", CLIENT_4X, "e1", FP),
            ob("m1", FAIL, E, "RETURNNULL", CLIENT_4X, "e1b"),
            # a Spring line whose trace the end of the file cut
            ob("m2", FAIL, E, "EXCEPTION", SPRING_LISTENER, "e2"),
            # the listener returned null (L-C2 alone)
            ob("m3", FAIL, E, "RETURNNULL", CLIENT_4X, "e3"),
            # the trace's SubAfter says FAILED: RECONSUME_LATER
            ob("m4", FAIL, E, "FAILED", TRACE, "e4"),
            # the trace says EXCEPTION, the client log with the trace is not collected
            ob("m5", FAIL, E, "EXCEPTION", TRACE, "e5"),
            # an orderly listener returned SUSPEND_CURRENT_QUEUE_A_MOMENT (L-C3)
            ob("m9", "SUSPEND", EventType.ORDERLY_SUSPENDED, None, CLIENT_4X, "e9"),
            # a consume-timeout line
            ob("m6", "TIMEOUT", EventType.CONSUME_TIMEOUT, None, CLIENT_4X, "e6"),
            # the client's failure counter counted this minute and no line names the failure
            (
                G,
                None,
                None,
                "STAT",
                EventType.CONSUME_FAILED_COUNT,
                None,
                CLIENT_4X,
                None,
                None,
                None,
                None,
                None,
                "c1",
                T0 + 50_000,
                "SUM: 2",
                None,
            ),
        ],
        OBS,
    ).withColumn("event_time", F.timestamp_millis("t_ms"))
    plan = spark.createDataFrame(
        [
            failed("m1"),
            failed("m2"),
            failed("m3"),
            failed("m4"),
            failed("m5"),
            failed("m6"),
            failed("m7", fail_t=None, sendback_at=T0 + 2_000),  # only the broker's send-back, in the counted minute
            failed("m8", fail_t=None, sched_at=T0 + 600_000),
            failed("m9"),  # only the broker's copy, in an uncounted minute
            failed("s1", fail_t=None, group=SIMPLE, sched_at=T0 + 3_000),  # a SimpleConsumer logs nothing
            # only the revived copy (r + 1): its time less the 10 s invisible time, but never before the copy the
            # failed delivery came from (a changed invisible time makes the first too early)
            failed("s2", fail_t=None, group=SIMPLE, ready_at=T0 + 14_000, wait_ms=10_000, prev_ready_at=T0 + 1_000),
            failed("s3", fail_t=None, group=SIMPLE, ready_at=T0 + 8_000, wait_ms=10_000, prev_ready_at=T0 + 1_000),
        ],
        PLAN,
    )
    rows = failures_of(plan, cause_facts(obs), counter_minutes(obs), (SIMPLE,)).collect()
    got = {r["msg_id"]: (r["cause"], r["cause_evidence"], r["source"], r["event_id"]) for r in rows}
    assert got == {
        "m1": (FP, "stack-trace", CLIENT_4X, "e1"),
        "m2": (CauseCode.UNKNOWN, "trace-cut", SPRING_LISTENER, "e2"),
        "m3": (CauseCode.RETURNED_NULL, "client-line", CLIENT_4X, "e3"),
        "m4": (CauseCode.RECONSUME_LATER, "trace-status", TRACE, "e4"),
        "m5": (CauseCode.UNKNOWN, "exception-not-logged", None, None),
        "m6": (CauseCode.CONSUME_TIMEOUT, "client-line", CLIENT_4X, "e6"),
        "m7": (CauseCode.RECONSUME_LATER, "client-counter", None, None),
        "m8": (CauseCode.UNKNOWN, "no-client-evidence", None, None),
        "m9": (CauseCode.RECONSUME_LATER, "client-line", CLIENT_4X, "e9"),
        "s1": (CauseCode.INVISIBLE_TIME_EXPIRED, "invisible-expiry", None, None),
        "s2": (CauseCode.INVISIBLE_TIME_EXPIRED, "invisible-expiry", None, None),
        "s3": (CauseCode.INVISIBLE_TIME_EXPIRED, "invisible-expiry", None, None),
    }
    at = {r["msg_id"]: r["failed_ms"] for r in rows}
    assert (at["s2"], at["s3"]) == (T0 + 4_000, T0 + 1_000)
    exc = next(r for r in rows if r["msg_id"] == "m1")
    assert (exc["exception_class"], exc["root_cause_class"], exc["app_frame"]) == (
        "java.lang.IllegalStateException",
        "java.net.ConnectException",
        "a.B.c(B.java:1)",
    )
    # a code carries no exception columns
    assert all(r["exception_class"] is None for r in rows if r["msg_id"] != "m1")
