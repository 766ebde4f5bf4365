"""The per-line screen of the log formats: hostile bytes, head layout, timestamp, statement, category.

Nearly every line of a day is noise (heartbeats, rebalances, route updates), so this stage does the least work a
line needs to be counted (§6.1 layouts, §6.2/§6.3 statements): the message text is cut out only for
lines whose first characters may start a statement, a stats line or the 4.9.4 ``Message{...}`` line (§12); every
other line keeps a timestamp, a category and, when ignored, its ``logger level`` kind. Events are built later,
from the few lines that are events (``ingest.logs._log_events``).

The expressions are Spark SQL text, one ``selectExpr`` per step. Built with the Column API, the same stage took
about 11,000 py4j round trips (2-4 s before Spark ran anything); as text it is one call per step and the steps
stay small enough for whole-stage code generation. Steps are separate projections on purpose: a column that the
next step reads several times (the cleaned line, the separator position) is then computed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.sql import sql_in, sql_str
from rocketmq_retry.logformats import PYTHON_CLIENT
from rocketmq_retry.logformats.statements import PY_SELF_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

C5_FORMATS = ("rocketmq-client-5x", "rocketmq-grpc-client")
PY = sql_str(PYTHON_CLIENT)
BROKER_FORMATS = ("broker", "broker-stats")
SCREEN_COLUMNS = (
    "source",
    "source_file",
    "line_no",
    "group_hint",
    "is_head",
    "ts",
    "cat0",
    "why",
    "raw",
    "lp1_msg",
    "level",
    "logger",
    "msg",
    "thread",
    "bind",
    "cont",
    "line_hash",
)

# Carried unchanged through every step of the screen.
_KEYS = ("source", "source_file", "line_no", "group_hint")
# The one statement whose line may be paired with a later line (4.9.4 L-P1, §12).
LP1 = next(i for i, st in enumerate(P.STATEMENTS) if st.id == "L-P1")
# Per-minute counters whose zero lines are noise (L-C16 client CONSUME_FAILED_TPS, L-B15 TOPIC_PUT_NUMS of a DLQ).
ZERO_COUNTERS = "(" + ", ".join(str(i) for i, st in enumerate(P.STATEMENTS) if st.id in ("L-C16", "L-B15")) + ")"

# Head layouts without their message part: the regex runs over the short text before the separator only.
RX_C4 = P.CLIENT4_HEAD.removesuffix(" - (.*)$") + "$"
RX_CONSOLE = P.CONSOLE_HEAD.removesuffix(" - (.*)$") + "$"
RX_C5 = P.CLIENT5_HEAD.removesuffix("\\] - (.*)$") + "$"
RX_BROKER = P.BROKER_HEAD.removesuffix(" - (.*)$") + "$"
RX_SPRING = P.SPRING_HEAD.removesuffix("\\s*:\\s(.*)$") + "\\s*$"
RX_PYTHON = P.PYTHON_HEAD.removesuffix("\\] (.*)$") + "$"
# the kind of an ignored head line: "logger level" (the file's name when the layout has no logger)
LOGGER_LEVEL_KIND = "concat_ws(' ', coalesce(logger, substring_index(source_file, '/', -1)), coalesce(level, '-'))"
STATS_TAG = r"^\[([A-Z0-9_]+)\] \["
# the logger of a head that matched RX_SPRING: its last token (%-40.40logger pads it with spaces)
SPRING_LOGGER = "substring_index(rtrim(h), ' ', -1)"


def _statement_sql() -> tuple[str, str, str, str]:
    """(probe set, statement index, full-pattern check, statement id) as SQL over ``source``/``msg``/``stmt``."""
    probes = sql_in(sorted({st.prefix[: P.PREFIX_PROBE] for st in P.STATEMENTS}))
    index = " ".join(
        f"WHEN source IN {sql_in(st.formats)} AND startswith(msg, {sql_str(st.prefix)}) THEN {i}"
        for i, st in enumerate(P.STATEMENTS)
    )
    full = " ".join(f"WHEN {i} THEN msg RLIKE {sql_str(st.pattern)}" for i, st in enumerate(P.STATEMENTS))
    ref = " ".join(f"WHEN {i} THEN {sql_str(st.id)}" for i, st in enumerate(P.STATEMENTS))
    return probes, f"CASE {index} END", f"CASE stmt {full} END", f"CASE stmt {ref} END"


def _truncated_sql() -> str:
    """The ids of the statements whose prefix the candidate's whole ``msg`` is the start of, ``' or '``-joined
    ('' when none): the line stops inside the statement's literal prefix."""
    by_id: dict[str, list[str]] = {}
    for st in P.STATEMENTS:
        by_id.setdefault(st.id, []).append(
            f"(source IN {sql_in(st.formats)} AND length(msg) < {len(st.prefix)} "
            f"AND startswith({sql_str(st.prefix)}, msg))"
        )
    ids = ", ".join(f"IF({' OR '.join(conds)}, {sql_str(sid)}, NULL)" for sid, conds in by_id.items())
    return f"IF(length(msg) >= {P.TRUNCATED_MIN_CHARS}, concat_ws(' or ', {ids}), '')"


