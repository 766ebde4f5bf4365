"""The ``validation:`` section of the config file (severities, drift tolerance, where the GE project lives).

The model is ``rocketmq_retry.config_sections.ValidationSettings``, parsed with the rest of the file by
``load_config``; this module is the validation room's door to it. Kept free of GE and Spark imports so the DAG
file and the CLI can read it cheaply.
"""

from __future__ import annotations

import os

from rocketmq_retry.config import load_config
from rocketmq_retry.config_sections import DEFAULT_SEVERITIES, Severity, ValidationSettings

__all__ = ["DEFAULT_SEVERITIES", "Severity", "ValidationSettings", "load_validation_settings"]


def load_validation_settings(path: str | os.PathLike[str] | None = None) -> ValidationSettings:
    return load_config(path).validation
