"""Row values as the results hold them, and request text checked once, shared by every page's queries."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rocketmq_retry.explore.model import ExploreError

MAX_QUERY_CHARS = 512


def utc(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def clean(value: str | None, what: str) -> str | None:
    """``value`` as searched text, None when blank; refused when longer than any key the warehouse holds."""
    if value is None:
        return None
    text = str(value)
    if text.strip() == "":
        return None
    if len(text) > MAX_QUERY_CHARS:
        raise ExploreError(f"{what} is {len(text)} characters long; at most {MAX_QUERY_CHARS} are searched")
    return text


def duration_text(seconds: float) -> str:
    """A span as an operator reads it: ``42 s``, ``12 min``, ``4 h 46 min``, ``3 d 4 h`` (rounded down, so a
    span is never said to be longer than it was)."""
    total = int(max(0.0, seconds))
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"
