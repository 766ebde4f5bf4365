"""Who may see and do what on the operator's pages: Airflow's own authentication and DAG permissions, plus a
CSRF token for the one request that changes state.

Plugin FastAPI apps get no authentication from Airflow (docs/airflow.md "The operator's pages"): every route
declares ``requires_access_dag`` itself. The UI's session is the ``_token`` cookie, which is ``SameSite=Lax``:
that keeps a cross-site form from carrying it, but not a page on another port of the same host (cookies ignore
ports), so the re-drive POST also needs a token only our own page can know and an Origin of our own host.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from rocketmq_retry.airflow.dag_parts import DAG_ID, REDRIVE_DAG_ID

CSRF_FIELD = "csrf_token"
CSRF_TTL_SECONDS = 8 * 3600  # a page left open over a working day still submits; older forms are refused


def require_read() -> Any:
    """Reading a page = reading the daily DAG: the pages show what its runs wrote (keys, bodies, topics)."""
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return requires_access_dag("GET", param_dag_id=DAG_ID)


def require_trigger_redrive() -> Any:
    """The same check Airflow's ``POST /api/v2/dags/{dag_id}/dagRuns`` makes, on the re-drive DAG."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return requires_access_dag("POST", DagAccessEntity.RUN, param_dag_id=REDRIVE_DAG_ID)


def can_trigger_redrive(user: Any) -> bool:
    """Whether to offer the re-drive form at all (the POST checks again)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

    try:
        return bool(
            get_auth_manager().is_authorized_dag(
                method="POST", access_entity=DagAccessEntity.RUN, details=DagDetails(id=REDRIVE_DAG_ID), user=user
            )
        )
    except Exception:  # an auth manager that cannot answer offers nothing; the POST would refuse anyway
        return False


def _secret() -> bytes:
    from airflow.configuration import conf

    secret = conf.get("api", "secret_key", fallback="") or ""
    if not secret:
        raise HTTPException(status_code=500, detail="[api] secret_key is not set: the re-drive form cannot be signed")
    return ("rocketmq-retry-redrive:" + secret).encode()


def _mac(user_id: str, issued: int) -> str:
    return hmac.new(_secret(), f"{user_id}\n{issued}".encode(), hashlib.sha256).hexdigest()


def csrf_token(user_id: str, *, now: float | None = None) -> str:
    """Bound to the user and the time it was issued; the api-server's secret key signs it, so it survives a
    restart and is the same on every api-server worker."""
    issued = int(now if now is not None else time.time())
    return f"{issued}.{_mac(user_id, issued)}"


def check_csrf(request: Request, user_id: str, token: str | None, *, now: float | None = None) -> None:
    """Refuse (403) a POST whose token is missing, forged, for another user or stale, or whose Origin (or, when
    a browser sends none, Referer) is not this server."""
    _check_origin(request)
    issued_text, _, mac = (token or "").partition(".")
    if not issued_text.isdigit() or not mac:
        raise HTTPException(status_code=403, detail="missing or malformed CSRF token: reload the page and retry")
    issued = int(issued_text)
    if not hmac.compare_digest(mac, _mac(user_id, issued)):
        raise HTTPException(status_code=403, detail="CSRF token does not match this user: reload the page and retry")
    age = (now if now is not None else time.time()) - issued
    if age < -60 or age > CSRF_TTL_SECONDS:
        raise HTTPException(status_code=403, detail="CSRF token expired: reload the page and retry")


def _own_hosts(request: Request) -> set[str]:
    from airflow.configuration import conf

    hosts = {request.headers.get("host", "")}
    base = conf.get("api", "base_url", fallback="") or ""
    if base:  # behind a proxy the browser's Origin is the public address, not the Host the proxy forwards
        hosts.add(urlsplit(base).netloc)
    return hosts - {""}


def _check_origin(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        if referer is None:
            return  # neither header (a non-browser client): the token alone decides
        origin = referer
    parts = urlsplit(origin)
    if origin == "null" or parts.netloc not in _own_hosts(request):
        raise HTTPException(status_code=403, detail="cross-origin request refused")
