"""Trace payloads (reference §7.2) as Spark SQL text: records end with U+0002, fields are split on U+0001.

The parser is one SQL expression per output column, built here as text and handed to Spark in one call. Built
with the Column API the same expression took ~7,000 py4j round trips per use (the trace file and the trace-topic
dump each use it): 0.5 s per use on a warm JVM, 1.5 s on a cold one, before Spark ran anything.

Delimited, so split with ``split`` on the literal separators (no regex extraction). Each record is split into
its fields once, up front: lambdas are interpreted, not generated, and have no common-subexpression
elimination, so a split inside the per-record lambda would run again for every field read.
"""

from __future__ import annotations

from rocketmq_retry.jobs import ingest_patterns as P
from rocketmq_retry.jobs.ingest_sql import epoch_ms, event_struct, nz, sql_str, when

# Lambda variables are named apart from any column: a column of the same name would be shadowed in the lambda.
_REC, _IDX, _PARSED = "_trace_rec", "_trace_idx", "_trace_parsed"


def trace_events_sql(
    body: str, fallback_time: str, source_name: str, event_fields: tuple[tuple[str, str], ...]
) -> tuple[str, str]:
    """(events, bad records) of one trace payload as SQL over ``body``: arrays of event structs and of
    ``struct<rec, raw, reason>``. ``fallback_time`` dates a 7-field SubAfter, which has no time of its own."""
    records = (
        f"transform(filter(split({body}, {sql_str(P.TRACE_RECORD_SEP)}), {_REC} -> {_REC} != ''), "
        f"{_REC} -> named_struct('raw', {_REC}, 'fs', split({_REC}, {sql_str(P.TRACE_FIELD_SEP)})))"
    )
    fs, r = f"{_REC}.fs", f"{_REC}.raw"

    def f(i: int) -> str:
        return nz(f"try_element_at({fs}, {i + 1})")

    n = f"size({fs})"
    kind = f(0)
    pub_ok = f"({kind} = 'Pub' AND {n} BETWEEN 12 AND 15)"
    pub_success = when((f"{n} = 13", f(12)), (f"{n} >= 14", f(13)))
    sb_ok = f"({kind} = 'SubBefore' AND {n} = 8)"
    sa_ok = f"({kind} = 'SubAfter' AND {n} IN (7, 9))"
    codes = "array(" + ", ".join(sql_str(c) for c in P.CONTEXT_CODES) + ")"
    code_name = f"try_element_at({codes}, try_cast({f(6)} AS INT) + 1)"
    sa_time = f"coalesce({when((f'{n} = 9', epoch_ms(f(7))))}, {fallback_time})"
    time = when((f"{pub_ok} OR {sb_ok}", epoch_ms(f(1))), (sa_ok, sa_time))
    msg_id = when((f"{pub_ok} OR {sb_ok}", f(5)), (sa_ok, f(2)))
    event_type = when(
        (pub_ok, f"CASE WHEN {pub_success} = 'true' THEN 'PUBLISHED' ELSE 'PUBLISH_FAILED' END"),
        (sb_ok, "'DELIVERED'"),
        (sa_ok, f"CASE WHEN {f(4)} = 'true' THEN 'CONSUME_OK' ELSE 'CONSUME_FAILED' END"),
    )
    request_id = when((sb_ok, f(4)), (sa_ok, f(1)))
    event = event_struct(
        {
            "rec": _IDX,
            "source": source_name,
            "event_time": time,
            "event_type": event_type,
            "consumer_group": when((sb_ok, f(3)), (sa_ok, f(8))),
            "producer_group": when((pub_ok, f(3))),
            "msg_id": msg_id,
            "offset_msg_id": when((f"{pub_ok} AND {n} >= 14", f(12))),
            "topic": when((pub_ok, f(4))),
            "original_topic": when((pub_ok, f(4))),
            "reconsume_times": when((sb_ok, f"try_cast({f(6)} AS INT)")),
            "keys": when((pub_ok, f(7)), (sb_ok, f(7)), (sa_ok, f(5))),
            "tags": when((pub_ok, f(6))),
            "status_code": when((sa_ok, f"coalesce({code_name}, {f(6)})"), (pub_ok, pub_success)),
            "cost_ms": when((pub_ok, f"try_cast({f(10)} AS BIGINT)"), (sa_ok, f"try_cast({f(3)} AS BIGINT)")),
            "broker": when((pub_ok, f(8))),
            "client_host": when((f"{pub_ok} AND {n} >= 15", f(14))),
            "detail": f"CASE WHEN {request_id} IS NOT NULL THEN concat('requestId=', {request_id}) END",
        },
        event_fields,
    )
    known_skip = f"({kind} IN ('EndTransaction', 'Recall'))"
    reason = when(
        (known_skip, "NULL"),
        (
            f"NOT ({pub_ok} OR {sb_ok} OR {sa_ok})",
            f"concat('unknown trace record type or field count: ', coalesce({kind}, ''), ' with ', "
            f"CAST({n} AS STRING), ' fields')",
        ),
        (f"{time} IS NULL", "'trace record without a valid timestamp'"),
        (f"{msg_id} IS NULL", "'trace record without msgId'"),
    )
    one = f"named_struct('e', {event}, 'reason', {reason}, 'skip', {known_skip}, 'raw', {r})"
    parsed = f"transform({records}, ({_REC}, {_IDX}) -> {one})"
    p = _PARSED
    good = f"transform(filter({parsed}, {p} -> {p}.reason IS NULL AND NOT {p}.skip), {p} -> {p}.e)"
    bad = (
        f"transform(filter({parsed}, {p} -> {p}.reason IS NOT NULL), {p} -> named_struct('rec', {p}.e.rec, "
        f"'raw', substring({p}.raw, 1, {P.RAW_CAP}), 'reason', {p}.reason))"
    )
    return good, bad
