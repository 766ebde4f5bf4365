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
    """Everything one run touches, resolved and checked."""

    ds: str
    landing: str
    warehouse: str
    config: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"ds": self.ds, "landing": self.landing, "warehouse": self.warehouse, "config": self.config or ""}


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
    landing = inside(settings.landing, str(params.get("landing") or settings.landing_subdir), what="landing", ds=ds)
    warehouse = run_warehouse(settings, params, ds)
    config = run_config(settings, params, ds)
    return RunPaths(ds=ds, landing=str(landing), warehouse=str(warehouse), config=str(config) if config else None)
