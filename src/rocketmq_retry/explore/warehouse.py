"""``Explorer``: DuckDB over the committed warehouse partitions plus the ledger, read only, without Spark.

Where the files are comes only from ``contract.partition_dir`` / ``jobs.partitions.committed`` with a date that
went through the one date parser, so no parameter names a path; every value from a request reaches SQL as a bound
parameter. Each call runs on its own DuckDB cursor, so one Explorer serves concurrent requests.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import pathlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.config import Config, load_config
from rocketmq_retry.dates import DateError, partition_date
from rocketmq_retry.explore.ledger import STATE_COLUMNS, LedgerReader
from rocketmq_retry.explore.model import (
    COMPENSATION_STATES,
    NOT_COMPENSABLE,
    NOT_REGISTERED,
    AnomalyExample,
    AnomalySummary,
    DailyRate,
    DeadLetterFilter,
    DeadLetterPage,
    DeadLetterRow,
    ExploreError,
    FileNotRead,
    FoundMessage,
    GroupStates,
    GroupView,
    IngestAccounting,
    LevelCount,
    NotFound,
    ReconciliationGap,
    RunOverview,
    Story,
    UnattributedLines,
    ValidationStatus,
    _plain,
)
from rocketmq_retry.jobs.partitions import committed

# jobs/reconciliation.CAUSES, spelled again because that module imports pyspark (seconds to load in a web
# worker); tests/test_explore_overview.py holds the two equal.
CAUSES = {
    "unattributed": "lines of this group's topic are not attributed (see unattributed/)",
    "no-counter": "no counter line for this minute although the collected sources show traffic",
    "not-collected": "the counter shows more than the collected sources: a source (client log, trace, dump) "
    "is not collected",
    "unexplained": "no known cause",
}
MAX_PAGE_SIZE = 1000
LEDGER_CACHE_RANGES = 8
MAX_QUERY_CHARS = 512
EXAMPLES_PER_ANOMALY = 5
# Hops that wait before the next delivery: what "a retry at a level" is in the transitions (docs/reconstruction.md
# "Hops"); the level is null for the waits that have none.
RETRY_HOPS = ("SCHEDULED", "LOCAL_RETRY", "SUSPENDED", "INVISIBLE")
_DUCK_TYPES = {
    "string": "VARCHAR",
    "timestamp": "TIMESTAMPTZ",
    "bigint": "BIGINT",
    "int": "INTEGER",
    "boolean": "BOOLEAN",
    "array<string>": "VARCHAR[]",
    "map<string,bigint>": "MAP(VARCHAR, BIGINT)",
}
DEAD_LETTER_CSV_COLUMNS = (
    "date", "msg_id", "consumer_group", "topic", "tag", "keys", "business_key", "reconsume_times", "dlq_at",
    "dlq_inferred", "attribution", "compensable", "review_reason", "compensation_state", "attempts", "handler",
    "last_attempt_at", "last_error",
)  # fmt: skip


def _utc(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _csv_cell(value: Any) -> Any:
    """One CSV field, as ``to_dict`` spells it (UTC times ``…Z``, attribution joined by ``+``), without building
    a dataclass per row: the export of 100,000 rows is the one place where that cost shows."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return _plain(value)
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    return value


def _opt_date(value: object, what: str) -> str | None:
    return None if value is None or str(value).strip() == "" else partition_date(value, what=what)


