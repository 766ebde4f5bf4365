"""Trace payloads (docs/rocketmq-rules.md §7.2) as Spark SQL text: records end with U+0002, fields are split on U+0001.

The parser is one SQL expression per output column, built here as text and handed to Spark in one call. Built
with the Column API the same expression took ~7,000 py4j round trips per use (the trace file and the trace-topic
dump each use it): 0.5 s per use on a warm JVM, 1.5 s on a cold one, before Spark ran anything.

Delimited, so split with ``split`` on the literal separators (no regex extraction). Each record is split into
its fields once, up front: lambdas are interpreted, not generated, and have no common-subexpression
elimination, so a split inside the per-record lambda would run again for every field read.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_retry.contract import EventType as E
from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.sql import epoch_ms, event_struct, nz, sql_str, when

# Lambda variables are named apart from any column: a column of the same name would be shadowed in the lambda.
_REC, _IDX, _F, _D, _PARSED = "_trace_rec", "_trace_idx", "_trace_f", "_trace_d", "_trace_parsed"
FIELDS = 15  # the longest record (Pub with clientHost, §7.2)


def trace_records_sql(
    body: str, fallback_time: str, source_name: str, event_fields: tuple[tuple[str, str], ...]
) -> str:
    """Every record of one trace payload as ``struct<e, reason, skip, raw>`` (array), SQL over ``body``.

    ``e`` is the record's event struct, ``reason`` why it is bad (null when good), ``skip`` a record type that is
    known and carries no retry evidence. The records go through four passes, each reading the struct of the one
    before: the fields (each array element read once), the record kind (§7.2 field counts), the values that both
    the event and the reason read, then the event and the reason. With everything inline in one pass, the
    interpreted lambda evaluated each kind test again for every field that depends on it (~350 us a line at 10 M
    lines). ``fallback_time`` dates a 7-field SubAfter, which has no time of its own.
    """
    shared = _shared_values(_record_kinds(_record_fields(body)), fallback_time)
    p = _PARSED
    event, reason, known_skip = _event_and_reason(p, source_name, event_fields)
    return (
        f"transform({shared}, {p} -> named_struct('e', {event}, 'reason', {reason}, 'skip', {known_skip}, "
        f"'raw', {p}.d.f.raw))"
    )


def _record_fields(body: str) -> str:
    """Pass 1: each record's raw text, index, field count and fields ``f0``..``f14`` ('' as null)."""
    split_records = (
        f"transform(filter(split({body}, {sql_str(P.TRACE_RECORD_SEP)}), {_REC} -> {_REC} != ''), "
        f"{_REC} -> named_struct('raw', {_REC}, 'fs', split({_REC}, {sql_str(P.TRACE_FIELD_SEP)})))"
    )
    # pass 1: the record's fields, '' as null
    fields = ", ".join(f"'f{i}', {nz(f'try_element_at({_REC}.fs, {i + 1})')}" for i in range(FIELDS))
    return (
        f"transform({split_records}, ({_REC}, {_IDX}) -> named_struct('raw', {_REC}.raw, 'rec', {_IDX}, "
        f"'n', size({_REC}.fs), {fields}))"
    )


def _record_kinds(by_field: str) -> str:
    """Pass 2: which record it is (``pub``, ``sb``, ``sa`` by the §7.2 field counts) and a Pub's success flag."""
    f, n = _fields(_F)
    # false, not null, for an empty type field: such a record is of an unknown type, not one without a time
    pub_ok = f"coalesce({f(0)} = 'Pub' AND {n} BETWEEN 12 AND 15, false)"
    sb_ok = f"coalesce({f(0)} = 'SubBefore' AND {n} = 8, false)"
    sa_ok = f"coalesce({f(0)} = 'SubAfter' AND {n} IN (7, 9), false)"
    pub_success = when((f"{n} = 13", f(12)), (f"{n} >= 14", f(13)))
    return (
        f"transform({by_field}, {_F} -> named_struct('f', {_F}, 'pub', {pub_ok}, 'sb', {sb_ok}, 'sa', {sa_ok}, "
        f"'pub_success', {pub_success}))"
    )


