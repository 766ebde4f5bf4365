"""The ``airflow:`` and ``validation:`` sections of the one config file, typed (``Config.airflow``,
``Config.validation``), and the defaults that depend on where the package is installed.

Only pydantic and the standard library here: the DAG files read these settings at parse time.
"""

from __future__ import annotations

import os
import pathlib
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
SPARK_APPS = PACKAGE_DIR / "spark_apps"  # an installed package's copy of a checkout's spark/


def check_zone(value: str) -> str:
    """The one time-zone check of the config: an IANA name that this machine's zone database knows."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r} (use an IANA name such as 'Asia/Shanghai' or 'UTC')") from None
    return value


def airflow_home_dir(name: str) -> pathlib.Path:
    home = os.environ.get("AIRFLOW_HOME") or str(pathlib.Path.home() / "airflow")
    return pathlib.Path(home) / "rocketmq-retry" / name


def default_gx_root() -> str:
    """Where runs keep their GE project when the config names none: never the committed ``expectations/`` of a
    checkout (a run writes results, and rewrites a suite when the deployment's config makes it differ; tracked
    files must not change), but a working copy under ``$AIRFLOW_HOME`` that ``open_project`` seeds on first use."""
    return str(airflow_home_dir("expectations"))


def _checkout_dir() -> pathlib.Path | None:
    """The source checkout this package runs from (``src/`` layout), or None for an installed package."""
    checkout = PACKAGE_DIR.parents[1]
    return checkout if (checkout / "pyproject.toml").is_file() else None


def spark_apps_default() -> pathlib.Path:
    """A checkout's top-level ``spark/`` (the product's shape: what ``spark-submit`` runs sits where a reader looks
    for it), else the installed package's ``spark_apps/``; the two hold the same files."""
    checkout = _checkout_dir()
    if checkout is not None and (checkout / "spark" / "ingest.py").is_file():
        return checkout / "spark"
    return SPARK_APPS


def gx_template() -> pathlib.Path | None:
    """The committed GE project of a source checkout (generated from the code by
    ``python -m rocketmq_retry.validation.project``), or None for an installed package."""
    checkout = _checkout_dir()
    template = checkout / "expectations" if checkout is not None else None
    if template is not None and (template / "gx" / "great_expectations.yml").is_file():
        return template
    return None


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
    max_active_runs: int = Field(
        2,
        gt=0,
        description="Scheduled + manual runs at once (not backfills). 2: a scheduled run waiting for its landing "
        "holds one, so a triggered run still gets the other; 1 queues every triggered run behind such a wait.",
    )
    spark_conn_id: str = Field("spark_default", description="Connection naming the Spark master (host).")
    spark_apps_dir: str | None = Field(
        None,
        description="Folder of the spark-submit entry files; default: a checkout's spark/, else the installed "
        "package's rocketmq_retry/spark_apps.",
    )
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Extra --conf for every spark-submit.")

    _zone = field_validator("schedule_timezone")(lambda cls, v: check_zone(v))

    @field_validator("landing_subdir")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in pathlib.PurePosixPath(value).parts:
            raise ValueError("must be a relative path without '..'")
        return value

    @property
    def landing(self) -> pathlib.Path:
        return pathlib.Path(self.landing_root or airflow_home_dir("landing")).resolve()

    @property
    def warehouse(self) -> pathlib.Path:
        return pathlib.Path(self.warehouse_root or airflow_home_dir("warehouse")).resolve()

    @property
    def configs(self) -> pathlib.Path:
        if self.config_root:
            return pathlib.Path(self.config_root).resolve()
        deployment = os.environ.get("ROCKETMQ_RETRY_CONFIG")
        if deployment:
            return pathlib.Path(deployment).resolve().parent
        return airflow_home_dir("config").resolve()

    @property
    def spark_apps(self) -> pathlib.Path:
        return pathlib.Path(self.spark_apps_dir or spark_apps_default()).resolve()


Severity = Literal["critical", "warning"]

