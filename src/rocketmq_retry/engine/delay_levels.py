"""``messageDelayLevel`` parsed exactly as the broker parses it (§3.1), and clamped as the store clamps it (§3.2)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# ScheduleMessageService.parseDelayLevel's unit table (§3.1).
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_JAVA_LONG_MIN, _JAVA_LONG_MAX = -(2**63), 2**63 - 1


class DelayLevelError(ValueError):
    """A ``messageDelayLevel`` string the broker would refuse (its parse returns false)."""


def _parse_java_long(text: str) -> int:
    # Long.parseLong: optional sign, then decimal digits as Character.digit sees them, i.e. any BMP character of
    # category Nd (so "٥" parses as 5), no blanks or underscores (Python's int() would take those), within 64 bits.
    body = text[1:] if text[:1] in "+-" else text
    if not body or not all(ch.isdecimal() and ord(ch) < 0x10000 for ch in body):
        raise ValueError(f"not a number (Long.parseLong fails): {text!r}")
    value = int(text)
    if not _JAVA_LONG_MIN <= value <= _JAVA_LONG_MAX:
        raise ValueError(f"out of range for a Java long: {text!r}")
    return value


def _java_long_multiply(a: int, b: int) -> int:
    # ``tu * num`` in parseDelayLevel is plain long arithmetic: it wraps silently instead of failing.
    product = (a * b) & 0xFFFF_FFFF_FFFF_FFFF
    return product - (1 << 64) if product >= 1 << 63 else product


@dataclass(frozen=True)
class DelayLevelTable:
    """Level n (1-based) waits ``levels_ms[n-1]`` ms; ``max_level`` is the number of entries."""

    levels_ms: tuple[int, ...]
    source: str = DEFAULT_MESSAGE_DELAY_LEVEL

    def __post_init__(self) -> None:
        if not self.levels_ms:
            raise DelayLevelError("a delay level table needs at least one level")

    @classmethod
    def parse(cls, level_string: str) -> DelayLevelTable:
        """Parse like ``ScheduleMessageService.parseDelayLevel``: ``split(" ")``, last char = unit, rest = long.

        Java's ``split(" ")`` keeps empty tokens between double spaces (they fail the parse) but drops trailing
        empty tokens, so a trailing space is accepted; a leading space is not. ``""`` fails in the broker too
        (``"".split(" ")`` is ``[""]`` and ``substring(-1)`` throws). One deliberate difference: a string of blanks
        only splits into *no* tokens, which the broker accepts as a table with zero levels (every delayed message
        is then clamped to level 0 and stored unscheduled); that is never what an operator meant, so it is refused.
        """
        if not isinstance(level_string, str):
            raise DelayLevelError(f"messageDelayLevel must be a string, got {type(level_string).__name__}")
        tokens = level_string.split(" ")
        while tokens and tokens[-1] == "":
            tokens.pop()
        if not tokens:
            raise DelayLevelError("messageDelayLevel is empty: the broker needs at least one level")
        levels: list[int] = []
        for index, token in enumerate(tokens):
            where = f"level {index + 1} ({token!r}) of messageDelayLevel {level_string!r}"
            if token == "":
                raise DelayLevelError(f"{where}: empty entry (two spaces in a row); the broker rejects the string")
            unit = token[-1]
            if unit not in _UNIT_MS:
                raise DelayLevelError(f"{where}: unknown unit {unit!r}; the broker accepts s, m, h and d")
            try:
                amount = _parse_java_long(token[:-1])
            except ValueError as exc:
                raise DelayLevelError(f"{where}: {exc}") from None
            levels.append(_java_long_multiply(amount, _UNIT_MS[unit]))
        return cls(tuple(levels), level_string)

    @classmethod
    def default(cls) -> DelayLevelTable:
        return cls.parse(DEFAULT_MESSAGE_DELAY_LEVEL)

    @property
    def max_level(self) -> int:
        return len(self.levels_ms)

    def clamp(self, level: int) -> int:
        """The level the store actually uses: above ``maxDelayLevel`` becomes the max (§3.2)."""
        if level <= 0:
            raise ValueError(f"delay level {level} does not go through the schedule topic")
        return min(level, self.max_level)

    def delay_ms(self, level: int) -> int:
        """Delay of ``level`` after store-time clamping (§3.1, §3.2).

        A negative entry (``-5s`` parses) means a deliver timestamp in the past, which the schedule service delivers
        at once, so the wait is 0.
        """
        return max(0, self.levels_ms[self.clamp(level) - 1])

    @staticmethod
    def queue_id(level: int) -> int:
        """``delayLevel2QueueId`` (§3.1)."""
        return level - 1

    @staticmethod
    def level_of_queue(queue_id: int) -> int:
        """``queueId2DelayLevel`` (§3.1)."""
        return queue_id + 1
