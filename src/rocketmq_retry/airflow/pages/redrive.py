"""The re-drive POST: the dead letters chosen on the dead-letters page, sent as runs of the re-drive DAG through
Airflow's own API as the caller (one run per consumer group)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages import guard
from rocketmq_retry.airflow.pages.context import Pages, render
from rocketmq_retry.compensation.model import REOPENABLE
from rocketmq_retry.dates import DateError, partition_date

MAX_REDRIVE = 1000  # rows one form may re-drive; bigger re-drives go by date range in the DAG's own form
# Starlette refuses a form of more than 1,000 fields by default ("Too many fields"): the page's own maximum of
# rows plus the CSRF token must fit, and nothing much larger may be parsed before the count is checked.
MAX_FORM_FIELDS = MAX_REDRIVE + 10
REDRIVABLE = tuple(sorted(REOPENABLE))  # ledger states the re-drive DAG reopens (never DONE)
# dead_letters.redrive_advice of a poison message (docs/causes.md "Poison messages"): re-driving it fails again
# (the contract's advice in its order, as explore/causes.py names them)
WILL_FAIL_AGAIN = contract.WILL_FAIL_AGAIN
# The form field that says the operator saw the poison rows of the selection and re-drives them anyway.
CONFIRM_FIELD, CONFIRM_POISON = "poison", "confirm"


def redrive_router(pages: Pages) -> APIRouter:
    router = APIRouter()
    redrive_deps = [Depends(guard.require_trigger_redrive())] if pages.authenticate else []

    @router.post("/redrive", dependencies=pages.read + redrive_deps, response_class=HTMLResponse)
    async def redrive(request: Request, user: Any = pages.caller) -> HTMLResponse:
        if not pages.authenticate:
            raise HTTPException(status_code=403, detail="re-drive needs an authenticated Airflow user")
        # Read here, not through Form() parameters: FastAPI would parse with Starlette's default of 1,000 fields.
        try:
            form = await request.form(max_fields=MAX_FORM_FIELDS, max_files=0)
        except StarletteHTTPException as exc:  # what Starlette raises for a form over the limits
            raise HTTPException(
                status_code=400,
                detail=f"{exc.detail}: at most {MAX_REDRIVE} rows per form (re-drive a date range instead)",
            ) from None
        token = form.get("csrf_token")
        guard.check_csrf(request, user.get_id(), token if isinstance(token, str) else None)
        picks = _selection([v for v in form.getlist("selected") if isinstance(v, str)])
        # Poison rows fail again when re-driven: the operator sees them and confirms before anything is queued.
        advice = pages.answer(lambda: pages.explorer().advice_of(picks))
        poison = [p for p in picks if (advice.get(p) or {}).get("redrive_advice") == WILL_FAIL_AGAIN]
        if poison and form.get(CONFIRM_FIELD) != CONFIRM_POISON:
            others = [p for p in picks if p not in poison]
            return render(
                request,
                "redrive_confirm.html",
                poison=[{"key": _value(p), "date": p[0], "group": p[1], "msg_id": p[2], **advice[p]} for p in poison],
                all_values=[_value(p) for p in picks],
                other_values=[_value(p) for p in others],
                csrf=token,
                confirm_field=CONFIRM_FIELD,
                confirm_value=CONFIRM_POISON,
                advice_text=contract.REDRIVE_ADVICE[WILL_FAIL_AGAIN],
                nav="dead-letters",
            )
        bearer = _caller_token(request)
        runs = []
        for conf in redrive_confs(picks):
            runs.append(await _trigger(request, bearer, conf, pages.airflow_app))
        return render(
            request,
            "redrive.html",
            runs=runs,
            redrive_dag=guard.REDRIVE_DAG_ID,
            paused=redrive_paused(),
            nav="dead-letters",
        )

    return router


def _selection(values: list[str]) -> list[tuple[str, str, str]]:
    """Each checkbox carries ``[date, consumer_group, msg_id]`` as JSON (values from logs may hold any
    separator). Anything else is refused rather than half-understood."""
    if not values:
        raise HTTPException(status_code=400, detail="no dead letter selected")
    if len(values) > MAX_REDRIVE:
        raise HTTPException(
            status_code=400,
            detail=f"{len(values)} rows selected; at most {MAX_REDRIVE} per form (re-drive a date range instead)",
        )
    picks = []
    for value in values:
        try:
            item = json.loads(value)
            ds, group, msg_id = (str(x) for x in item) if isinstance(item, list) and len(item) == 3 else ((),) * 3
            picks.append((partition_date(ds), group, msg_id))
        except (ValueError, TypeError, DateError):
            raise HTTPException(status_code=400, detail="a selected row is malformed; reload the page") from None
        if not group or not msg_id:
            raise HTTPException(status_code=400, detail="a selected row has no consumer group or msg_id")
    return picks


def _value(pick: tuple[str, str, str]) -> str:
    """A chosen row as its checkbox carries it (``_selection`` reads it back)."""
    return json.dumps(list(pick))


def redrive_confs(picks: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """One run per consumer group: the DAG's ``msg_ids`` + ``consumer_group`` name exactly the rows chosen, and
    the date range (the chosen rows' own dates) keeps a msg_id of another day out."""
    by_group: dict[str, list[tuple[str, str]]] = {}
    for ds, group, msg_id in picks:
        by_group.setdefault(group, []).append((ds, msg_id))
    confs = []
    for group in sorted(by_group):
        rows = by_group[group]
        dates = sorted({d for d, _ in rows})
        confs.append(
            {
                "msg_ids": sorted({m for _, m in rows}),
                "consumer_group": group,
                "date_from": dates[0],
                "date_to": dates[-1],
            }
        )
    return confs


def _caller_token(request: Request) -> str:
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN

    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:]
    token = request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    if not token:
        raise HTTPException(status_code=401, detail="Not authenticated")
    return token


