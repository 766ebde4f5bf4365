"""Errors that reach the user as one line on stderr (bad arguments, bad config, unreadable input)."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix. The CLI prints ``rocketmq-retry: <message>`` and exits with ``exit_code``."""

    exit_code = 2


class ConfigError(UserError):
    """The configuration file is missing, unparsable or invalid; the message names the key path."""


class InputError(UserError):
    """Input files are missing or unreadable; the message names the file."""

    exit_code = 3
