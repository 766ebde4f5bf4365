"""``Explorer``: DuckDB over the committed warehouse partitions plus the ledger, read only, without Spark.

Where the files are comes only from ``contract.partition_dir`` / ``warehouse.partitions.committed`` with a date that
went through the one date parser, so no parameter names a path; every value from a request reaches SQL as a bound
parameter. Each call runs on its own DuckDB cursor, so one Explorer serves concurrent requests. The queries of
each page live in their own module (``overview``, ``dead_letters``, ``search``, ``groups``, ``story``) as
functions of an Explorer; this class holds what they share: the partitions, the cursors and the ledger.
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.config import Config, load_config
from rocketmq_retry.dates import DateError, partition_date
from rocketmq_retry.explore import causes as _causes
from rocketmq_retry.explore import dead_letters as _dead_letters
from rocketmq_retry.explore import groups as _groups
from rocketmq_retry.explore import overview as _overview
from rocketmq_retry.explore import search as _search
from rocketmq_retry.explore.dead_letters import DEAD_LETTER_CSV_COLUMNS as DEAD_LETTER_CSV_COLUMNS
from rocketmq_retry.explore.ledger import STATE_COLUMNS, LedgerReader
from rocketmq_retry.explore.model import (
    CausePage,
    DeadLetterFilter,
    DeadLetterPage,
    ExploreError,
    FoundMessage,
    GroupView,
    LifecyclePage,
    NotFound,
    RunOverview,
    SafeSet,
    Story,
)
from rocketmq_retry.explore.overview import CAUSES as CAUSES
from rocketmq_retry.warehouse.partitions import committed

LEDGER_CACHE_RANGES = 8
_DUCK_TYPES = {
    "string": "VARCHAR",
    "timestamp": "TIMESTAMPTZ",
    "bigint": "BIGINT",
    "int": "INTEGER",
    "boolean": "BOOLEAN",
    "double": "DOUBLE",
    "array<string>": "VARCHAR[]",
    "map<string,bigint>": "MAP(VARCHAR, BIGINT)",
}


def _opt_date(value: object, what: str) -> str | None:
    return None if value is None or str(value).strip() == "" else partition_date(value, what=what)


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
        # The contract's empty row set joins by name, so a column a partition lacks (written before the column
        # existed: dead_letters before the causes) reads as NULL with its contract type instead of failing the query.
        return " UNION ALL BY NAME ".join([*parts, self._empty(table)]), params

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

    # --- pages: thin calls into the per-page modules ------------------------------------------------------

    def run_overview(self, date: object) -> RunOverview:
        return _overview.run_overview(self, date)

    def dead_letters(
        self,
        date_from: object,
        date_to: object,
        filters: DeadLetterFilter | None = None,
        page: int = 1,
        page_size: int = 50,
        *,
        sort: str | None = None,
        descending: bool = False,
    ) -> DeadLetterPage:
        """``sort``: one of ``DEAD_LETTER_SORTS`` (ties: newest date first, then group and msg_id)."""
        return _dead_letters.dead_letter_page(
            self, date_from, date_to, filters, page, page_size, sort=sort, descending=descending
        )

    def dead_letters_csv(
        self, date_from: object, date_to: object, filters: DeadLetterFilter | None = None
    ) -> Iterator[str]:
        """CSV text (header first) of every row the filters select, in chunks; quoted by the csv module."""
        return _dead_letters.dead_letters_csv(self, date_from, date_to, filters)

    def lifecycles(
        self,
        date: object,
        final_state: str | None = None,
        group: str | None = None,
        anomaly: str | None = None,
        page: int = 1,
        page_size: int = 100,
    ) -> LifecyclePage:
        """One date's lifecycles by consumer group and msg_id, filtered by final state, group and anomaly code."""
        from rocketmq_retry.explore.lifecycles import lifecycle_page

        return lifecycle_page(self, date, final_state, group, anomaly, page, page_size)

    def find(self, query: str, date_from: object = None, date_to: object = None) -> list[FoundMessage]:
        """Lifecycles whose msg_id, offset msg id (of any of its lines) or business key is ``query``."""
        return _search.find(self, query, date_from, date_to)

    def story(
        self, msg_id: str, group: str | None = None, date_from: object = None, date_to: object = None
    ) -> list[Story]:
        from rocketmq_retry.explore.story import stories

        return stories(self, msg_id, group, date_from, date_to)

    def groups(self, date_to: object, days: int = 14) -> list[GroupView]:
        return _groups.groups(self, date_to, days)

    def causes(self, date: object, group: str | None = None) -> CausePage:
        """The "Failures by cause" page of a date: causes ranked by dead letters then failures, incidents."""
        return _causes.cause_page(self, date, group)

    def safe_sets(
        self, date_from: object, date_to: object, group: str | None, redrivable: Sequence[str], limit: int
    ) -> list[SafeSet]:
        """Per ended outage of the range: its dead letters safe to re-drive whose ledger state is ``redrivable``."""
        return _causes.safe_sets(self, date_from, date_to, group, redrivable, limit)

    def advice_of(self, picks: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], dict[str, Any]]:
        """The re-drive advice, cause and kind of each chosen (date, group, msg_id) dead letter."""
        return _causes.advice_of(self, picks)

    # --- ledger -----------------------------------------------------------------------------------------------

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
                "completed_at": pa.array(columns["completed_at"], pa.timestamp("us", tz="UTC")),
                "reason": pa.array(columns["reason"], pa.string()),
                "loops": pa.array(columns["loops"], pa.int32()),
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


def open_warehouse(warehouse: str | pathlib.Path, config: Config | str | pathlib.Path | None = None) -> Explorer:
    """An Explorer over ``warehouse`` (which must exist) with ``config`` (a Config, a file, or None for
    ``$ROCKETMQ_RETRY_CONFIG`` / the defaults)."""
    root = pathlib.Path(warehouse)
    if not root.is_dir():
        raise NotFound(f"no warehouse at {root} (give the folder that holds lifecycles/, dead_letters/, …)")
    cfg = config if isinstance(config, Config) else load_config(config)
    return Explorer(root.resolve(), cfg)
