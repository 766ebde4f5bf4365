"""The dates the warehouse holds and how far each got (ingested, reconstructed, validated): the API's list of runs
(docs/airflow.md "The JSON API"). The counts and the validation result are the run overview's own sections
(``overview.group_states``, ``overview.validation``), so the list and a date's overview cannot disagree."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rocketmq_retry.explore import overview
from rocketmq_retry.explore.model import ExploreError, ValidationStatus, _Paged, _Result

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# A date's status, from what its partitions and its validation result say: ingest committed its events but no
# reconstruction yet; reconstructed and not validated (with this config); validated, passing or failing.
INGESTED = "ingested"
RECONSTRUCTED = "reconstructed"
VALIDATED = "validated"
VALIDATION_FAILED = "validation_failed"
RUN_STATUSES = (INGESTED, RECONSTRUCTED, VALIDATED, VALIDATION_FAILED)
MAX_PAGE_SIZE = 366


@dataclasses.dataclass(frozen=True)
class RunStatus(_Result):
    date: str
    status: str  # RUN_STATUSES
    ingested: bool  # an ingest_report partition is committed
    reconstructed: bool  # a lifecycles partition is committed
    lifecycles: int | None  # None: not reconstructed
    dead_lettered: int | None
    dead_letters: int | None  # rows of dead_letters/ (compensable and held for review)
    held_for_review: int | None
    validation: ValidationStatus | None  # None: not validated in this warehouse with this config


@dataclasses.dataclass(frozen=True)
class RunList(_Paged, _Result):
    date_from: str | None
    date_to: str | None
    page: int
    page_size: int
    total: int  # dates in the range
    runs: list[RunStatus]  # newest first


def run_list(ex: Explorer, date_from: object, date_to: object, page: int = 1, page_size: int = 31) -> RunList:
    """The dates of ``date_from..date_to`` (None: no bound) with a committed ingest report or lifecycles,
    newest first, one page of them."""
    if page < 1 or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ExploreError(f"page {page} of size {page_size}: the page starts at 1, its size is 1..{MAX_PAGE_SIZE}")
    first, last = ex._range(date_from, date_to)
    ingested = set(ex._dates_in(first, last, "ingest_report"))
    reconstructed = set(ex._dates_in(first, last, "lifecycles"))
    dates = sorted(ingested | reconstructed, reverse=True)
    shown = dates[(page - 1) * page_size : page * page_size]
    return RunList(
        date_from=first,
        date_to=last,
        page=page,
        page_size=page_size,
        total=len(dates),
        runs=[_status(ex, ds, ds in ingested, ds in reconstructed) for ds in shown],
    )


def _status(ex: Explorer, ds: str, ingested: bool, reconstructed: bool) -> RunStatus:
    if not reconstructed:
        return RunStatus(ds, INGESTED, ingested, False, None, None, None, None, None)
    cur = ex._cursor()
    try:
        groups = overview.group_states(ex, cur, ds)
    finally:
        cur.close()
    checked = overview.validation(ex, ds)
    if checked is None or checked.success is None:
        status = RECONSTRUCTED
    else:
        status = VALIDATED if checked.success else VALIDATION_FAILED
    return RunStatus(
        date=ds,
        status=status,
        ingested=ingested,
        reconstructed=True,
        lifecycles=sum(g.lifecycles for g in groups),
        dead_lettered=sum(g.dead_lettered for g in groups),
        dead_letters=sum(g.dead_letters for g in groups),
        held_for_review=sum(g.held_for_review for g in groups),
        validation=checked,
    )
