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
_REC, _IDX, _F, _D, _PARSED = "_trace_rec", "_trace_idx", "_trace_f", "_trace_d", "_trace_parsed"
FIELDS = 15  # the longest record (Pub with clientHost, §7.2)


def trace_records_sql(
    body: str, fallback_time: str, source_name: str, event_fields: tuple[tuple[str, str], ...]
) -> str:
    """Every record of one trace payload as ``struct<e, reason, skip, raw>`` (array), SQL over ``body``.

    ``e`` is the record's event struct, ``reason`` why it is bad (null when good), ``skip`` a record type that is
    known and carries no retry evidence. Three passes over the records, each reading the previous one's struct:
    fields (each array element read once), then record kind and the values both the event and the reason use,
    then the event. One pass with everything inline evaluated each kind test once per field that depends on it
    (~350 us a line at 10 M lines); ``fallback_time`` dates a 7-field SubAfter, which has no time of its own.
    """
    split_records = (
        f"transform(filter(split({body}, {sql_str(P.TRACE_RECORD_SEP)}), {_REC} -> {_REC} != ''), "
        f"{_REC} -> named_struct('raw', {_REC}, 'fs', split({_REC}, {sql_str(P.TRACE_FIELD_SEP)})))"
    )
    # pass 1: the record's fields, '' as null
    fields = ", ".join(f"'f{i}', {nz(f'try_element_at({_REC}.fs, {i + 1})')}" for i in range(FIELDS))
    by_field = (
        f"transform({split_records}, ({_REC}, {_IDX}) -> named_struct('raw', {_REC}.raw, 'rec', {_IDX}, "
        f"'n', size({_REC}.fs), {fields}))"
    )

    def f(i: int) -> str:
        return f"{_F}.f{i}"

    n = f"{_F}.n"
    kind = f(0)
    # pass 2: which record it is (§7.2 field counts) and the values more than one output reads
    pub_ok = f"({kind} = 'Pub' AND {n} BETWEEN 12 AND 15)"
    sb_ok = f"({kind} = 'SubBefore' AND {n} = 8)"
    sa_ok = f"({kind} = 'SubAfter' AND {n} IN (7, 9))"
    pub_success = when((f"{n} = 13", f(12)), (f"{n} >= 14", f(13)))
    sa_time = f"coalesce({when((f'{n} = 9', epoch_ms(f(7))))}, {fallback_time})"
    pub, sb, sa = f"{_D}.pub", f"{_D}.sb", f"{_D}.sa"
    time = when((f"{pub} OR {sb}", epoch_ms(f(1))), (sa, sa_time))
    msg_id = when((f"{pub} OR {sb}", f(5)), (sa, f(2)))
    flags = (
        f"transform({by_field}, {_F} -> named_struct('f', {_F}, 'pub', {pub_ok}, 'sb', {sb_ok}, 'sa', {sa_ok}, "
        f"'pub_success', {pub_success}))"
    )
    derived = (
        f"transform({flags}, {_D} -> named_struct('d', {_D}, 'time', "
        f"{time.replace(_F + '.', _D + '.f.')}, 'msg_id', {msg_id.replace(_F + '.', _D + '.f.')}))"
    )
    # pass 3: the event and the reason, from pass 2's struct (_D.d holds the flags, _D.d.f the fields)
    p = _PARSED
    d, g = f"{p}.d", f"{p}.d.f"

    def g_(i: int) -> str:
        return f"{g}.f{i}"

    pub, sb, sa = f"{d}.pub", f"{d}.sb", f"{d}.sa"
    codes = "array(" + ", ".join(sql_str(c) for c in P.CONTEXT_CODES) + ")"
    code_name = f"try_element_at({codes}, try_cast({g_(6)} AS INT) + 1)"
    event_type = when(
        (pub, f"CASE WHEN {d}.pub_success = 'true' THEN 'PUBLISHED' ELSE 'PUBLISH_FAILED' END"),
        (sb, "'DELIVERED'"),
        (sa, f"CASE WHEN {g_(4)} = 'true' THEN 'CONSUME_OK' ELSE 'CONSUME_FAILED' END"),
    )
    request_id = when((sb, g_(4)), (sa, g_(1)))
    event = event_struct(
        {
            "rec": f"{g}.rec",
            "source": source_name,
            "event_time": f"{p}.time",
            "event_type": event_type,
            "consumer_group": when((sb, g_(3)), (sa, g_(8))),
            "producer_group": when((pub, g_(3))),
            "msg_id": f"{p}.msg_id",
            "offset_msg_id": when((f"{pub} AND {g}.n >= 14", g_(12))),
            "topic": when((pub, g_(4))),
            "original_topic": when((pub, g_(4))),
            "reconsume_times": when((sb, f"try_cast({g_(6)} AS INT)")),
            "keys": when((pub, g_(7)), (sb, g_(7)), (sa, g_(5))),
            "tags": when((pub, g_(6))),
            "status_code": when((sa, f"coalesce({code_name}, {g_(6)})"), (pub, f"{d}.pub_success")),
            "cost_ms": when((pub, f"try_cast({g_(10)} AS BIGINT)"), (sa, f"try_cast({g_(3)} AS BIGINT)")),
            "broker": when((pub, g_(8))),
            "client_host": when((f"{pub} AND {g}.n >= 15", g_(14))),
            "detail": f"CASE WHEN {request_id} IS NOT NULL THEN concat('requestId=', {request_id}) END",
        },
        event_fields,
    )
    known_skip = f"({g_(0)} IN ('EndTransaction', 'Recall'))"
    reason = when(
        (known_skip, "NULL"),
        (
            f"NOT ({pub} OR {sb} OR {sa})",
            f"concat('unknown trace record type or field count: ', coalesce({g_(0)}, ''), ' with ', "
            f"CAST({g}.n AS STRING), ' fields')",
        ),
        (f"{p}.time IS NULL", "'trace record without a valid timestamp'"),
        (f"{p}.msg_id IS NULL", "'trace record without msgId'"),
    )
    return (
        f"transform({derived}, {p} -> named_struct('e', {event}, 'reason', {reason}, 'skip', {known_skip}, "
        f"'raw', {g}.raw))"
    )


def trace_good_sql(records: str) -> str:
    """The event structs of ``records`` (a column of ``trace_records_sql``'s array): good, not skipped."""
    p = _PARSED
    return f"transform(filter({records}, {p} -> {p}.reason IS NULL AND NOT {p}.skip), {p} -> {p}.e)"


def trace_bad_sql(records: str) -> str:
    """The bad records of ``records`` as ``struct<rec, raw, reason>`` (raw capped)."""
    p = _PARSED
    return (
        f"transform(filter({records}, {p} -> {p}.reason IS NOT NULL), {p} -> named_struct('rec', {p}.e.rec, "
        f"'raw', substring({p}.raw, 1, {P.RAW_CAP}), 'reason', {p}.reason))"
    )
