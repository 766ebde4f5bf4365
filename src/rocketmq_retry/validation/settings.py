"""The ``validation:`` section of the config file: severities, drift tolerance, where the GE project lives.

Until ``rocketmq_retry.config.Config`` carries this section, it is read here from the same YAML file and
every other top-level key is ignored (``load_validation_settings``). Kept free of GE and Spark imports so the
DAG file and the CLI can read it cheaply.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rocketmq_retry.config import resolve_config_path
from rocketmq_retry.errors import ConfigError

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
}

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


class ValidationSettings(BaseModel):
    """``validation:`` in the config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_root: str | None = Field(
        None,
        description="Folder holding the Great Expectations project (its gx/ folder; must be writable: validation "
        "results and Data Docs go to gx/uncommitted/). $ROCKETMQ_RETRY_GX_ROOT overrides it; default: the "
        "repository's expectations/.",
    )
    drift_tolerance_ms: int = Field(
        60_000, ge=0, description="|observed_at - expected_at| allowed for a transition before it counts as drift."
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
        root = os.environ.get("ROCKETMQ_RETRY_GX_ROOT") or self.context_root or str(REPO_ROOT / "expectations")
        return pathlib.Path(root).resolve()

    @property
    def docs_dir(self) -> pathlib.Path:
        """The Data Docs site, as great_expectations.yml under ``expectations/`` declares it."""
        return self.gx_root / "gx" / "uncommitted" / "data_docs" / "local_site"


def read_yaml_section(path: str | os.PathLike[str] | None, section: str) -> tuple[dict[str, Any], str]:
    """The mapping under ``section`` in the config file (``{}`` when absent) and a name for error messages."""
    resolved = resolve_config_path(path)
    if resolved is None:
        return {}, "(defaults)"
    try:
        data = yaml.safe_load(resolved.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {resolved}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {resolved}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {resolved}: the top level must be a mapping")
    value = data.get(section) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"invalid config {resolved}: {section} must be a mapping")
    return value, str(resolved)


def describe_error(exc: ValidationError, section: str, origin: str) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in (section, *err["loc"]))
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {msg}")
    return f"invalid config {origin}: " + "; ".join(problems)


def load_validation_settings(path: str | os.PathLike[str] | None = None) -> ValidationSettings:
    data, origin = read_yaml_section(path, "validation")
    try:
        return ValidationSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_error(exc, "validation", origin)) from None