def binding_sql(message: str) -> str:
    """``named_struct(kind, consumer_group, topic)`` of a binding line (``ingest.patterns.BINDINGS``), else NULL."""
    branches = []
    for b in P.BINDINGS:
        starts = " OR ".join(f"startswith({message}, {sql_str(prefix)})" for prefix in b.prefixes)
        cond = f"source IN {sql_in(b.formats)} AND ({starts}) AND contains({message}, {sql_str(b.require)})"
        value = (
            f"named_struct('kind', {sql_str(b.kind)}, 'consumer_group', {b.group_sql.format(m=message)}, "
            f"'topic', {b.topic_sql.format(m=message)})"
        )
        branches.append(f"WHEN {cond} THEN {value}")
    return "CASE " + " ".join(branches) + " END"


BIND_PROBES = sql_in(sorted({prefix[: P.PREFIX_PROBE] for b in P.BINDINGS for prefix in b.prefixes}))


def _to_utc(local: str, zones: tuple[str, ...]) -> str:
    """``local`` (wall-clock time in the line's ``tz``) as UTC. A zone given as a literal is resolved once per
    task; given as a column, Spark parses the zone name again for every row (about 1 us a line)."""
    known = " ".join(f"WHEN {sql_str(z)} THEN to_utc_timestamp({local}, {sql_str(z)})" for z in zones)
    return f"CASE tz {known} ELSE to_utc_timestamp({local}, tz) END" if zones else f"to_utc_timestamp({local}, tz)"


def screen_log_lines(lines: DataFrame, ds: str, zones: tuple[str, ...] = ()) -> DataFrame:
    """``source, source_file, line_no, line, tz, group_hint`` -> SCREEN_COLUMNS, one row per line.

    ``zones``: the values ``tz`` takes, when the caller knows them (``ingest`` does, from its file list); any other
    zone is still read correctly, only more slowly.

    ``cat0`` is the category before the per-file window (continuation lines are dated there); ``why`` is the
    ignored kind or the quarantine reason; ``msg`` and ``thread`` are kept for event lines only.
    """
    df = _head_of(_screen_hostile(lines))
    df = _line_fields(_head_kind(df), ds, zones)
    out = _categorize(df)
    assert tuple(out.columns) == SCREEN_COLUMNS, out.columns
    return out