def _default_airflow_app() -> Any:
    # The module `airflow api-server` serves (uvicorn and gunicorn both load it); imported at request time,
    # because this plugin is itself imported while that app is being built.
    from airflow.api_fastapi.main import app

    return app


async def _trigger(
    request: Request, token: str, conf: dict[str, Any], airflow_app: Callable[[], Any] | None
) -> dict[str, Any]:
    """``POST /api/v2/dags/rocketmq_retry_redrive/dagRuns`` on Airflow's own app, in process, as the caller:
    Airflow checks the user's permission again, records the run with ``triggering_user_name`` and writes its
    audit log entry, exactly as for a trigger from its own UI."""
    import httpx

    target = (airflow_app or _default_airflow_app)()
    body = {
        "logical_date": None,
        "conf": conf,
        "note": f"re-drive of {len(conf['msg_ids'])} dead letters of {conf['consumer_group']} "
        "chosen on the dead-letters page",
    }
    headers = {"Authorization": f"Bearer {token}", "Referer": str(request.url)}
    transport = httpx.ASGITransport(app=target)
    async with httpx.AsyncClient(transport=transport, base_url="http://api-server.internal") as client:
        response = await client.post(f"/api/v2/dags/{guard.REDRIVE_DAG_ID}/dagRuns", json=body, headers=headers)
    if response.status_code >= 300:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text[:500]
        raise HTTPException(status_code=response.status_code, detail=f"Airflow refused the re-drive: {detail}")
    run = response.json()
    return {"run_id": run.get("dag_run_id"), "state": run.get("state"), "conf": conf}


def redrive_paused() -> bool | None:
    """Whether the re-drive DAG is paused (Airflow creates DAGs paused): its runs then wait, queued, until someone
    unpauses it. None when Airflow's database does not know the DAG (not parsed yet) or cannot be read."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    try:
        with create_session() as session:
            paused = session.scalar(select(DagModel.is_paused).where(DagModel.dag_id == guard.REDRIVE_DAG_ID))
    except Exception:  # the page still works; it only cannot say
        return None
    return None if paused is None else bool(paused)
