"""Why a consume failed: the exception, its root cause and the application's frame, read from the stack trace that
the client prints after the failure's line (docs/ingest.md "Causes").

Only the statements that hand the failure's Throwable to their logger (``Statement.stack_trace``: L-C1, S-1, G-C1)
have a trace after them. Its lines stay continuation lines in the accounting; nothing here changes a category.
The screen already says what shape each line without a head has (``cont``: frame, cause, blank, exception, wrapped
text) and keeps its text (``raw``), so the per-line pass does no more work: the few lines that need their
neighbours (``ingest.logs``) learn in the per-file window which failure line they follow (``_trace_of``), and one
more window over each failure's lines folds them into the cause, on the failure's own row.

A trace is read as ``Throwable.printStackTrace`` and logback print it: the exception line (``Class: message``, the
message possibly wrapped over more lines), its frames (``\\tat pkg.Class.method(File.java:N)``), then ``Caused by:``
blocks (at column 0; a tab-indented one belongs to a ``Suppressed:`` exception), each with frames or
``... N more``. Everything is built-in Spark functions: no Python UDF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, Window, WindowSpec
from pyspark.sql import functions as F

from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.sql import sql_in, sql_str

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The events columns this module fills (data contract), in contract order.
CAUSE_FIELDS = (
    "exception_class",
    "exception_message",
    "root_cause_class",
    "root_cause_message",
    "app_frame",
    "fingerprint",
)
TRACED = tuple(st for st in P.STATEMENTS if st.stack_trace)
TRACED_INDEXES = tuple(i for i, st in enumerate(P.STATEMENTS) if st.stack_trace)

# Throwable.toString(): the class's binary name, then ": " and the message when it has one (an empty message
# prints "Name: ", which a trimmed line shows as "Name:").
CLASS_LINE = r"^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(: .*|:)?$"
CAUSED_BY = "Caused by: "
# A frame as StackTraceElement.toString() prints it, after an optional class-loader/module prefix
# ("java.base/", "app//") that names no class; logback's packaging data (" ~[app.jar:1.0]") is left out.
FRAME = r"^\s+at (?:[^\s(/]*/)*([^\s(/]+\([^)]*\))"

# Normalising a root-cause message so that failures differing only in their values are one cause: (Java regex,
# mask) in order. Each mask holds no digit and no hex run, so no later rule rewrites an earlier one's mask.
MASKS = (
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<uuid>"),
    (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", "<email>"),
    (r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])", "<ip>"),
    # a quote after a letter is an apostrophe ("can't"), not the start of a quoted value
    (r"(?<!\w)\"[^\"]*\"", '"<str>"'),
    (r"(?<!\w)'[^']*'", "'<str>'"),
    (r"\b0[xX][0-9a-fA-F]+\b", "<hex>"),
    # a hex id: 8 or more hex digits with at least one digit and one letter (message ids, hashes)
    (r"\b(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "<hex>"),
    (r"\d+", "<num>"),
)


def traced_head_sql() -> str:
    """SQL over the screened line: a statement candidate whose stack trace follows it (by its prefix: the
    candidate is settled later, and ``with_causes`` keeps the cause of settled events only)."""
    heads = " OR ".join(f"(source IN {sql_in(st.formats)} AND startswith(msg, {sql_str(st.prefix)}))" for st in TRACED)
    return f"cat0 = 'candidate' AND ({heads})"


def normalised_sql(message: str) -> str:
    """``message`` with the MASKS applied, as SQL."""
    out = message
    for rx, mask in MASKS:
        out = f"regexp_replace({out}, {sql_str(rx)}, {sql_str(mask)})"
    return out


def message_cause(column: str) -> dict[str, Column]:
    """The cause columns of a failure whose line prints only the exception's message (``Statement.message_rx``: the
    Python SDK's ``f"…, {e}"``, §5.7), where no stack trace was read: the message as exception and root-cause
    message, and a fingerprint of the masked message with no class and no frame (the line names neither)."""
    message = F.col(column)
    traced = F.col("_c_fingerprint").isNotNull()
    print_ = F.when(~traced & message.isNotNull(), message)
    fingerprint = F.expr(
        f"substring(sha2(concat_ws(char(0), '', coalesce({normalised_sql(column)}, ''), ''), 256), 1, 32)"
    )
    return {
        "exception_message": F.coalesce(F.col("_c_exception_message"), print_),
        "root_cause_message": F.coalesce(F.col("_c_root_cause_message"), print_),
        "fingerprint": F.coalesce(F.col("_c_fingerprint"), F.when(print_.isNotNull(), fingerprint)),
    }


def neighbour_fields(upto: WindowSpec, by_file: WindowSpec) -> list[Column]:
    """Columns for the per-file window of the lines that need their neighbours (``ingest.logs``), whose values
    there equal those over the whole file:

    ``_trace_of``: the failure line whose trace this line is in: the nearest line at or above that is a head line
    or damage (a line without a head that is no continuation), when that line is a traced statement; -1 when it
    is any other line;
    ``_blk``: the nearest line at or above that is not wrapped text or blank (for a wrapped line, the exception or
    cause line whose message it continues; a message may hold blank lines);
    ``_followed``: the file has a line right after this one (the line after each run of continuation lines is
    one of the window's rows, ``ingest.logs._needy_rows``).
    """
    line = F.col("line_no")
    breaker = F.col("is_head") | F.col("cont").isNull()
    return [
        F.last(F.when(breaker, F.when(F.expr(traced_head_sql()), line).otherwise(F.lit(-1))), ignorenulls=True)
        .over(upto)
        .alias("_trace_of"),
        F.last(F.when(F.col("cont").isNull() | ~F.col("cont").isin("text", "blank"), line), ignorenulls=True)
        .over(upto)
        .alias("_blk"),
        F.coalesce(F.lead(line).over(by_file) == line + 1, F.lit(False)).alias("_followed"),
    ]


def with_causes(df: DataFrame, frameworks: tuple[str, ...], trace_line: Column) -> DataFrame:
    """``df`` (settled needy lines with ``neighbour_fields``) plus ``_c_<field>`` for each of CAUSE_FIELDS: set on
    the rows of traced events, null on every other row.

    ``trace_line``: the row stays a continuation line (a wrapped line that wraps nothing is quarantined, and is no
    part of a trace). ``frameworks``: package prefixes ending in "." (``causes.framework_packages``).

    A trace may be cut by the end of its file (a file collected while written): it is whole when a line follows
    it or it ends with the blank line Spring Boot's ``%wEx`` and the 4.x client print after a trace. Of a cut
    trace the exception counts when a line follows its own (its last line may be cut short), the app frame when
    it is read whole (up to its closing parenthesis), and the root cause is unknown (null): the ``Caused by:`` that
    would have been the last may be missing.
    """
    seg = F.when(F.col("_trace_of") > 0, F.col("_trace_of"))
    df = df.withColumn("_seg", seg)
    # Each failure's lines are a partition of their own; the rows of all other lines share one partition per file,
    # over which every value below is null. The file's rows are already clustered by file (the window before),
    # so this sorts within partitions and shuffles nothing.
    whole = (
        Window.partitionBy("source_file", "_seg")
        .orderBy("line_no")
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )
    line, cont, raw = F.col("line_no"), F.col("cont"), F.col("raw")
    t = F.col("_seg").isNotNull() & (line > F.col("_seg")) & trace_line
    first_line = t & (cont != "blank")  # the exception line: the first that is not blank
    frame = F.when(t & (cont == "frame"), F.regexp_extract(raw, FRAME, 1))
    framework = F.expr(" OR ".join(f"startswith(_frame, {sql_str(p)})" for p in frameworks) or "false")
    cause = t & raw.startswith(CAUSED_BY)
    df = df.withColumn("_frame", frame).withColumn(
        "_app", F.col("_frame").isNotNull() & (F.col("_frame") != "") & ~framework
    )
    folded = df.select(
        "*",
        F.min(F.when(first_line, line)).over(whole).alias("_x_no"),
        F.min_by(raw, F.when(first_line, line)).over(whole).alias("_x_raw"),
        F.min_by(cont, F.when(first_line, line)).over(whole).alias("_x_cont"),
        F.min_by(F.col("_blk"), F.when(first_line, line)).over(whole).alias("_x_blk"),
        F.min(F.when(t & (cont == "frame"), line)).over(whole).alias("_frame1"),
        F.max(F.when(cause, line)).over(whole).alias("_rc_no"),
        F.max_by(raw, F.when(cause, line)).over(whole).alias("_rc_raw"),
        # a message's own blank lines are kept (as logged); one after its last wrapped line is the trace's end
        F.collect_list(
            F.when(
                t & cont.isin("text", "blank"),
                F.struct(
                    line.alias("n"), F.col("_blk").alias("blk"), F.when(cont == "text", raw).otherwise("").alias("raw")
                ),
            )
        )
        .over(whole)
        .alias("_wrapped"),
        F.min_by(F.col("_frame"), F.when(F.col("_app") & t, line)).over(whole).alias("_app_frame"),
        F.max(F.when(t, line)).over(whole).alias("_last"),
        F.max_by((cont == "blank") | F.col("_followed"), F.when(t, line)).over(whole).alias("_whole"),
    )
    return _cause_of_head(folded)


def _cause_of_head(df: DataFrame) -> DataFrame:
    """The ``_c_*`` columns from the folded values, on the failure's own row (null on every other row)."""
    cap = P.RAW_CAP
    traced = "(" + ", ".join(str(i) for i in TRACED_INDEXES) + ")"
    head = f"line_no = _seg AND cat0 = 'event' AND stmt IN {traced}"
    cls_rx = sql_str(CLASS_LINE)

    def wrapped(no: str, blk: str) -> str:
        # the wrapped lines that continue the message of line ``no`` (their block line is ``blk``), in order
        return f"filter(_wrapped, w -> w.blk = {blk} AND w.n > {no})"

    def message(text: str, cls: str, more: str) -> str:
        # Throwable.toString(): "Name" (no message: null), "Name:" (empty), "Name: message"; the wrapped lines
        # joined to it by line ends, as logged
        first = (
            f"CASE WHEN {text} = {cls} THEN NULL WHEN {text} = concat({cls}, ':') THEN '' "
            f"ELSE substring({text}, length({cls}) + 3) END"
        )
        lines = f"concat(array({first}), transform(array_sort({more}), w -> w.raw))"
        joined = f"trim(TRAILING char(10) FROM array_join({lines}, char(10)))"
        return f"IF(({first}) IS NULL, NULL, substring({joined}, 1, {cap}))"

    x_cls = f"nullif(regexp_extract(_x_raw, {cls_rx}, 1), '')"
    # a first line that is wrapped text by its shape (a class not named *Exception, *Error or *Throwable) is the
    # exception line only when a frame follows it
    x_ok = f"{x_cls} IS NOT NULL AND (_x_cont = 'exception' OR (_x_cont = 'text' AND _frame1 > _x_no))"
    x_more = wrapped("_x_no", "_x_blk")
    x_end = f"greatest(_x_no, coalesce(array_max(transform({x_more}, w -> w.n)), 0))"
    rc_text = f"substring(_rc_raw, {len(CAUSED_BY) + 1})"
    rc_cls = f"nullif(regexp_extract({rc_text}, {cls_rx}, 1), '')"
    rc_more = wrapped("_rc_no", "_rc_no")
    # of a cut trace the exception counts when its lines end before the trace's last line, which may be cut
    df = df.selectExpr("*", f"coalesce({head} AND {x_ok} AND (_whole OR {x_end} < _last), false) AS _x_valid")
    df = df.selectExpr(
        "*",
        f"IF(_x_valid, {x_cls}, NULL) AS _c_exception_class",
        f"IF(_x_valid, {message('_x_raw', x_cls, x_more)}, NULL) AS _c_exception_message",
        f"IF(_x_valid AND _rc_no IS NOT NULL, {rc_cls}, NULL) AS _rc_cls",
        f"IF(_x_valid AND _rc_no IS NOT NULL, {message(rc_text, rc_cls, rc_more)}, NULL) AS _rc_msg",
    )
    df = df.selectExpr(
        "*",
        # a cut trace may have lost its last Caused by: its root cause is not known
        "IF(_x_valid AND _whole, IF(_rc_no IS NULL, _c_exception_class, _rc_cls), NULL) AS _c_root_cause_class",
        "IF(_x_valid AND _whole, IF(_rc_no IS NULL, _c_exception_message, _rc_msg), NULL) AS _c_root_cause_message",
        # a frame the regex reads ends with its ")": whole, even on a trace's last line
        "IF(_x_valid, _app_frame, NULL) AS _c_app_frame",
    )
    norm = normalised_sql("_c_root_cause_message")
    df = df.selectExpr(
        "*",
        f"""IF(_c_root_cause_class IS NULL, NULL, substring(sha2(concat_ws(char(0), _c_root_cause_class,
              coalesce({norm}, ''), coalesce(_c_app_frame, '')), 256), 1, 32)) AS _c_fingerprint""",
    )
    return df.drop(*(c for c in df.columns if c.startswith("_") and not c.startswith("_c_")))
