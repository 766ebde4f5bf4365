"""What every page shares: where to read (``Source`` and the locked DuckDB read layer), the templates and the
security headers each response carries, the request-value checks, and ``Pages``, the one object a page's router
factory takes (reader, renderer, the auth dependencies of ``guard.py``)."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import threading
from collections.abc import Callable
from typing import Any

import jinja2
from fastapi import HTTPException, Request
from fastapi.params import Depends as DependsParam
from fastapi.responses import HTMLResponse

from rocketmq_retry.airflow.pages import svg
from rocketmq_retry.dates import DateError, format_duration, partition_date
from rocketmq_retry.errors import UserError
from rocketmq_retry.urls import DOCS_ROUTE, OPS_ROUTE, URL_PREFIX

HERE = pathlib.Path(__file__).parent

# No inline script or style anywhere, only our own stylesheet; forms post only to us; framed only by Airflow's
# own UI (its external views are same-origin iframes).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates.globals.update(
    bars=svg.bars, sparkline=svg.sparkline, timeline=svg.timeline, incident_timeline=svg.incident_timeline
)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


_templates.filters["percent"] = _percent


def _duration(ms: int | None) -> str:
    return "—" if ms is None else format_duration(max(0, int(ms)))


_templates.filters["duration"] = _duration


def _clock(value: object) -> str:
    """A time as the tables show it, to the second: ``2026-11-20 02:07:23`` (the whole value is in the cell's title)."""
    if value is None:
        return ""
    text = str(value).replace("T", " ")
    return text[:19]


_templates.filters["clock"] = _clock


def _trend_point(day: Any) -> int | None:
    """A day of a group's trend as the overview draws it: its dead letters, or no point without a lifecycle."""
    return day["dead_lettered"] if day["lifecycles"] else None


_templates.filters["trend_point"] = _trend_point


@dataclasses.dataclass(frozen=True)
class Source:
    """Where the pages read: the deployment's warehouse root and config file (never a request's choice)."""

    warehouse: pathlib.Path
    config: pathlib.Path | None


def deployment_source() -> Source:
    from rocketmq_retry.airflow.settings import load_airflow_settings

    config = os.environ.get("ROCKETMQ_RETRY_CONFIG")
    return Source(load_airflow_settings().warehouse, pathlib.Path(config) if config else None)


class _Explorers:
    """One read layer per (warehouse, config), shared by the requests; a lock because one DuckDB connection
    must not run two queries at once from the api-server's worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], Any] = {}

    def get(self, source: Source) -> Any:
        from rocketmq_retry.explore import open_warehouse

        key = (str(source.warehouse), str(source.config or ""))
        with self._lock:
            if key not in self._open:
                self._open[key] = _Locked(open_warehouse(source.warehouse, source.config))
            return self._open[key]


class _Locked:
    def __init__(self, explorer: Any) -> None:
        self._explorer, self._lock = explorer, threading.Lock()

    def locked(self, call: Callable[[Any], Any]) -> Any:
        """``call(explorer)`` under the lock: for a reader outside the read layer (the what-if) that makes several
        queries and reads ``explorer.config``, which the per-method wrapper below cannot lend."""
        with self._lock:
            return call(self._explorer)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._explorer, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def check_date(value: str | None, what: str) -> str | None:
    if value is None or value.strip() == "":
        return None
    try:
        return partition_date(value, what=what)
    except DateError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


def check_choice(value: str | None, allowed: tuple[str, ...], what: str) -> str | None:
    if not value:
        return None
    if value not in allowed:
        raise HTTPException(status_code=400, detail=f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value


def check_range(date_from: str | None, date_to: str | None) -> tuple[str | None, str | None]:
    """Validated bounds; an empty bound is no bound (the read layer's convention)."""
    first, last = check_date(date_from, "from"), check_date(date_to, "to")
    if first and last and last < first:
        raise HTTPException(status_code=400, detail=f"date range {first}..{last} is empty")
    return first, last


def plain(result: Any) -> Any:
    return result.to_dict() if hasattr(result, "to_dict") else result


def _plugin_root(request: Request) -> str:
    root = request.scope.get("root_path", "").rstrip("/")
    return root.removesuffix(OPS_ROUTE) if root.endswith(OPS_ROUTE) else URL_PREFIX


def airflow_root(request: Request) -> str:
    """The path Airflow's own app is served under ("" unless the api-server runs below a prefix)."""
    return _plugin_root(request).removesuffix(URL_PREFIX)


def render(request: Request, template: str, status: int = 200, nav: str = "", **context: Any) -> HTMLResponse:
    # Links are built from where the app is mounted, so the pages work inside Airflow and on their own.
    root = request.scope.get("root_path", "").rstrip("/")
    plugin_root = _plugin_root(request)
    html = _templates.get_template(template).render(
        base=root, docs_base=plugin_root + DOCS_ROUTE, airflow_base=airflow_root(request), nav=nav, **context
    )
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


@dataclasses.dataclass(frozen=True)
class Pages:
    """What one pages app gives its routers. ``read`` goes on every route; ``caller`` is the dependency that
    yields the Airflow user (``None`` without authentication) and must be used as a parameter default, not in
    an ``Annotated`` hint: with postponed annotations FastAPI resolves hints in a module's globals, where a
    dependency chosen at run time does not exist."""

    source: Callable[[], Source]
    authenticate: bool
    read: list[DependsParam]
    caller: Any
    airflow_app: Callable[[], Any] | None
    explorers: _Explorers = dataclasses.field(default_factory=_Explorers)

    def explorer(self) -> Any:
        try:
            return self.explorers.get(self.source())
        except UserError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from None

    def answer(self, call: Callable[[], Any]) -> Any:
        from rocketmq_retry.explore.model import ExploreError, NotFound

        try:
            return call()
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        except (ExploreError, UserError) as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
