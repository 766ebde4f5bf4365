"""The ``airflow:`` section of the config file, and the per-run path rules the DAG's params must obey.

The deployment's file is ``$ROCKETMQ_RETRY_CONFIG``; environment variables override single keys so that a
container deployment configures everything by environment (docker-compose.yml). Roots always come from the
deployment, never from a run's params: a run may choose paths *inside* the roots, not move them.

Only yaml + pydantic here: the DAG file reads these settings at parse time (schedule time zone, retries).
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rocketmq_retry.errors import ConfigError, UserError
from rocketmq_retry.validation.settings import REPO_ROOT, describe_error, read_yaml_section

# Environment variable -> key of the airflow: section. Values are parsed by pydantic like YAML scalars.
ENV_OVERRIDES = {
    "ROCKETMQ_RETRY_LANDING_ROOT": "landing_root",
    "ROCKETMQ_RETRY_WAREHOUSE_ROOT": "warehouse_root",
    "ROCKETMQ_RETRY_CONFIG_ROOT": "config_root",
    "ROCKETMQ_RETRY_SCHEDULE_TIMEZONE": "schedule_timezone",
    "ROCKETMQ_RETRY_SPARK_CONN_ID": "spark_conn_id",
    "ROCKETMQ_RETRY_SPARK_APPS_DIR": "spark_apps_dir",
    "ROCKETMQ_RETRY_MAX_ACTIVE_RUNS": "max_active_runs",
}


class AirflowSettings(BaseModel):
    """``airflow:`` in the config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    landing_root: str | None = Field(
        None,
        description="Root every run's landing folder must lie under. Default $AIRFLOW_HOME/rocketmq-retry/landing.",
    )
    warehouse_root: str | None = Field(
        None, description="Root every run's warehouse must lie under. Default $AIRFLOW_HOME/rocketmq-retry/warehouse."
    )
    config_root: str | None = Field(
        None,
        description="Root a run's config param must lie under. Default: the folder of $ROCKETMQ_RETRY_CONFIG, "
        "else $AIRFLOW_HOME/rocketmq-retry/config.",
    )
    landing_subdir: str = Field("{ds}", description="A date's landing folder under the landing root; {ds} = date.")
    ready_marker: str | None = Field(
        None, description="File name that marks a complete landing folder (e.g. _SUCCESS); None = any file."
    )
    schedule_timezone: str = Field("UTC", description="Zone whose calendar days are the DAG's data intervals.")
    sensor_timeout_minutes: int = Field(360, gt=0, description="How long to wait for landing data.")
    sensor_poke_seconds: int = Field(120, gt=0)
    deferrable: bool = Field(True, description="Wait in the triggerer instead of holding a worker slot.")
    retries: int = Field(3, ge=0)
    retry_delay_seconds: int = Field(60, gt=0)
    retry_backoff: float = Field(2.0, ge=1.0, description="Multiplier between retries (exponential back-off).")
    max_retry_delay_seconds: int = Field(3600, gt=0)
    max_active_runs: int = Field(1, gt=0)
    spark_conn_id: str = Field("spark_default", description="Connection naming the Spark master (host).")
    spark_apps_dir: str | None = Field(
        None, description="Folder of the spark-submit entry files; default <repo>/spark."
    )
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Extra --conf for every spark-submit.")

    @field_validator("schedule_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r} (use an IANA name such as 'UTC' or 'Asia/Shanghai')"
            ) from None
        return value

    @field_validator("landing_subdir")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in pathlib.PurePosixPath(value).parts:
            raise ValueError("must be a relative path without '..'")
        return value

    def _default_root(self, name: str) -> pathlib.Path:
        home = os.environ.get("AIRFLOW_HOME") or str(pathlib.Path.home() / "airflow")
        return pathlib.Path(home) / "rocketmq-retry" / name

    @property
    def landing(self) -> pathlib.Path:
        return pathlib.Path(self.landing_root or self._default_root("landing")).resolve()

    @property
    def warehouse(self) -> pathlib.Path:
        return pathlib.Path(self.warehouse_root or self._default_root("warehouse")).resolve()

    @property
    def configs(self) -> pathlib.Path:
        if self.config_root:
            return pathlib.Path(self.config_root).resolve()
        deployment = os.environ.get("ROCKETMQ_RETRY_CONFIG")
        if deployment:
            return pathlib.Path(deployment).resolve().parent
        return self._default_root("config").resolve()

    @property
    def spark_apps(self) -> pathlib.Path:
        return pathlib.Path(self.spark_apps_dir or REPO_ROOT / "spark").resolve()


def load_airflow_settings(path: str | os.PathLike[str] | None = None) -> AirflowSettings:
    """The deployment's settings: the ``airflow:`` section of ``path`` (default $ROCKETMQ_RETRY_CONFIG) + env."""
    data, origin = read_yaml_section(path, "airflow")
    data = dict(data)
    for env, key in ENV_OVERRIDES.items():
        if os.environ.get(env):
            data[key] = os.environ[env]
    try:
        return AirflowSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_error(exc, "airflow", origin)) from None


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
