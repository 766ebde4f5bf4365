"""The struct a parsed line yields, shared by the classifiers of every family (``ingest.logs``, ``ingest.records``)
and by ``ingest.parse``, which turns classified lines into the output tables.

``LINE_COLUMNS`` is a classifier's output: one row per input line with its category and its ``events`` (an array
of ``EVENT_STRUCT_DDL``). The Column helpers here build those structs and read one ``MessageExt [...]`` /
``Message{...}`` rendering (§6.2). Spark 4 runs in ANSI mode, so every cast on input-derived values uses the
``try_`` form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.jobs.ingest import patterns as P

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The struct a parsed line yields per record: the events columns (data contract) the line itself can tell, plus
# ``rec`` (the record's index in the line); events_of adds event_id, source_file, line_no and instance.
_EVENT_ADDED_BY_EVENTS_OF = ("event_id", "source_file", "line_no", "instance")
EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("rec", "int"),
    *((n, t) for n, t in contract.SCHEMAS["events"] if n not in _EVENT_ADDED_BY_EVENTS_OF),
)
EVENT_STRUCT_DDL = "struct<" + ",".join(f"{n}:{t}" for n, t in EVENT_FIELDS) + ">"
BAD_STRUCT_DDL = "struct<rec:int,raw:string,reason:string>"
LINE_COLUMNS = (
    "source",
    "source_file",
    "line_no",
    "line_date",
    "category",
    "kind",
    "reason",
    "raw",
    "events",
    # an event line's own text hashed (xxhash64 of its bytes), for event_id: null on every other line
    "line_hash",
    "bad",
    "other_date_events",
    "bind",
)
BIND_DDL = "struct<kind:string,consumer_group:string,topic:string>"


# materialises an intermediate that several later steps read; the string says what it is (progress output)
Keep = Callable[["DataFrame", str], "DataFrame"]


def same(df: DataFrame, what: str) -> DataFrame:
    return df


def null_if_empty(c: Column) -> Column:
    """'' (what regexp_extract gives for no match) -> null."""
    return F.when(c != "", c)


def extract(c: Column, rx: str, idx: int = 1) -> Column:
    return null_if_empty(F.regexp_extract(c, rx, idx))


def try_int(c: Column) -> Column:
    return c.try_cast("int")


def event(**fields: Column | None) -> Column:
    """A struct with every event field in EVENT_FIELDS order; missing fields are typed nulls."""
    unknown = set(fields) - {n for n, _ in EVENT_FIELDS}
    if unknown:
        raise ValueError(f"unknown event fields {unknown}")
    cols = []
    for name, dtype in EVENT_FIELDS:
        value = fields.get(name)
        cols.append((value if value is not None else F.lit(None)).cast(dtype).alias(name))
    return F.struct(*cols)


def no_events() -> Column:
    return F.array().cast(f"array<{EVENT_STRUCT_DDL}>")


def no_bad() -> Column:
    return F.array().cast(f"array<{BAD_STRUCT_DDL}>")


def no_line_hash() -> Column:
    return F.lit(None).cast("long").alias("line_hash")


def no_bind() -> Column:
    return F.lit(None).cast(BIND_DDL).alias("bind")


def capped(c: Column) -> Column:
    return F.substring(c, 1, P.RAW_CAP)


def decode_body_bytes(byte_list: Column) -> Column:
    """``123, 34, -17, …`` (Java's ``byte[]`` rendered by ``Arrays.toString``) -> UTF-8 text, or null if not UTF-8."""
    parts = F.split(byte_list, ", ")
    hexed = F.transform(parts, lambda x: F.lpad(F.hex(F.pmod(x.try_cast("int"), F.lit(256))), 2, "0"))
    text = F.unhex(F.array_join(hexed, "")).cast("string")
    return F.when((byte_list != "") & F.is_valid_utf8(text), capped(text))


def message_fields(rendering: Column, props: Column | None = None) -> dict[str, Column]:
    """Fields of one ``MessageExt [...]`` or ``Message{...}`` rendering (§6.2): ids, topic, properties, body.

    ``props``: the rendering's ``properties={...}`` text when the caller has already cut it out (inside a lambda,
    where nothing is computed once for several readers).
    """
    if props is None:
        props = F.regexp_extract(rendering, P.RX_PROPERTIES, 1)
    topic = extract(rendering, P.RX_TOPIC)
    retry_topic = extract(props, P.rx_property("RETRY_TOPIC"))
    return {
        "offset_msg_id": extract(rendering, P.RX_OFFSET_MSG_ID),
        "queue_id": try_int(extract(rendering, P.RX_QUEUE_ID)),
        "reconsume_times": try_int(extract(rendering, P.RX_RECONSUME)),
        "topic": topic,
        # the consumer resets the topic to RETRY_TOPIC before the listener (§2.5); keep both views
        "original_topic": F.coalesce(retry_topic, F.when(~topic.rlike("^%(RETRY|DLQ)%"), topic)),
        "msg_id": extract(props, P.rx_property("UNIQ_KEY")),
        "origin_msg_id": extract(props, P.rx_property("ORIGIN_MESSAGE_ID")),
        "delay_level": try_int(extract(props, P.rx_property("DELAY"))),
        "keys": extract(props, P.rx_property("KEYS")),
        "tags": extract(props, P.rx_property("TAGS")),
        "body": decode_body_bytes(F.regexp_extract(rendering, P.RX_BODY, 1)),
        "broker": extract(rendering, P.RX_BROKER),
        "client_host": extract(rendering, P.RX_BORN_HOST),
    }
