"""Errors that reach the user as one line on stderr (bad arguments, bad config, unreadable input)."""

from __future__ import annotations

# What a spark-submit'ed job exits with on a UserError: the Spark job operator fails the task at once instead of
# letting Airflow retry (the config or the input must change first). Distinct from the interpreter's 1 (a crash,
# maybe transient) and from spark-submit's own codes; 65 is sysexits' EX_DATAERR.
NOT_RETRYABLE_EXIT_CODE = 65


class UserError(Exception):
    """Something the user can fix. The CLI prints ``rocketmq-retry: <message>`` and exits with ``exit_code``."""

    exit_code = 2


class ConfigError(UserError):
    """The configuration file is missing, unparsable or invalid; the message names the key path."""


class InputError(UserError):
    """Input files are missing or unreadable; the message names the file."""

    exit_code = 3
