"""Timestamp layouts of each format and the zones they are written in (docs/rocketmq-rules.md §6.1, §12; DESIGN §4).

Every layout is given three ways: the Java/logback pattern it comes from, a Python renderer from epoch ms,
and a regex plus ``to_timestamp`` pattern for the Spark parser.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

# Broker files: %d{yyy-MM-dd HH:mm:ss,GMT+8} (§6.1). The 5.x remoting client and the gRPC SDK fix GMT+8 too.
GMT8 = "GMT+8"


@dataclass(frozen=True)
class TimestampLayout:
    name: str
    java_pattern: str  # the source's own pattern
    spark_pattern: str  # to_timestamp() pattern for the text the regex captures
    regex: str  # matches exactly the timestamp text
    millis: bool


# 4.x ClientLogger DefaultLayout: "yyyy-MM-dd HH:mm:ss,SSS", JVM default zone (§6.1).
CLIENT_4X_TS = TimestampLayout(
    "client-4x",
    "yyyy-MM-dd HH:mm:ss,SSS",
    "yyyy-MM-dd HH:mm:ss,SSS",
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}",
    True,
)
# Python SDK (rocketmq-clients python/rocketmq/v5/log/log_config.py, §5.7): logging's %(asctime)s, the process's
# local zone, "yyyy-MM-dd HH:mm:ss,mmm" (logging.Formatter.default_time_format + default_msec_format).
PYTHON_TS = TimestampLayout(
    "python",
    "%Y-%m-%d %H:%M:%S,%03d (logging asctime)",
    "yyyy-MM-dd HH:mm:ss,SSS",
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}",
    True,
)
# 5.x rmq.client.logback.xml and gRPC SDK: %d{yyy-MM-dd HH:mm:ss.SSS,GMT+8} (§6.1, §12).
CLIENT_5X_TS = TimestampLayout(
    "client-5x",
    "yyy-MM-dd HH:mm:ss.SSS,GMT+8",
    "yyyy-MM-dd HH:mm:ss.SSS",
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}",
    True,
)
# Broker logback: %d{yyy-MM-dd HH:mm:ss,GMT+8}: no milliseconds (§6.1, §12, tests/data/rocketmq-4.9.4/broker/*.log).
BROKER_TS = TimestampLayout(
    "broker", "yyy-MM-dd HH:mm:ss,GMT+8", "yyyy-MM-dd HH:mm:ss", r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", False
)
# Spring Boot 3.x default file and console patterns: %d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} in the application's zone.
SPRING_TS = TimestampLayout(
    "spring",
    "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
    "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(?:Z|[+-]\d{2}:\d{2})",
    True,
)
# Spring Boot 2.x default patterns (file and console): %d{yyyy-MM-dd HH:mm:ss.SSS}, no zone, the application's zone.
SPRING_BOOT2_TS = TimestampLayout(
    "spring-boot2",
    "yyyy-MM-dd HH:mm:ss.SSS",
    "yyyy-MM-dd HH:mm:ss.SSS",
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}",
    True,
)


def zone(name: str) -> _dt.tzinfo:
    """A zone by name; ``GMT+8`` (Java's fixed-offset id) is accepted as well as IANA names."""
    if name in (GMT8, "GMT+08:00", "UTC+8"):
        return _dt.timezone(_dt.timedelta(hours=8))
    if name in ("UTC", "GMT", "Z"):
        return _dt.UTC
    return ZoneInfo(name)


class Clock:
    """Renders epoch ms in one layout and zone. Caches per second (zone offsets are looked up per second)."""

    def __init__(self, layout: TimestampLayout, zone_name: str) -> None:
        self.layout = layout
        self.zone_name = zone_name
        self._tz = zone(zone_name)
        self._second = -1
        self._prefix = ""
        self._sep = "," if layout in (CLIENT_4X_TS, PYTHON_TS) else "."
        self._suffix = ""

    def _load(self, second: int) -> None:
        when = _dt.datetime.fromtimestamp(second, self._tz)
        if self.layout is SPRING_TS:
            self._prefix = when.strftime("%Y-%m-%dT%H:%M:%S")
            off = when.utcoffset() or _dt.timedelta(0)
            minutes = int(off.total_seconds()) // 60
            sign = "+" if minutes > 0 else "-"
            self._suffix = "Z" if minutes == 0 else f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        else:
            self._prefix = when.strftime("%Y-%m-%d %H:%M:%S")
        self._second = second

    def format(self, epoch_ms: int) -> str:
        second, ms = divmod(epoch_ms, 1000)
        if second != self._second:
            self._load(second)
        if not self.layout.millis:
            return self._prefix
        return f"{self._prefix}{self._sep}{ms:03d}{self._suffix}"


def day_bounds_ms(day: _dt.date, zone_name: str) -> tuple[int, int]:
    """``[start, end)`` of ``day`` in ``zone_name`` as epoch ms."""
    tz = zone(zone_name)
    start = _dt.datetime.combine(day, _dt.time(0), tz)
    end = _dt.datetime.combine(day + _dt.timedelta(days=1), _dt.time(0), tz)
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


def month_start_ms(epoch_ms: int, zone_name: str) -> int:
    """Start of the month of ``epoch_ms`` in the JVM zone: the base of ``UNIQ_KEY``'s time field."""
    when = _dt.datetime.fromtimestamp(epoch_ms / 1000, zone(zone_name))
    first = when.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return int(first.timestamp() * 1000)
