"""Which handler compensates a dead letter (DESIGN §6 ``compensation.routes``): the one routing rule.

A route's ``topic`` and ``group`` are shell wildcards (``*``, ``?``, ``[seq]``, ``[!seq]``, as ``fnmatch`` reads
them). ``pattern_regex`` turns one into a regular expression whose text means the same to Python's ``re`` and to
Java's ``java.util.regex``, so the reconstruction job (Spark ``rlike``, ``jobs/reconstruct/dead_letters.py``) and
the batch service (``route_for``) answer from the same text; ``tests/test_compensation_routing.py`` holds the two
and ``fnmatch`` to one table of cases. The business key is not decided here: reconstruction writes it into
``lifecycles`` and ``dead_letters`` (``jobs/reconstruct/lifecycles.business_key``) and compensation uses that
column."""

from __future__ import annotations

import re

from rocketmq_retry.config import CompensationConfig

# A regex that matches nothing, in both dialects (an all-reversed class such as ``[z-a]``, as fnmatch reads it).
_NOTHING = r"[^\s\S]"


def _literal(char: str) -> str:
    # A backslash before an ASCII character that is not a letter or digit is that character in both dialects;
    # letters, digits and non-ASCII characters are never special.
    return char if char.isalnum() or not char.isascii() else "\\" + char


def _char_class(members: str, negate: bool) -> str:
    # fnmatch's reading: "a-z" is a range, a "-" first or last is itself, a reversed range matches nothing.
    items: list[str] = []
    i = 0
    while i < len(members):
        if i + 2 < len(members) and members[i + 1] == "-":
            lo, hi = members[i], members[i + 2]
            if lo <= hi:
                items.append(f"{_literal(lo)}-{_literal(hi)}")
            i += 3
        else:
            items.append(_literal(members[i]))
            i += 1
    if not items:
        return "." if negate else _NOTHING
    return "[" + ("^" if negate else "") + "".join(items) + "]"


def pattern_regex(pattern: str) -> str:
    """The regular expression of a route's shell wildcard, to be matched against the whole value with ``.``
    matching every character (Python: ``re.fullmatch(rx, value, re.DOTALL)``; Java: ``(?s)^(?:rx)\\z``)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        i += 1
        if char == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            j = i + 1 if i < len(pattern) and pattern[i] == "!" else i
            j += 1 if j < len(pattern) and pattern[j] == "]" else 0  # "]" right after "[" or "[!" is a member
            end = pattern.find("]", j)
            if end < 0:
                out.append(_literal("["))
                continue
            negate = pattern[i] == "!"
            out.append(_char_class(pattern[i + 1 if negate else i : end], negate))
            i = end + 1
        else:
            out.append(_literal(char))
    return "".join(out)


def java_regex(pattern: str) -> str:
    """``pattern_regex`` anchored for Java's ``find`` (what Spark's ``rlike`` runs)."""
    return f"(?s)^(?:{pattern_regex(pattern)})\\z"


def matches(pattern: str, value: str | None) -> bool:
    """A missing value (an unknown topic) is matched as the empty string, as Spark's side coalesces it."""
    return re.fullmatch(pattern_regex(pattern), value or "", re.DOTALL) is not None


def route_for(cfg: CompensationConfig, topic: str | None, group: str) -> str | None:
    """The handler of the first route whose topic and group patterns match; None = SKIPPED."""
    for route in cfg.routes:
        if matches(route.topic, topic) and matches(route.group, group):
            return route.handler
    return None


def handler_for(cfg: CompensationConfig, topic: str | None, group: str) -> tuple[str | None, str]:
    """(handler, why). The routes of the config in force decide, so that an operator who changes them and
    re-runs gets the new routing; the ``compensation_handler`` column of ``dead_letters`` is the same rule's
    answer under the config of the reconstruction run and is not consulted here."""
    name = route_for(cfg, topic, group)
    if name is not None:
        return name, "route"
    return None, f"no compensation route matches topic {topic!r}, group {group!r}"
