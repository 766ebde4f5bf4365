"""The one date parser of every entry point: a partition date is ``YYYY-MM-DD`` and nothing else.

``datetime.date.fromisoformat`` alone is not enough: since Python 3.11 it also takes ``20261120`` and ``2026-W47-5``,
which would become partition folders ``dt=20261120`` next to ``dt=2026-11-20``. Every command line, DAG param and
reader of ``dt=`` folders goes through ``partition_date`` so that one date has one folder.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re

from rocketmq_retry.errors import UserError

_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}")


class DateError(UserError, ValueError):
    """A text that is not a partition date (a ``UserError``: commands print it and exit 2)."""


def partition_date(value: object, *, what: str = "date") -> str:
    """``value`` as a partition date, or a ``DateError`` that names ``what`` and the value."""
    text = value.isoformat() if isinstance(value, dt.date) else str(value).strip()
    if not _SHAPE.fullmatch(text):
        raise DateError(f"{what} {text!r} is not a date: expected YYYY-MM-DD")
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise DateError(f"{what} {text!r} does not exist in the calendar") from None
    return text


def optional_date(value: object, *, what: str = "date") -> str | None:
    """An empty param (``None``, ``""``) stays ``None``; anything else must be a partition date."""
    if value is None or str(value).strip() == "":
        return None
    return partition_date(value, what=what)


def date_arg(text: str) -> str:
    """``argparse`` ``type=``: a bad date is a usage error (exit 2) with the parser's own message format."""
    try:
        return partition_date(text, what="")
    except DateError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None


def dates_between(first: str, last: str) -> list[str]:
    """Every date from ``first`` to ``last`` inclusive; an error when ``last`` comes before ``first``."""
    start, end = dt.date.fromisoformat(partition_date(first)), dt.date.fromisoformat(partition_date(last))
    if end < start:
        raise DateError(f"date range {first}..{last} is empty: the last date comes before the first")
    return [(start + dt.timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]


_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def parse_duration_ms(text: str, *, what: str = "--lookback") -> int:
    """``1d2h``, ``4h46m``, ``90m``, ``300s`` or plain seconds, in milliseconds; a ``UserError`` naming ``what``."""
    text = str(text).strip()
    if text.isdigit():
        return int(text) * 1000
    parts = _DURATION.fullmatch(text)
    if not parts or not any(parts.groups()):
        raise UserError(f"{what} {text!r}: use a duration such as 1d2h, 4h46m, 90m or 300s")
    d, h, m, s = (int(x or 0) for x in parts.groups())
    return (((d * 24 + h) * 60 + m) * 60 + s) * 1000


def format_duration(ms: int) -> str:
    """Human form of a duration: 10s, 1m40s, 4h45m40s, 250ms, 1d2h."""
    if ms < 1000:
        return f"{ms}ms"
    seconds, millis = divmod(ms, 1000)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m")) if v]
    if seconds or millis or not parts:
        parts.append(f"{seconds}.{millis:03d}".rstrip("0") + "s" if millis else f"{seconds}s")
    return "".join(parts)