def _screen_hostile(lines: DataFrame) -> DataFrame:
    """``hostile`` (the quarantine reason of a line no pattern may run over), ``safe`` (the line, or '' when
    hostile), ``hostile_raw`` and ``sep``, the message separator of the line's layout."""
    cap = P.RAW_CAP
    c5 = sql_in(C5_FORMATS)
    # No pattern ever runs over a hostile line: it is screened to '' and quarantined with its reason.
    # octet_length first: a line of fewer bytes than the limit has fewer characters too, and counting is a scan.
    df = lines.selectExpr(
        *_KEYS,
        "tz",
        "line",
        f"""CASE WHEN octet_length(line) >= {P.MAX_LINE_CHARS} AND length(line) >= {P.MAX_LINE_CHARS}
                   THEN '{P.LONG_LINE_REASON}'
                 WHEN contains(line, char(0)) THEN 'NUL byte in line'
                 WHEN NOT is_valid_utf8(line) THEN 'invalid UTF-8' END AS hostile""",
    )
    return df.selectExpr(
        *_KEYS,
        "tz",
        "hostile",
        "IF(hostile IS NULL, line, '') AS safe",
        f"IF(hostile IS NULL, NULL, substring(make_valid_utf8(substring(line, 1, {cap})), 1, {cap})) AS hostile_raw",
        # message separators per layout (§6.1): 5.x/gRPC "] - ", Spring " : ", 4.x and broker " - "
        # Python SDK "%(asctime)s [%(levelname)s] %(message)s": the head ends at the level's "] "
        f"CASE WHEN source IN {c5} THEN '] - ' WHEN source = 'spring-listener' THEN ' : ' "
        f"WHEN source = {PY} THEN '] ' ELSE ' - ' END AS sep",
    )


def _head_of(df: DataFrame) -> DataFrame:
    """``h``, the head (the text before the first separator; '' when there is none or it holds damage), and
    ``body_byte``, where the message starts."""
    # The text before the first separator, found by bytes: substring_index stops at the separator, where
    # substring() would first count every character of the line (numChars) and then walk to the position.
    df = df.selectExpr(*_KEYS, "tz", "hostile", "hostile_raw", "safe", "sep", "substring_index(safe, sep, 1) AS hx")
    return df.selectExpr(
        *_KEYS,
        "tz",
        "hostile",
        "hostile_raw",
        "safe",
        # 1-based byte position of the message (substring_index gives the whole line when there is no separator)
        "IF(octet_length(hx) < octet_length(safe), octet_length(hx) + octet_length(sep) + 1, NULL) AS body_byte",
        # a head with a control character or U+FFFD in it (random bytes) is no head (docs/ingest.md)
        f"IF(octet_length(hx) < octet_length(safe) AND NOT hx RLIKE {sql_str(P.HEAD_BAD_CHARS)}, hx, '') AS h",
    )


def _head_kind(df: DataFrame) -> DataFrame:
    """``k``, the head layout the line's head is valid in (c4, con, c5, cb, cs), else NULL."""
    c5, brokers = sql_in(C5_FORMATS), sql_in(BROKER_FORMATS)
    logger_ok = sql_str(P.LOGGER_NAME)
    return df.selectExpr(
        "*",
        # the logger must be a Java name (the layouts' \S+ would take any junk there)
        f"""CASE WHEN source = 'rocketmq-client-4x' AND h RLIKE {sql_str(RX_C4)}
                   AND substring_index(h, ' ', -1) RLIKE {logger_ok} THEN 'c4'
                 WHEN source = 'rocketmq-client-4x' AND h RLIKE {sql_str(RX_CONSOLE)}
                   AND regexp_extract(h, {sql_str(RX_CONSOLE)}, 4) RLIKE {logger_ok} THEN 'con'
                 WHEN source IN {c5} AND h RLIKE {sql_str(RX_C5)}
                   AND substring_index(h, '] [', -1) RLIKE {sql_str(P.LOGGER5_NAME)} THEN 'c5'
                 WHEN source IN {brokers} AND h RLIKE {sql_str(RX_BROKER)} THEN 'cb'
                 WHEN source = 'spring-listener' AND h RLIKE {sql_str(RX_SPRING)}
                   AND {SPRING_LOGGER} RLIKE {sql_str(P.SPRING_LOGGER_NAME)} THEN 'cs'
                 WHEN source = {PY} AND h RLIKE {sql_str(RX_PYTHON)} THEN 'py' END AS k""",
    )