# Every check the suites define, with its default severity. Structural problems (schema, nulls,
# vocabularies, keys) mean the jobs produced something the contracts do not allow: downstream steps
# must not act on it. Behavioural findings (drift, early DLQ, delivery after DLQ) are what the
# platform exists to report about the brokers, so by default they are reported, not blocking.
DEFAULT_SEVERITIES: dict[str, Severity] = {
    "events.schema": "critical",
    "events.not_null": "critical",
    "events.event_id_unique": "critical",
    "events.event_type_allowed": "critical",
    "events.reconsume_times_non_negative": "critical",
    "transitions.schema": "critical",
    "transitions.not_null": "critical",
    "transitions.hop_unique": "critical",
    "transitions.hop_non_negative": "critical",
    "transitions.reconsume_times_increasing": "critical",
    "transitions.drift_within_tolerance": "warning",
    "transitions.dlq_at_max_or_override": "warning",
    "transitions.nothing_delivered_after_dlq": "warning",
    "lifecycles.schema": "critical",
    "lifecycles.not_null": "critical",
    "lifecycles.key_unique": "critical",
    "lifecycles.final_state_allowed": "critical",
    "lifecycles.expected_final_state_allowed": "critical",
    "lifecycles.anomaly_codes_allowed": "warning",
    "lifecycles.last_seen_not_before_first_seen": "critical",
    "lifecycles.deliveries_non_negative": "critical",
    "lifecycles.group_established": "critical",
    "dead_letters.schema": "critical",
    "dead_letters.not_null": "critical",
    "dead_letters.key_unique": "critical",
    "dead_letters.compensable_established": "critical",
    "dead_letters.none_held_for_review": "warning",
    # lines no evidence gave a group are reported, never placed: the day's lifecycles stand without them
    "unattributed.schema": "critical",
    "unattributed.none": "warning",
    # causes (docs/causes.md): the enumerations and the tables' agreement are the writers' contract; the share of
    # failures with a known cause is what the collected logs allow, so a low one is reported, not blocking
    "failures.schema": "critical",
    "failures.not_null": "critical",
    "failures.cause_known": "critical",
    "failures.cause_evidence_allowed": "critical",
    "failures.failure_kind_allowed": "critical",
    "failures.kind_rule_allowed": "critical",
    "failures.incident_exists": "critical",
    "failures.cause_coverage": "warning",
    "failure_causes.schema": "critical",
    "failure_causes.not_null": "critical",
    "failure_causes.key_unique": "critical",
    "failure_causes.failure_kind_allowed": "critical",
    "failure_causes.kind_rule_allowed": "critical",
    "failure_causes.failures_match": "critical",
    "failure_causes.dead_letters_match": "critical",
    "incidents.schema": "critical",
    "incidents.not_null": "critical",
    "incidents.incident_id_unique": "critical",
    "incidents.state_allowed": "critical",
    "incidents.rule_allowed": "critical",
    "lifecycles.failure_kind_allowed": "critical",
    "lifecycles.kind_rule_allowed": "critical",
    "lifecycles.incident_exists": "critical",
    "dead_letters.failure_kind_allowed": "critical",
    "dead_letters.kind_rule_allowed": "critical",
    "dead_letters.redrive_advice_allowed": "critical",
    "dead_letters.cause_in_failure_causes": "critical",
    "dead_letters.incident_exists": "critical",
}


class ValidationSettings(BaseModel):
    """``validation:`` in the config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_root: str | None = Field(
        None,
        description="Folder holding the Great Expectations project (its gx/ folder; must be writable: validation "
        "results and Data Docs go to gx/uncommitted/). $ROCKETMQ_RETRY_GX_ROOT overrides it; default: "
        "$AIRFLOW_HOME/rocketmq-retry/expectations, seeded from a checkout's committed expectations/.",
    )
    drift_tolerance_ms: int = Field(
        60_000, ge=0, description="|observed_at - expected_at| allowed for a transition before it counts as drift."
    )
    cause_coverage_floor: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Per source format, the share of a date's failures whose cause is known (not UNKNOWN) below "
        "which the check failures.cause_coverage warns (docs/causes.md).",
    )
    severities: dict[str, Severity] = Field(
        default_factory=dict, description="Per-check overrides of DEFAULT_SEVERITIES (check id -> severity)."
    )

    @field_validator("severities")
    @classmethod
    def _known_checks(cls, value: dict[str, Severity]) -> dict[str, Severity]:
        unknown = sorted(set(value) - set(DEFAULT_SEVERITIES))
        if unknown:
            raise ValueError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(sorted(DEFAULT_SEVERITIES))}")
        return value

    def severity(self, check: str) -> Severity:
        return self.severities.get(check, DEFAULT_SEVERITIES[check])

    @property
    def gx_root(self) -> pathlib.Path:
        root = os.environ.get("ROCKETMQ_RETRY_GX_ROOT") or self.context_root or default_gx_root()
        return pathlib.Path(root).resolve()

    @property
    def docs_dir(self) -> pathlib.Path:
        """The Data Docs site, as great_expectations.yml under ``expectations/`` declares it."""
        return self.gx_root / "gx" / "uncommitted" / "data_docs" / "local_site"
