"""Catch-up: before a date's reconstruction can be order-free, every earlier date it reads must be ingested.

The reconstruction of D reads the events of the dates its look-back reaches (lifecycles that began earlier) and the
bindings of ``attribution.lookback_days`` before D (an application's start-up lines, written once, map later days'
lines to their group). If those dates were not ingested yet (a backfill run newest first, or in parallel), D would
silently see less and write other tables than the same landing gives when the dates run oldest first. So ingest of
D also ingests each of those earlier dates whose landing holds files and whose events are not committed: the result
of every date then depends on the landing only, whatever order the dates ran in (docs/airflow.md, "Backfilling").

An earlier date's landing is found through a *dated* layout: ``{ds}`` in the landing path (one folder per date,
``landing/{ds}``) or in the sources' globs (one folder for every date). A landing path one of whose folders is the
date itself (``landing/2026-11-21``) is read as that folder's template (``landing/{ds}``). A landing with no date in
it is one folder whose contents the operator may replace each day: its earlier dates cannot be found, and the run
says which of them are missing instead of reading the wrong files for them.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from rocketmq_retry.config import Config
from rocketmq_retry.jobs.ingest.read import resolve_inputs
from rocketmq_retry.jobs.lifecycle_schedule import configured_lookback_ms
from rocketmq_retry.warehouse.partitions import committed

DS = "{ds}"


@dataclass(frozen=True)
class Layout:
    """Where each date's landing is: ``template`` with ``{ds}`` (or none), ``how`` it was established."""

    template: str | None  # None: undated, earlier dates cannot be found
    how: str

    def folder(self, ds: str) -> str | None:
        return None if self.template is None else self.template.replace(DS, ds)


def landing_layout(config: Config, landing: str, ds: str, template: str | None = None) -> Layout:
    """The layout of a run's landing: an explicit ``template`` (the Airflow task passes its param's), ``{ds}`` in
    ``landing``, ``{ds}`` in the sources' globs (the landing is then every date's root), or a folder of ``landing``
    named exactly ``ds``."""
    if template and DS in template:
        return Layout(template, "the landing template")
    if DS in landing:
        return Layout(landing, "the landing path")
    if any(DS in s.path for s in config.sources):
        return Layout(landing, "the sources' globs")
    parts = pathlib.PurePath(landing).parts
    if ds in parts:
        i = len(parts) - 1 - parts[::-1].index(ds)
        return Layout(str(pathlib.PurePath(*parts[:i], DS, *parts[i + 1 :])), f"the folder named {ds}")
    return Layout(None, "a landing path without a date")


def lookback_dates(config: Config, ds: str, lookback_ms: int | None = None) -> list[str]:
    """The earlier dates D's reconstruction reads, oldest first: those its events look-back reaches (in the
    config's zone; ``lookback_ms``, default the configured one) and the ``attribution.lookback_days`` before D."""
    day = dt.date.fromisoformat(ds)
    start = dt.datetime.combine(day, dt.time(), tzinfo=ZoneInfo(config.timezone))
    span = configured_lookback_ms(config) if lookback_ms is None else lookback_ms
    reached = (start - dt.timedelta(milliseconds=span)).date()
    days = max((day - reached).days, config.attribution.lookback_days)
    return [(day - dt.timedelta(days=k)).isoformat() for k in range(days, 0, -1)]


@dataclass(frozen=True)
class CatchUp:
    pending: list[str]  # earlier dates to ingest now: landing files, no committed events
    missing: list[str]  # earlier dates with no committed events whose landing cannot be found (undated layout)


def catch_up(config: Config, layout: Layout, warehouse: str, ds: str) -> CatchUp:
    """The earlier dates of ``lookback_dates`` that ingest of ``ds`` must ingest first, and those it cannot."""
    pending: list[str] = []
    missing: list[str] = []
    for d in lookback_dates(config, ds):
        if committed(warehouse, "events", d).is_dir():
            continue
        folder = layout.folder(d)
        if folder is None:
            missing.append(d)
        elif os.path.isdir(folder) and resolve_inputs(config, folder, d)[0]:
            pending.append(d)
    return CatchUp(pending, missing)


def date_ranges(dates: list[str]) -> str:
    """``2026-11-06..2026-11-18, 2026-11-20``: consecutive dates folded into ranges."""
    out: list[str] = []
    run: list[str] = []
    for d in dates:
        if run and dt.date.fromisoformat(d) - dt.date.fromisoformat(run[-1]) != dt.timedelta(days=1):
            out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
            run = []
        run.append(d)
    if run:
        out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
    return ", ".join(out)