def _line_fields(df: DataFrame, ds: str, zones: tuple[str, ...]) -> DataFrame:
    """The head's fields per layout: ``ts`` (UTC), ``level``, ``logger``, and for candidate lines ``msg`` and
    ``thread``; ``bind`` for a line that may bind a topic to a group."""
    probe_len = P.PREFIX_PROBE
    probes = _statement_sql()[0]
    # The message's first characters decide whether its text is needed at all (see module doc).
    # Cut by bytes (the message starts after an ASCII separator): the probes are ASCII, so a message's first
    # PREFIX_PROBE bytes equal a probe exactly when its first PREFIX_PROBE characters do.
    # A Python SDK line of a client object starts with its __str__ (§5.7): its statement starts after that prefix.
    self_prefix = (
        f"octet_length(regexp_extract(CAST(substring(CAST(safe AS BINARY), body_byte) AS STRING), "
        f"{sql_str(PY_SELF_PREFIX)}, 0))"
    )
    df = df.selectExpr(
        *(c for c in df.columns if c != "body_byte"),
        "body_byte AS bind_byte",
        f"IF(k = 'py', body_byte + {self_prefix}, body_byte) AS body_byte",
    )
    df = df.selectExpr(
        "*", f"IF(k IS NULL, NULL, CAST(substring(CAST(safe AS BINARY), body_byte, {probe_len}) AS STRING)) AS probe"
    )
    bind_probe = f"CAST(substring(CAST(safe AS BINARY), bind_byte, {probe_len}) AS STRING)"
    # A stats line starts with an upper-case tag, "[CONSUME_RT] [...": other bracketed messages, such as the
    # 4.x client's "[persistAll] Group: ..." offset flushes (most lines of a client log), are plain noise.
    stats_probe = sql_str(r"^\[[A-Z0-9_]+(\].*)?$")
    # a message shorter than the probe that a statement's prefix starts with: that statement, cut (settled later)
    cut = sql_in(P.TRUNCATED_PROBES)
    cand = (
        f"(probe IN {probes} OR startswith(probe, 'Message{{topi') "
        f"OR (startswith(probe, '[') AND probe RLIKE {stats_probe}) OR probe IN {cut})"
    )
    rs, rc = sql_str(RX_SPRING), sql_str(RX_CONSOLE)
    # A Spring head has passed RX_SPRING (_head_kind): its fields are cut by position and by its spaces, not by
    # running that regex again per field (seven runs a line were most of a Spring Boot host's screen cost).
    # "yyyy-MM-dd[T ]HH:mm:ss.SSS" is 23 characters; Boot 3's zone offset follows up to the first space.
    spring_offset = "IF(substring(h, 24, 1) IN ('Z', '+', '-'), substring_index(substring(h, 24), ' ', 1), '')"
    spring_level = f"substring_index(ltrim(substring(h, 24 + length({spring_offset}))), ' ', 1)"
    cb_rest = "substring(h, 21)"  # after "yyyy-MM-dd HH:mm:ss "
    cb_first = f"nullif(substring_index({cb_rest}, ' ', 1), '')"
    cb_level = f"CASE WHEN {cb_first} IN {sql_in(P.LEVEL_NAMES)} THEN {cb_first} END"
    c5_logger = "substring_index(h, '] [', -1)"
    # the layout's lazy thread group runs from the first "] [" to the last one (the logger holds no "]")
    c5_from_thread = "substring(h, locate('] [', h) + 3)"
    df = df.selectExpr(
        *_KEYS,
        "tz",
        "hostile",
        "hostile_raw",
        "safe",
        "k",
        f"IF(k IS NOT NULL AND {cand}, CAST(substring(CAST(safe AS BINARY), body_byte) AS STRING), NULL) AS msg",
        # the message of a line that may bind a topic to a group (start-up, rebalance and offset-flush lines)
        f"IF(k IS NOT NULL AND {bind_probe} IN {BIND_PROBES}, "
        "CAST(substring(CAST(safe AS BINARY), bind_byte) AS STRING), NULL) AS bmsg",
        # Local wall-clock time per layout. The head regex has already checked the digits' layout, so Spark's own
        # string-to-timestamp cast reads them exactly as the layout's pattern would (null for a month 13 or a
        # 24:00), at a fifth of the cost of a DateTimeFormatter parse; with Spring's zone offset it is the instant.
        f"""CASE k
              WHEN 'c4' THEN try_cast(replace(substring(h, 1, 23), ',', '.') AS TIMESTAMP)
              WHEN 'py' THEN try_cast(replace(substring(h, 1, 23), ',', '.') AS TIMESTAMP)
              WHEN 'c5' THEN try_cast(substring(h, 1, 23) AS TIMESTAMP)
              WHEN 'cb' THEN try_cast(substring(h, 1, 19) AS TIMESTAMP)
              WHEN 'con' THEN try_cast(concat({sql_str(ds + " ")}, substring(h, 1, 12)) AS TIMESTAMP)
              WHEN 'cs' THEN IF({spring_offset} != '', NULL, try_cast(substring(h, 1, 23) AS TIMESTAMP))
            END AS local_ts""",
        f"""IF(k = 'cs' AND {spring_offset} != '',
              try_cast(substring(h, 1, 23 + length({spring_offset})) AS TIMESTAMP), NULL) AS offset_ts""",
        f"""CASE k WHEN 'c4' THEN substring_index(substring(h, 25), ' ', 1)
                   WHEN 'con' THEN regexp_extract(h, {rc}, 3)
                   WHEN 'c5' THEN substring_index(substring(h, 25), ' ', 1)
                   WHEN 'cb' THEN {cb_level}
                   WHEN 'cs' THEN {spring_level}
                   WHEN 'py' THEN substring(h, 26) END AS level""",
        f"""CASE k WHEN 'c4' THEN substring_index(h, ' ', -1)
                   WHEN 'con' THEN regexp_extract(h, {rc}, 4)
                   WHEN 'c5' THEN concat({c5_logger}, ']')
                   WHEN 'cs' THEN {SPRING_LOGGER} END AS logger""",
        f"""IF(k IS NOT NULL AND {cand}, CASE k
                   WHEN 'con' THEN regexp_extract(h, {rc}, 2)
                   WHEN 'c5' THEN substring({c5_from_thread}, 1,
                                            length({c5_from_thread}) - length({c5_logger}) - 3)
                   WHEN 'cb' THEN IF({cb_level} IS NOT NULL,
                                     IF(contains({cb_rest}, ' '), substring_index({cb_rest}, ' ', -1), NULL),
                                     {cb_first})
                   WHEN 'cs' THEN trim(regexp_extract(h, {rs}, 6)) END, NULL) AS thread""",
    )
    return df.selectExpr(
        *(c for c in df.columns if c not in ("tz", "local_ts", "offset_ts", "bmsg")),
        f"coalesce(offset_ts, {_to_utc('local_ts', zones)}) AS ts",
        f"IF(bmsg IS NULL, NULL, {binding_sql('bmsg')}) AS bind",
    )