def _clean(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    text = str(value)
    if text.strip() == "":
        return None
    if len(text) > MAX_QUERY_CHARS:
        raise ExploreError(f"{what} is {len(text)} characters long; at most {MAX_QUERY_CHARS} are searched")
    return text


class Explorer:
    """Read-only views of one warehouse (see the package docstring for the calls)."""

    def __init__(self, warehouse: pathlib.Path, config: Config) -> None:
        self.warehouse = warehouse
        self.config = config
        self.ledger = LedgerReader(config, warehouse)
        self._db = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        # (date_from, date_to) -> (ledger fingerprint, its rows as an Arrow table), reused while nothing changed
        self._ledger_cache: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}

    def close(self) -> None:
        self.ledger.close()
        self._db.close()

    def __enter__(self) -> Explorer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- plumbing ---------------------------------------------------------------------------------------------

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cur = self._db.cursor()
        cur.execute("SET TimeZone = 'UTC'")
        return cur

    def _partition(self, table: str, ds: str) -> pathlib.Path | None:
        """The committed partition of ``table`` for ``ds`` (None when never written), refused if it resolves
        outside the warehouse (a link planted under the root)."""
        path = committed(self.warehouse, table, partition_date(ds, what=f"{table} date"))
        if not path.is_dir():
            return None
        if not path.resolve().is_relative_to(self.warehouse.resolve()):
            raise ExploreError(f"{path} resolves outside the warehouse {self.warehouse}; not read")
        return path

    def _files(self, table: str, ds: str) -> list[str]:
        path = self._partition(table, ds)
        if path is None:
            return []
        return sorted(str(p) for p in path.glob("*.parquet") if not p.name.startswith(("_", ".")))

    def _empty(self, table: str) -> str:
        cols = ", ".join(f"CAST(NULL AS {_DUCK_TYPES[t]}) AS {n}" for n, t in contract.SCHEMAS[table])
        return f"SELECT CAST(NULL AS VARCHAR) AS dt, {cols} WHERE false"

    def _scan(self, table: str, dates: Sequence[str]) -> tuple[str, list[Any]]:
        """SQL (and its parameters) of ``table`` over ``dates`` with a ``dt`` column; the contract's columns
        when no partition exists."""
        parts: list[str] = []
        params: list[Any] = []
        for ds in dates:
            files = self._files(table, ds)
            if files:
                parts.append(
                    "SELECT CAST(? AS VARCHAR) AS dt, * "
                    "FROM read_parquet(?, union_by_name = true, hive_partitioning = false)"
                )
                params += [ds, files]
        if not parts:
            return self._empty(table), []
        return " UNION ALL BY NAME ".join(parts), params

    def _query(
        self, sql: str, params: Sequence[Any] = (), cur: duckdb.DuckDBPyConnection | None = None
    ) -> list[dict[str, Any]]:
        own = cur is None
        cur = cur or self._cursor()
        try:
            result = cur.execute(sql, list(params))
            names = [d[0] for d in result.description]
            return [dict(zip(names, row, strict=True)) for row in result.fetchall()]
        except duckdb.Error as exc:
            raise ExploreError(f"cannot read the warehouse {self.warehouse}: {exc}") from None
        finally:
            if own:
                cur.close()

    def _range(self, date_from: object, date_to: object) -> tuple[str | None, str | None]:
        first, last = _opt_date(date_from, "from date"), _opt_date(date_to, "to date")
        if first and last and last < first:
            raise DateError(f"date range {first}..{last} is empty: the last date comes before the first")
        return first, last

    def _dates_in(self, first: str | None, last: str | None, table: str = "lifecycles") -> list[str]:
        return [d for d in self.dates(table) if (first is None or d >= first) and (last is None or d <= last)]

    @staticmethod
    def _scope(first: str | None, last: str | None) -> str:
        if first and first == last:
            return f"date {first}"
        if first or last:
            return f"dates {first or '…'}..{last or '…'}"
        return "every date"

    # --- dates ------------------------------------------------------------------------------------------------

    def dates(self, table: str = "lifecycles") -> list[str]:
        """Dates with a committed partition of ``table`` (default: reconstructed dates), newest first."""
        if table not in contract.SCHEMAS:
            raise ExploreError(f"no table {table!r} in the warehouse contract")
        root = self.warehouse / table
        if not root.is_dir():
            return []
        found: list[str] = []
        for child in root.iterdir():
            if not child.name.startswith("dt="):
                continue
            try:
                ds = partition_date(child.name[3:])
            except DateError:
                continue  # not a partition this project writes
            try:
                if self._partition(table, ds) is not None:
                    found.append(ds)
            except ExploreError:
                continue  # a link out of the warehouse is never listed; asking for its date names it
        return sorted(found, reverse=True)

    # --- run overview -----------------------------------------------------------------------------------------

    def run_overview(self, date: object) -> RunOverview:
        ds = partition_date(date, what="date")
        if self._partition("lifecycles", ds) is None:
            raise NotFound(
                f"no lifecycles for {ds}: {contract.partition_dir(self.warehouse, 'lifecycles', ds)} does not exist "
                f"(run `rocketmq-retry reconstruct --date {ds}`)"
            )
        cur = self._cursor()
        try:
            life, lp = self._scan("lifecycles", [ds])
            dead, dp = self._scan("dead_letters", [ds])
            states = self._query(
                f"SELECT consumer_group, final_state, count(*) AS n FROM ({life}) GROUP BY ALL", lp, cur
            )
            letters = {
                r["consumer_group"]: r
                for r in self._query(
                    "SELECT consumer_group, count(*) AS n, count(*) FILTER (WHERE NOT coalesce(compensable, false)) "
                    f"AS held FROM ({dead}) GROUP BY ALL",
                    dp,
                    cur,
                )
            }
            anomalies = self._query(
                "SELECT code, count(*) AS n, "
                "list({'g': consumer_group, 'm': msg_id} ORDER BY consumer_group, msg_id) AS ex FROM "
                f"(SELECT unnest(anomalies) AS code, consumer_group, msg_id FROM ({life})) GROUP BY code ORDER BY code",
                lp,
                cur,
            )
            recon, rp = self._scan("reconciliation", [ds])
            gaps = self._query(
                f"SELECT * FROM ({recon}) WHERE cause IS NOT NULL ORDER BY consumer_group, minute", rp, cur
            )
            unat, up = self._scan("unattributed", [ds])
            unplaced = self._query(f"SELECT * FROM ({unat}) ORDER BY source_file, event_type, topic, reason", up, cur)
            ingest = self._ingest(ds, cur)
        finally:
            cur.close()

        by_group: dict[str, dict[str, int]] = {}
        for r in states:
            counts = by_group.setdefault(r["consumer_group"], dict.fromkeys(contract.FINAL_STATES, 0))
            counts[r["final_state"] or contract.UNKNOWN] += int(r["n"])
        groups = []
        for g in sorted(set(by_group) | set(letters), key=str):
            counts = by_group.get(g, dict.fromkeys(contract.FINAL_STATES, 0))
            total = sum(counts.values())
            dl = counts[contract.DEAD_LETTERED]
            groups.append(
                GroupStates(
                    consumer_group=g,
                    lifecycles=total,
                    final_states=counts,
                    dead_lettered=dl,
                    dead_letter_rate=dl / total if total else 0.0,
                    dead_letters=int(letters.get(g, {}).get("n", 0)),
                    held_for_review=int(letters.get(g, {}).get("held", 0)),
                )
            )
        totals = {s: sum(g.final_states[s] for g in groups) for s in contract.FINAL_STATES}
        return RunOverview(
            date=ds,
            lifecycles=sum(totals.values()),
            final_states=totals,
            groups=groups,
            dead_letters=sum(g.dead_letters for g in groups),
            held_for_review=sum(g.held_for_review for g in groups),
            anomalies=[
                AnomalySummary(
                    code=r["code"],
                    lifecycles=int(r["n"]),
                    examples=[AnomalyExample(e["g"], e["m"]) for e in r["ex"][:EXAMPLES_PER_ANOMALY]],
                )
                for r in anomalies
            ],
            reconciliation_gaps=[
                ReconciliationGap(
                    consumer_group=r["consumer_group"],
                    minute=_utc(r["minute"]),  # type: ignore[arg-type]
                    **{k: _int(r.get(k)) for k in contract.columns("reconciliation")[2:-1]},
                    cause=r["cause"],
                    cause_text=CAUSES.get(r["cause"]),
                )
                for r in gaps
            ],
            unattributed=[
                UnattributedLines(
                    source=r["source"],
                    source_file=r["source_file"],
                    instance=r["instance"],
                    event_type=r["event_type"],
                    topic=r["topic"],
                    reason=r["reason"],
                    reason_text=contract.UNATTRIBUTED_REASONS.get(r["reason"] or ""),
                    candidates=list(r["candidates"] or []),
                    fix=r["fix"],
                    lines=int(r["lines"] or 0),
                    example_line_no=_int(r["example_line_no"]),
                )
                for r in unplaced
            ],
            unattributed_lines=sum(int(r["lines"] or 0) for r in unplaced),
            ingest=ingest,
            validation=self._validation(ds),
        )

    def _ingest(self, ds: str, cur: duckdb.DuckDBPyConnection) -> IngestAccounting | None:
        if self._partition("ingest_report", ds) is None:
            return None
        rep, params = self._scan("ingest_report", [ds])
        rows = self._query(f"SELECT * FROM ({rep}) ORDER BY source_file", params, cur)

        def total(col: str) -> int:
            return sum(int(r.get(col) or 0) for r in rows)

        def merged(col: str) -> dict[str, int]:
            out: dict[str, int] = {}
            for r in rows:
                for k, v in (r.get(col) or {}).items():
                    out[k] = out.get(k, 0) + int(v or 0)
            return dict(sorted(out.items()))

        return IngestAccounting(
            files=len(rows),
            lines_read=total("lines_read"),
            events=total("events"),
            event_rows=total("event_rows"),
            ignored=total("ignored"),
            continuation=total("continuation"),
            quarantined=total("quarantined"),
            other_date=total("other_date"),
            quarantined_by_reason=merged("quarantined_by_reason"),
            ignored_by_kind=merged("ignored_by_kind"),
            files_not_read=[
                FileNotRead(r["source_file"], r["file_status"], r.get("file_reason"))
                for r in rows
                if (r.get("file_status") or "read") != "read"
            ],
        )

    def _validation(self, ds: str) -> ValidationStatus | None:
        site = self.config.validation.docs_dir
        result = site / "runs" / f"dt={ds}.json"
        try:
            data = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        warehouse = data.get("warehouse")
        if not warehouse or pathlib.Path(str(warehouse)).resolve() != self.warehouse.resolve():
            return None  # that date was validated in another warehouse
        return ValidationStatus(
            success=data.get("success"),
            evaluated=data.get("evaluated"),
            critical_failures=list(data.get("critical_failures") or []),
            warning_failures=list(data.get("warning_failures") or []),
            docs_page=f"runs/dt={ds}.html",
            docs_root=str(site),
        )

    # --- dead letters -----------------------------------------------------------------------------------------

    def _letters_sql(self, dates: Sequence[str], filters: DeadLetterFilter, with_ledger: bool) -> tuple[str, list[Any]]:
        dead, params = self._scan("dead_letters", dates)
        state = (
            f"CASE WHEN l.state IS NOT NULL THEN l.state WHEN coalesce(d.compensable, false) THEN '{NOT_REGISTERED}' "
            f"ELSE '{NOT_COMPENSABLE}' END"
        )
        if not with_ledger:
            state = f"CASE WHEN coalesce(d.compensable, false) THEN '{NOT_REGISTERED}' ELSE '{NOT_COMPENSABLE}' END"
        join = (
            "LEFT JOIN ledger_rows l ON l.consumer_group = d.consumer_group AND l.msg_id = d.msg_id"
            if with_ledger
            else ""
        )
        ledger_cols = (
            "coalesce(l.attempts, 0) AS attempts, l.handler AS handler, l.last_attempt_at AS last_attempt_at, "
            "l.last_error AS last_error"
            if with_ledger
            else "0 AS attempts, NULL::VARCHAR AS handler, NULL::TIMESTAMPTZ AS last_attempt_at, "
            "NULL::VARCHAR AS last_error"
        )
        where: list[str] = ["d.msg_id IS NOT NULL", "d.consumer_group IS NOT NULL"]
        args: list[Any] = []
        if filters.msg_id:
            where.append("d.msg_id = ?")
            args.append(filters.msg_id)
        if filters.group:
            where.append("d.consumer_group = ?")
            args.append(filters.group)
        if filters.topic:
            where.append("d.original_topic = ?")
            args.append(filters.topic)
        if filters.tag:
            where.append("d.tags = ?")
            args.append(filters.tag)
        if filters.key:
            where.append("(contains(coalesce(d.keys, ''), ?) OR contains(coalesce(d.business_key, ''), ?))")
            args += [filters.key, filters.key]
        if filters.attribution:
            where.append("list_contains(d.attribution, ?)")
            args.append(filters.attribution)
        if filters.compensation_state:
            where.append(f"({state}) = ?")
            args.append(filters.compensation_state)
        sql = (
            f"SELECT d.dt AS date, d.msg_id, d.consumer_group, d.original_topic AS topic, d.tags AS tag, d.keys, "
            f"d.business_key, d.reconsume_times, d.dlq_at, d.dlq_inferred, d.attribution, "
            f"coalesce(d.compensable, false) AS compensable, d.review_reason, {state} AS compensation_state, "
            f"{ledger_cols} FROM ({dead}) d {join} WHERE {' AND '.join(where)}"
        )
        return sql, params + args

    def _check_filters(self, filters: DeadLetterFilter | None) -> DeadLetterFilter:
        f = filters or DeadLetterFilter()
        state = _clean(f.compensation_state, "compensation state")
        if state is not None:
            state = state.strip().upper().replace("-", "_")
            if state not in COMPENSATION_STATES:
                raise ExploreError(
                    f"compensation state {f.compensation_state!r} is not one of {', '.join(COMPENSATION_STATES)}"
                )
        attribution = _clean(f.attribution, "attribution")
        if attribution is not None and attribution not in contract.ATTRIBUTIONS:
            raise ExploreError(f"attribution {attribution!r} is not one of {', '.join(contract.ATTRIBUTIONS)}")
        return DeadLetterFilter(
            group=_clean(f.group, "group"),
            topic=_clean(f.topic, "topic"),
            tag=_clean(f.tag, "tag"),
            key=_clean(f.key, "key"),
            compensation_state=state,
            attribution=attribution,
            msg_id=_clean(f.msg_id, "msg_id"),
        )

    def _ledger_cursor(self, first: str, last: str) -> duckdb.DuckDBPyConnection:
        """A cursor with the ledger rows of the date range loaded once as ``ledger_rows``."""
        import pyarrow as pa

        mark = self.ledger.fingerprint(first, last)
        with self._lock:
            cached = self._ledger_cache.get((first, last))
        if cached is not None and cached[0] == mark:
            cur = self._cursor()
            cur.register("ledger_rows", cached[1])
            return cur
        columns = self.ledger.states_in_range(first, last)
        table = pa.table(
            {
                "consumer_group": pa.array(columns["consumer_group"], pa.string()),
                "msg_id": pa.array(columns["msg_id"], pa.string()),
                "state": pa.array(columns["state"], pa.string()),
                "attempts": pa.array(columns["attempts"], pa.int32()),
                "handler": pa.array(columns["handler"], pa.string()),
                "last_attempt_at": pa.array(columns["last_attempt_at"], pa.timestamp("us", tz="UTC")),
                "last_error": pa.array(columns["last_error"], pa.string()),
            }
        )
        assert tuple(table.column_names) == STATE_COLUMNS
        with self._lock:
            # a few ranges at most: the pages ask for a date or a short range again and again
            if len(self._ledger_cache) >= LEDGER_CACHE_RANGES:
                self._ledger_cache.pop(next(iter(self._ledger_cache)))
            self._ledger_cache[(first, last)] = (mark, table)
        cur = self._cursor()
        cur.register("ledger_rows", table)
        return cur

    @staticmethod
    def _letter(r: dict[str, Any]) -> DeadLetterRow:
        return DeadLetterRow(
            date=r["date"],
            msg_id=r["msg_id"],
            consumer_group=r["consumer_group"],
            topic=r["topic"],
            tag=r["tag"],
            keys=r["keys"],
            business_key=r["business_key"],
            reconsume_times=_int(r["reconsume_times"]),
            dlq_at=_utc(r["dlq_at"]),
            dlq_inferred=r["dlq_inferred"],
            attribution=list(r["attribution"] or []),
            compensable=bool(r["compensable"]),
            review_reason=r["review_reason"],
            compensation_state=r["compensation_state"],
            attempts=int(r["attempts"] or 0),
            handler=r["handler"],
            last_attempt_at=_utc(r["last_attempt_at"]),
            last_error=r["last_error"],
        )

    def _with_states(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Ledger state and attempts of one page's rows, looked up by key (the ledger not loaded whole)."""
        found = self.ledger.states_of((r["consumer_group"], r["msg_id"]) for r in rows)
        for r in rows:
            led = found.get((r["consumer_group"], r["msg_id"]))
            if led is not None:
                r.update(
                    compensation_state=led["state"],
                    attempts=led["attempts"],
                    handler=led["handler"],
                    last_attempt_at=led["last_attempt_at"],
                    last_error=led["last_error"],
                )
        return rows

    def dead_letters(
        self,
        date_from: object,
        date_to: object,
        filters: DeadLetterFilter | None = None,
        page: int = 1,
        page_size: int = 50,
    ) -> DeadLetterPage:
        first, last = self._range(date_from, date_to)
        f = self._check_filters(filters)
        if not 1 <= int(page_size) <= MAX_PAGE_SIZE:
            raise ExploreError(f"page size {page_size} is not between 1 and {MAX_PAGE_SIZE}")
        if int(page) < 1:
            raise ExploreError(f"page {page} is not a page number (pages start at 1)")
        dates = self._dates_in(first, last, "dead_letters")
        with_ledger = f.compensation_state is not None
        cur = self._ledger_cursor(first or "0000-00-00", last or "9999-99-99") if with_ledger else self._cursor()
        try:
            sql, params = self._letters_sql(dates, f, with_ledger)
            total = int(self._query(f"SELECT count(*) AS n FROM ({sql})", params, cur)[0]["n"])
            rows = self._query(
                f"{sql} ORDER BY date DESC, consumer_group, msg_id LIMIT ? OFFSET ?",
                [*params, int(page_size), (int(page) - 1) * int(page_size)],
                cur,
            )
        finally:
            cur.close()
        if not with_ledger:
            rows = self._with_states(rows)
        return DeadLetterPage(
            date_from=first or (dates[-1] if dates else ""),
            date_to=last or (dates[0] if dates else ""),
            filters=f,
            page=int(page),
            page_size=int(page_size),
            total=total,
            rows=[self._letter(r) for r in rows],
        )

    def dead_letters_csv(
        self, date_from: object, date_to: object, filters: DeadLetterFilter | None = None
    ) -> Iterator[str]:
        """CSV text (header first) of every row the filters select, in chunks; quoted by the csv module."""
        first, last = self._range(date_from, date_to)
        f = self._check_filters(filters)
        dates = self._dates_in(first, last, "dead_letters")
        cur = self._ledger_cursor(first or "0000-00-00", last or "9999-99-99")
        try:
            sql, params = self._letters_sql(dates, f, True)
            try:
                result = cur.execute(f"{sql} ORDER BY date DESC, consumer_group, msg_id", params)
            except duckdb.Error as exc:
                raise ExploreError(f"cannot read the warehouse {self.warehouse}: {exc}") from None
            names = [d[0] for d in result.description]
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\r\n")
            writer.writerow(DEAD_LETTER_CSV_COLUMNS)
            yield buf.getvalue()
            at = [names.index(c) for c in DEAD_LETTER_CSV_COLUMNS]
            while batch := result.fetchmany(5000):
                buf = io.StringIO()
                writer = csv.writer(buf, lineterminator="\r\n")
                writer.writerows([_csv_cell(values[i]) for i in at] for values in batch)
                yield buf.getvalue()
        finally:
            cur.close()

    # --- messages ---------------------------------------------------------------------------------------------

    def find(self, query: str, date_from: object = None, date_to: object = None) -> list[FoundMessage]:
        """Lifecycles whose msg_id, offset msg id (of any of its lines) or business key is ``query``."""
        q = _clean(query, "search text")
        if q is None:
            raise ExploreError("nothing to search for: give a msg_id, an offset msg id or a business key")
        q = q.strip()
        first, last = self._range(date_from, date_to)
        dates = self._dates_in(first, last)
        if not dates:
            return []
        cur = self._cursor()
        try:
            life, lp = self._scan("lifecycles", dates)
            hits = self._query(
                "SELECT dt, consumer_group, msg_id, final_state, "
                "CASE WHEN msg_id = ? THEN 'msg_id' WHEN business_key = ? THEN 'business_key' ELSE 'keys' END AS how "
                f"FROM ({life}) WHERE msg_id = ? OR business_key = ? "
                "OR list_contains(string_split(coalesce(keys, ''), ' '), ?)",
                [q, q, *lp, q, q, q],
                cur,
            )
            found = {(h["dt"], h["consumer_group"], h["msg_id"]): h["how"] for h in hits}
            events, ep = self._scan("events", dates)
            by_offset = self._query(
                f"SELECT DISTINCT event_id, msg_id FROM ({events}) WHERE offset_msg_id = ?", [*ep, q], cur
            )
            if by_offset:
                ids = [r["event_id"] for r in by_offset]
                trans, tp = self._scan("transitions", dates)
                linked = self._query(
                    f"SELECT DISTINCT dt, consumer_group, msg_id, e FROM (SELECT dt, consumer_group, msg_id, "
                    f"unnest(evidence) AS e FROM ({trans}) WHERE list_has_any(evidence, ?)) WHERE list_contains(?, e)",
                    [*tp, ids, ids],
                    cur,
                )
                keys = {(r["dt"], r["consumer_group"], r["msg_id"]) for r in linked}
                # A line no hop cites (the business topic's stored copy, the publish) is every group's message;
                # a copy in a group's retry or DLQ topic is cited by that group's hops only.
                cited = {r["e"] for r in linked}
                msg_ids = sorted({r["msg_id"] for r in by_offset if r["msg_id"] and r["event_id"] not in cited})
                if msg_ids:
                    keys |= {
                        (r["dt"], r["consumer_group"], r["msg_id"])
                        for r in self._query(
                            f"SELECT dt, consumer_group, msg_id FROM ({life}) WHERE list_contains(?, msg_id)",
                            [*lp, msg_ids],
                            cur,
                        )
                    }
                for key in keys:
                    found.setdefault(key, "offset_msg_id")
            states = (
                {
                    (r["dt"], r["consumer_group"], r["msg_id"]): r["final_state"]
                    for r in self._query(
                        f"SELECT dt, consumer_group, msg_id, final_state FROM ({life}) WHERE list_contains(?, msg_id)",
                        [*lp, sorted({k[2] for k in found})],
                        cur,
                    )
                }
                if found
                else {}
            )
        finally:
            cur.close()
        out = [
            FoundMessage(date=d, consumer_group=g, msg_id=m, final_state=states.get((d, g, m)), matched_by=how)
            for (d, g, m), how in found.items()
        ]
        out.sort(key=lambda x: (x.msg_id, x.consumer_group))
        out.sort(key=lambda x: x.date, reverse=True)
        return out

    def story(
        self, msg_id: str, group: str | None = None, date_from: object = None, date_to: object = None
    ) -> list[Story]:
        from rocketmq_retry.explore.story import stories

        return stories(self, msg_id, group, date_from, date_to)

    # --- groups -----------------------------------------------------------------------------------------------

    def groups(self, date_to: object, days: int = 14) -> list[GroupView]:
        from rocketmq_retry.explore.story import expected_path_of

        last = partition_date(date_to, what="date")
        if not 1 <= int(days) <= 366:
            raise ExploreError(f"days {days} is not between 1 and 366")
        end = dt.date.fromisoformat(last)
        window = [(end - dt.timedelta(days=i)).isoformat() for i in range(int(days) - 1, -1, -1)]
        present = set(self._dates_in(window[0], last))
        cur = self._cursor()
        try:
            life, lp = self._scan("lifecycles", sorted(present))
            rates = self._query(
                "SELECT dt, consumer_group, count(*) AS n, count(*) FILTER (WHERE final_state = ?) AS dl "
                f"FROM ({life}) GROUP BY ALL",
                [contract.DEAD_LETTERED, *lp],
                cur,
            )
            trans, tp = self._scan("transitions", [last] if last in present else [])
            levels = self._query(
                f"SELECT consumer_group, delay_level, count(*) AS n FROM ({trans}) "
                "WHERE list_contains(?, to_state) GROUP BY ALL ORDER BY consumer_group, delay_level NULLS LAST",
                [*tp, list(RETRY_HOPS)],
                cur,
            )
        finally:
            cur.close()
        seen = {r["consumer_group"] for r in rates if r["consumer_group"]}
        by_key = {(r["dt"], r["consumer_group"]): r for r in rates}
        out = []
        for g in sorted(set(self.config.groups) | seen):
            path = expected_path_of(self.config, g, None)
            trend = []
            for ds in window:
                r = by_key.get((ds, g))
                n, dl = (int(r["n"]), int(r["dl"])) if r else (0, 0)
                trend.append(DailyRate(date=ds, lifecycles=n, dead_lettered=dl, dead_letter_rate=dl / n if n else None))
            out.append(
                GroupView(
                    consumer_group=g,
                    configured=g in self.config.groups,
                    settings=path.settings,
                    expected_path=path,
                    retries_by_level=[
                        LevelCount(_int(r["delay_level"]), int(r["n"])) for r in levels if r["consumer_group"] == g
                    ],
                    trend=trend,
                )
            )
        return out


def open_warehouse(warehouse: str | pathlib.Path, config: Config | str | pathlib.Path | None = None) -> Explorer:
    """An Explorer over ``warehouse`` (which must exist) with ``config`` (a Config, a file, or None for
    ``$ROCKETMQ_RETRY_CONFIG`` / the defaults)."""
    root = pathlib.Path(warehouse)
    if not root.is_dir():
        raise NotFound(f"no warehouse at {root} (give the folder that holds lifecycles/, dead_letters/, …)")
    cfg = config if isinstance(config, Config) else load_config(config)
    return Explorer(root.resolve(), cfg)
