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