def _categorize(df: DataFrame) -> DataFrame:
    """SCREEN_COLUMNS: the line's category before the per-file window (``cat0``), ``why``, ``cont``, ``raw``."""
    cap = P.RAW_CAP
    brokers = sql_in(BROKER_FORMATS)
    lp1_prefix = sql_str(P.STATEMENTS[LP1].prefix)
    head = "k IS NOT NULL"
    # (condition, category, why) in order; the first that holds decides. A head line that may be a statement is
    # a "candidate", settled after the window by settle_candidates: the statement table's code stays out of
    # this stage, which every line goes through.
    branches = [
        ("hostile IS NOT NULL", "quarantined", "hostile"),
        (f"{head} AND ts IS NULL", "quarantined", "'invalid timestamp in head line'"),
        (f"{head} AND msg IS NOT NULL", "candidate", "NULL"),
        (head, "ignored", LOGGER_LEVEL_KIND),
        (
            f"safe RLIKE {sql_str(P.DATE_LIKE)} OR safe RLIKE {sql_str(P.TIME_LIKE)}",
            "quarantined",
            "'malformed head line (timestamp, level or layout)'",
        ),
        (
            f"source IN {brokers} AND safe RLIKE {sql_str(P.BROKER_HEADLESS_NOISE)}",
            "ignored",
            "'stdout boot banner (no timestamp)'",
        ),
        (
            f"rtrim(safe) IN {sql_in(P.SPRING_BOOT_BANNER_ART)} OR (startswith(safe, "
            f"{sql_str(P.SPRING_BOOT_STRAP.rstrip())}) AND safe RLIKE {sql_str(P.SPRING_BOOT_STRAP_RE)})",
            "ignored",
            sql_str(P.SPRING_BOOT_BANNER),
        ),
    ]
    df = df.selectExpr(
        *_KEYS,
        f"{head} AS is_head",
        "ts",
        "CASE " + " ".join(f"WHEN {c} THEN {i}" for i, (c, _, _) in enumerate(branches)) + " END AS branch",
        "logger",
        "level",
        "safe",
        "hostile",
        "hostile_raw",
        "msg",
        "thread",
        "bind",
    )
    # The shape of a line without a head (docs/ingest.md): only these are continuation lines; 'text' (a wrapped
    # message) is settled in the per-file window, by what precedes it.
    df = df.selectExpr(
        "*",
        f"""IF(branch IS NOT NULL, NULL, CASE
              WHEN safe RLIKE {sql_str(P.CONT_FRAME)} THEN 'frame'
              WHEN safe RLIKE {sql_str(P.CONT_CAUSE)} THEN 'cause'
              WHEN trim(safe) = '' THEN 'blank'
              WHEN safe RLIKE {sql_str(P.CONT_EXCEPTION)} THEN 'exception'
              WHEN length(safe) <= {P.WRAPPED_MAX_CHARS} AND NOT safe RLIKE {sql_str(P.TEXT_BAD_CHARS)}
                   AND NOT safe RLIKE {sql_str(P.HEAD_PIECE)} THEN 'text'
            END) AS cont""",
    )
    return df.selectExpr(
        *_KEYS,
        "is_head",
        "ts",
        "CASE branch "
        + " ".join(f"WHEN {i} THEN '{cat}'" for i, (_, cat, _) in enumerate(branches))
        + " ELSE IF(cont IS NULL, 'quarantined', 'continuation') END AS cat0",
        "CASE branch "
        + " ".join(f"WHEN {i} THEN {w}" for i, (_, _, w) in enumerate(branches))
        + f" ELSE IF(cont IS NULL, {sql_str(P.NOT_CONTINUATION)}, NULL) END AS why",
        # raw is kept for every line that is or may become quarantined ('text' lines, settled in the window)
        f"""CASE WHEN branch IN (0, 1, 4) THEN coalesce(hostile_raw, substring(safe, 1, {cap}))
                 WHEN branch = 2 OR branch IS NULL THEN substring(safe, 1, {cap}) END AS raw""",
        # the message of an L-P1 line, for the Message{...} line after it (§12, see settle_candidates)
        f"IF(source IN {sql_in(P.STATEMENTS[LP1].formats)} AND startswith(msg, {lp1_prefix}), msg, NULL) AS lp1_msg",
        "IF(branch = 2, level, NULL) AS level",
        "IF(branch = 2, logger, NULL) AS logger",
        "msg",
        "thread",
        # a binding counts only on a line that is what it looks like: a head line with its timestamp
        "IF(branch = 3, bind, NULL) AS bind",
        "cont",
        # the line's own text in event_id (ingest.parse.events_of): hashed only on the few lines that may be events
        "IF(branch = 2, xxhash64(safe), NULL) AS line_hash",
    )


