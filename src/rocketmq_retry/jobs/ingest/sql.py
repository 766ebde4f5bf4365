"""Small builders of Spark SQL text shared by the ingest modules (screen, record parsers, file catalog).

An expression handed to Spark as text costs one py4j call; built with the Column API it costs one or more per
node (thousands for a record parser), which a cold JVM pays at ~0.2 ms each before any job runs.
"""

from __future__ import annotations


def sql_str(s: str) -> str:
    """A Spark SQL string literal (the parser unescapes backslashes, so regexes keep theirs doubled)."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_in(values: tuple[str, ...] | list[str]) -> str:
    return "(" + ", ".join(sql_str(v) for v in values) + ")"


def nz(x: str) -> str:
    """'' (what an empty field or regexp_extract's no-match gives) -> null."""
    return f"CASE WHEN {x} != '' THEN {x} END"


def epoch_ms(x: str) -> str:
    """Epoch milliseconds (string or number) -> timestamp; out-of-range values (before 2000, after 2100) -> null."""
    ms = f"try_cast({x} AS BIGINT)"
    return f"CASE WHEN {ms} BETWEEN 946684800000 AND 4102444800000 THEN timestamp_millis({ms}) END"


def event_struct(fields: dict[str, str], event_fields: tuple[tuple[str, str], ...]) -> str:
    """``named_struct`` with every event field in order, cast to its type; missing fields are typed nulls."""
    unknown = set(fields) - {n for n, _ in event_fields}
    if unknown:
        raise ValueError(f"unknown event fields {unknown}")
    return "named_struct(" + ", ".join(f"'{n}', CAST({fields.get(n, 'NULL')} AS {t})" for n, t in event_fields) + ")"


def when(*branches: tuple[str, str]) -> str:
    return "CASE " + " ".join(f"WHEN {c} THEN {v}" for c, v in branches) + " END"
