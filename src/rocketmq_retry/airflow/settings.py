"""The ``airflow:`` section of the config file, and the per-run path rules the DAG's params must obey.

The deployment's file is ``$ROCKETMQ_RETRY_CONFIG``; environment variables override single keys so that a
container deployment configures everything by environment (docker-compose.yml). Roots always come from the
deployment, never from a run's params: a run may choose paths *inside* the roots, not move them.

No Airflow import here: the DAG file reads these settings at parse time (schedule time zone, retries).
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass
from typing import Any

from rocketmq_retry.config import load_config
from rocketmq_retry.config_sections import AirflowSettings
from rocketmq_retry.errors import UserError

__all__ = [
    "AirflowSettings",
    "PathOutsideRootError",
    "RunPaths",
    "inside",
    "landing_template",
    "load_airflow_settings",
    "resolve_run_paths",
]


def load_airflow_settings(path: str | os.PathLike[str] | None = None) -> AirflowSettings:
    """The deployment's settings: ``airflow:`` of ``path`` (default $ROCKETMQ_RETRY_CONFIG) with the environment's
    overrides, parsed with the rest of the file by ``load_config`` (one reader, one error format)."""
    return load_config(path).airflow


class PathOutsideRootError(UserError):
    """A run's param names a path outside the root the deployment allows for it."""


@dataclass(frozen=True)
class RunPaths:
    """Everything one run touches, resolved and checked.

    ``landing`` is the run's own date's folder (what the sensor waits for). ``landing_template`` is the same
    path with ``{ds}`` left in (absolute, under the landing root), or None when the landing param has no ``{ds}``:
    ingest needs the template, not D's folder, to catch up the look-back dates whose landing has files but whose
    events were never committed (a date's reconstruction must not depend on the order dates ran).
    """

    ds: str
    landing: str
    warehouse: str
    config: str | None
    landing_template: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ds": self.ds,
            "landing": self.landing,
            "landing_template": self.landing_template or "",
            "warehouse": self.warehouse,
            "config": self.config or "",
        }


def inside(root: pathlib.Path, value: str, *, what: str, ds: str) -> pathlib.Path:
    """``value`` (relative to ``root``, or absolute) resolved; an error unless it stays inside ``root``.

    Resolving first (symlinks, ``..``) is what makes the check mean something: ``root/../etc`` and a
    symlink pointing out of the root are both rejected.
    """
    raw = value.replace("{ds}", ds).strip()
    candidate = pathlib.Path(raw) if raw.startswith("/") else root / raw
    resolved = candidate.resolve()
    if resolved != root and root not in resolved.parents:
        raise PathOutsideRootError(
            f"param {what}={value!r} resolves to {resolved}, which is outside the configured {what} root {root}; "
            f"use a path under {root} (or change airflow.{what}_root in the deployment's config)"
        )
    return resolved


def landing_template(root: pathlib.Path, value: str, ds: str) -> str | None:
    """``value`` (a landing param or ``airflow.landing_subdir``) as an absolute path with ``{ds}`` kept, or None
    without ``{ds}``; checked like the run's own folder (``inside`` for ``ds``).

    The string is joined to the root but not resolved: ``{ds}`` names no folder yet, and kept as written, the
    template with ``ds`` put in resolves to exactly the folder ``inside`` checked (folding ``..`` first would
    not, after a symlink). Another date's folder that is a symlink out of the root is the reader's to refuse:
    ingest refuses files whose real path leaves the landing.
    """
    raw = value.strip()
    if "{ds}" not in raw:
        return None
    inside(root, raw, what="landing", ds=ds)
    return raw if raw.startswith("/") else str(root / raw)


def run_warehouse(settings: AirflowSettings, params: dict[str, Any], ds: str = "") -> pathlib.Path:
    """The run's ``warehouse`` param (empty = the root itself) inside ``airflow.warehouse_root``."""
    return inside(settings.warehouse, str(params.get("warehouse") or ""), what="warehouse", ds=ds)


def run_config(settings: AirflowSettings, params: dict[str, Any], ds: str = "") -> pathlib.Path | None:
    """The run's ``config`` param inside the config root; empty = the deployment's own file (or none).

    A run's config decides the ledger URL, every handler's URL and Python callable: a file from anywhere else
    would let a trigger form run arbitrary code or mark rows DONE through a ``log-only`` handler.
    """
    config_param = str(params.get("config") or "")
    if config_param:
        config = inside(settings.configs, config_param, what="config", ds=ds)
        if not config.is_file():
            raise PathOutsideRootError(f"param config={config_param!r}: no such file {config}")
        return config
    deployment = os.environ.get("ROCKETMQ_RETRY_CONFIG")
    return pathlib.Path(deployment).resolve() if deployment else None


def resolve_run_paths(settings: AirflowSettings, params: dict[str, Any], ds: str) -> RunPaths:
    """Apply the daily run's params (``landing``, ``warehouse``, ``config``; empty = default) to the settings."""
    landing_param = str(params.get("landing") or settings.landing_subdir)
    landing = inside(settings.landing, landing_param, what="landing", ds=ds)
    template = landing_template(settings.landing, landing_param, ds)
    warehouse = run_warehouse(settings, params, ds)
    config = run_config(settings, params, ds)
    return RunPaths(
        ds=ds,
        landing=str(landing),
        warehouse=str(warehouse),
        config=str(config) if config else None,
        landing_template=template,
    )