def settle_candidates(df: DataFrame) -> DataFrame:
    """Decide the ``candidate`` lines of ``screen_log_lines``: event, quarantined statement or ignored.

    Adds ``stmt`` (index into STATEMENTS) and ``resend_of_lp1``; rewrites ``cat0``/``why``; ``raw`` is kept for
    quarantined lines only.
    """
    probes, stmt_index, full_ok, stmt_ref = _statement_sql()
    cand = "cat0 = 'candidate'"
    df = df.selectExpr(
        "*",
        f"IF({cand} AND substring(msg, 1, {P.PREFIX_PROBE}) IN {probes}, {stmt_index}, NULL) AS stmt",
        # 4.9.4 L-P1 (§12): "sendKernelImpl exception, resend at once, ..." is followed (after other threads'
        # lines: the 4.x layout has no thread) by a WARN "Message{topic=..., properties={...UNIQ_KEY=...}}" line
        # from the same sendDefaultImpl catch block. That line carries the message id, so it is the PUBLISH_RETRY
        # event and the L-P1 line is counted as ignored. The literal-%s form (5.2.0) has no Message line and keeps
        # the event itself.
        f"""coalesce({cand} AND source = 'rocketmq-client-4x'
                     AND startswith(msg, {sql_str(P.RESEND_MESSAGE_PREFIX)}) AND level = 'WARN', false)
            AS resend_of_lp1""",
    )
    rollup = f"startswith(msg, '[') AND msg RLIKE {sql_str(P.STATS_ROLLUP)}"
    truncated = _truncated_sql()
    rollup_kind = "'stats hour/day roll-up (repeats the minute lines)'"
    lp1_deferred = f"stmt = {LP1} AND source = 'rocketmq-client-4x' AND NOT contains(msg, 'InvokeID: %s')"
    stats_kind = f"concat('stats ', coalesce(nullif(regexp_extract(msg, {sql_str(STATS_TAG)}, 1), ''), '?'))"
    ignored_kind = f"""CASE WHEN startswith(msg, '[')
          THEN {stats_kind}
        WHEN startswith(msg, {sql_str(P.RESEND_MESSAGE_PREFIX)}) THEN 'Message{{...}} rendering'
        ELSE {LOGGER_LEVEL_KIND} END"""
    branches = [
        ("resend_of_lp1", "event", "NULL"),
        (lp1_deferred, "ignored", "'L-P1 line (event recorded on the Message{...} line after it)'"),
        # hour/day roll-ups repeat the minute counters (§6.3 L-B9): noise, not a malformed L-B9
        (rollup, "ignored", rollup_kind),
        # counters printed every minute whatever happened: a zero says nothing a missing line would not
        (f"stmt IN {ZERO_COUNTERS} AND contains(msg, ' Stats In One Minute, SUM: 0 ')", "ignored", stats_kind),
        (f"stmt IS NOT NULL AND {full_ok}", "event", "NULL"),
        ("stmt IS NOT NULL", "quarantined", f"concat('truncated or malformed ', {stmt_ref}, ' statement')"),
        # a line cut inside a statement's prefix (docs/ingest.md "Noise and continuation lines")
        (f"{truncated} != ''", "quarantined", f"concat('truncated ', {truncated}, ' statement')"),
    ]
    kept_raw = ", ".join(str(i) for i, (_, cat, _) in enumerate(branches) if cat == "quarantined")
    df = df.selectExpr(
        *(c for c in df.columns if c not in ("cat0", "why")),
        "IF("
        + cand
        + ", CASE "
        + " ".join(f"WHEN {c} THEN {i}" for i, (c, _, _) in enumerate(branches))
        + " ELSE -1 END, NULL) AS settled",
        "cat0",
        "why",
    )
    return df.selectExpr(
        *(c for c in df.columns if c not in ("cat0", "why", "settled", "raw")),
        "CASE settled "
        + " ".join(f"WHEN {i} THEN '{cat}'" for i, (_, cat, _) in enumerate(branches))
        + " WHEN -1 THEN 'ignored' ELSE cat0 END AS cat0",
        "CASE settled "
        + " ".join(f"WHEN {i} THEN {w}" for i, (_, _, w) in enumerate(branches))
        + f" WHEN -1 THEN {ignored_kind} ELSE why END AS why",
        f"IF(coalesce(settled, -2) IN (-2, {kept_raw}), raw, NULL) AS raw",
    )