def _shared_values(by_kind: str, fallback_time: str) -> str:
    """Pass 3: the values both the event and the reason read (the record's time and message id)."""
    f, n = _fields(f"{_D}.f")
    pub, sb, sa = f"{_D}.pub", f"{_D}.sb", f"{_D}.sa"
    sa_time = f"coalesce({when((f'{n} = 9', epoch_ms(f(7))))}, {fallback_time})"
    time = when((f"{pub} OR {sb}", epoch_ms(f(1))), (sa, sa_time))
    msg_id = when((f"{pub} OR {sb}", f(5)), (sa, f(2)))
    return f"transform({by_kind}, {_D} -> named_struct('d', {_D}, 'time', {time}, 'msg_id', {msg_id}))"


def _event_and_reason(p: str, source_name: str, event_fields: tuple[tuple[str, str], ...]) -> tuple[str, str, str]:
    """Pass 4, over pass 3's struct at ``p``: (the event struct, why the record is bad, whether it is a known type
    that carries no retry evidence)."""
    d = f"{p}.d"
    g, gn = _fields(f"{d}.f")
    pub, sb, sa = f"{d}.pub", f"{d}.sb", f"{d}.sa"
    codes = "array(" + ", ".join(sql_str(c) for c in P.CONTEXT_CODES) + ")"
    code_name = f"try_element_at({codes}, try_cast({g(6)} AS INT) + 1)"
    published, publish_failed, delivered, consume_ok, consume_failed = (
        sql_str(t) for t in (E.PUBLISHED, E.PUBLISH_FAILED, E.DELIVERED, E.CONSUME_OK, E.CONSUME_FAILED)
    )
    event_type = when(
        (pub, f"CASE WHEN {d}.pub_success = 'true' THEN {published} ELSE {publish_failed} END"),
        (sb, delivered),
        (sa, f"CASE WHEN {g(4)} = 'true' THEN {consume_ok} ELSE {consume_failed} END"),
    )
    request_id = when((sb, g(4)), (sa, g(1)))
    event = event_struct(
        {
            "rec": f"{d}.f.rec",
            "source": source_name,
            "event_time": f"{p}.time",
            "event_type": event_type,
            "consumer_group": when((sb, g(3)), (sa, g(8))),
            "producer_group": when((pub, g(3))),
            "msg_id": f"{p}.msg_id",
            "offset_msg_id": when((f"{pub} AND {gn} >= 14", g(12))),
            "topic": when((pub, g(4))),
            "original_topic": when((pub, g(4))),
            "reconsume_times": when((sb, f"try_cast({g(6)} AS INT)")),
            "keys": when((pub, g(7)), (sb, g(7)), (sa, g(5))),
            "tags": when((pub, g(6))),
            "status_code": when((sa, f"coalesce({code_name}, {g(6)})"), (pub, f"{d}.pub_success")),
            "cost_ms": when((pub, f"try_cast({g(10)} AS BIGINT)"), (sa, f"try_cast({g(3)} AS BIGINT)")),
            "broker": when((pub, g(8))),
            "client_host": when((f"{pub} AND {gn} >= 15", g(14))),
            "detail": f"CASE WHEN {request_id} IS NOT NULL THEN concat('requestId=', {request_id}) END",
        },
        event_fields,
    )
    known_skip = f"coalesce({g(0)} IN ('EndTransaction', 'Recall'), false)"
    reason = when(
        (known_skip, "NULL"),
        (
            f"NOT ({pub} OR {sb} OR {sa})",
            f"concat('unknown trace record type or field count: ', coalesce({g(0)}, ''), ' with ', "
            f"CAST({gn} AS STRING), ' fields')",
        ),
        (f"{p}.time IS NULL", "'trace record without a valid timestamp'"),
        (f"{p}.msg_id IS NULL", "'trace record without msgId'"),
    )
    return event, reason, known_skip


def _fields(record: str) -> tuple[Callable[[int], str], str]:
    """(field i of pass 1's struct at ``record``, its field count)."""
    return (lambda i: f"{record}.f{i}"), f"{record}.n"


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
