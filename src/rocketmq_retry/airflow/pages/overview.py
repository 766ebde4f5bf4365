"""The run pages: the landing list of dates, one date's overview, the daily DAG run's tab that leads to it, and
the stylesheet (served behind the same read check as the pages)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from rocketmq_retry.airflow.dag_parts import DAG_ID
from rocketmq_retry.airflow.pages.context import HERE, SECURITY_HEADERS, Pages, check_date, plain, render


def overview_router(pages: Pages) -> APIRouter:
    router = APIRouter()
    read = pages.read

    @router.get("/", dependencies=read, response_class=HTMLResponse)
    def landing(request: Request) -> HTMLResponse:
        # Before the first run the warehouse folder does not exist yet: that is "no date", not an error.
        dates = list(pages.answer(lambda: pages.explorer().dates())) if pages.source().warehouse.is_dir() else []
        return render(request, "landing.html", dates=sorted(dates, reverse=True), nav="runs")

    @router.get("/static/ops.css", dependencies=read)
    def stylesheet() -> Response:
        return Response((HERE / "static" / "ops.css").read_bytes(), media_type="text/css", headers=SECURITY_HEADERS)

    @router.get("/runs/{date}", dependencies=read, response_class=HTMLResponse)
    def overview(request: Request, date: str) -> HTMLResponse:
        ds = check_date(date, "date")
        result = plain(pages.answer(lambda: pages.explorer().run_overview(ds)))
        rates = [(g["consumer_group"], round(100 * g["dead_letter_rate"], 1)) for g in result["groups"]]
        return render(request, "overview.html", o=result, rates=rates, nav="runs")

    @router.get("/dag-runs/{run_id}", dependencies=read)
    def dag_run(request: Request, run_id: str, dag_id: str = DAG_ID) -> RedirectResponse:
        """The daily DAG run's tab: the run's partition date is worked out the way ``resolve_run`` does.
        Airflow shows a run tab on every DAG's runs; only the daily DAG's runs have an overview."""
        if dag_id != DAG_ID:
            raise HTTPException(status_code=404, detail=f"retry lifecycles exist for {DAG_ID} runs only, not {dag_id}")
        ds = run_date(run_id)
        return RedirectResponse(f"{request.scope.get('root_path', '').rstrip('/')}/runs/{ds}", status_code=303)

    return router


def run_date(run_id: str) -> str:
    """The partition date of a ``rocketmq_retry_daily`` run, as its ``resolve_run`` task works it out."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from rocketmq_retry.airflow.settings import load_airflow_settings
    from rocketmq_retry.airflow.tasks import partition_date as run_partition_date

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run_id))
        if run is None:
            raise HTTPException(status_code=404, detail=f"no {DAG_ID} run {run_id!r}")
        context = {"logical_date": run.logical_date, "dag_run": run}
        return run_partition_date(context, load_airflow_settings().schedule_timezone)
