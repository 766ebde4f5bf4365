"""The what-if result as a person reads it in a terminal."""

from __future__ import annotations

import datetime as dt
import json

from rocketmq_retry.dates import format_duration
from rocketmq_retry.engine.model import SCHEDULE_TOPIC
from rocketmq_retry.whatif.model import MessageChange, Totals, WhatIf
from rocketmq_retry.whatif.replay import NOT_REPLAYED

LISTED = 20  # messages listed per section; the structure holds them all


def _when(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _span(ms: int | None) -> str:
    return "-" if ms is None else format_duration(max(0, ms))


def _delta(new: int | None, old: int | None) -> str:
    if new is None or old is None:
        return "-"
    return f"{new - old:+d}" if new != old else "0"


def _table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))).rstrip() for r in rows]


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _totals(w: WhatIf) -> list[str]:
    o, c, p = w.observed, w.current, w.proposed

    def row(label: str, get: str) -> tuple[str, ...]:
        values = [getattr(t, get) if get != "broker_writes" else t.broker_writes for t in (o, c, p)]
        return (label, *("-" if v is None else str(v) for v in values), _delta(values[2], values[1]))

    def longest(t: Totals) -> str:
        return f"{_span(t.longest_to_consumption_ms)}" + (f" ({t.longest_msg_id})" if t.longest_msg_id else "")

    rows = [
        ("", "observed", "current policy", "new policy", "new - current"),
        row("dead letters", "dead_letters"),
        row("consumed", "consumed"),
        row("dropped", "dropped"),
        row("still retrying", "retrying"),
        row("deliveries", "deliveries"),
        row(f"{SCHEDULE_TOPIC} writes", "schedule_topic_writes"),
        row("retry topic writes", "retry_topic_writes"),
        row("DLQ writes", "dlq_writes"),
        row("broker writes", "broker_writes"),
        ("longest to consumption", longest(o), longest(c), longest(p), ""),
    ]
    return _table(rows)


def _changes(title: str, changes: tuple[MessageChange, ...], observed: str) -> list[str]:
    out = [f"{title} ({len(changes)}):"]
    if not changes:
        return [*out, "  none"]
    rows = [("msg_id", "kind", observed, "new policy", "at", "after", "deliveries")]
    rows += [
        (
            c.msg_id,
            c.failure_kind or "-",
            _when(c.observed_at),
            c.proposed_state,
            _when(c.proposed_at),
            _span(c.to_end_ms),
            str(c.proposed_deliveries),
        )
        for c in changes[:LISTED]
    ]
    out += _table(rows)
    if len(changes) > LISTED:
        out.append(f"  … and {len(changes) - LISTED} more (--format json lists them all)")
    return out


def render(w: WhatIf) -> str:
    scope = w.date_from if w.date_from == w.date_to else f"{w.date_from}..{w.date_to}"
    out = [f"what if: consumer group {w.group}, {scope} ({len(w.dates)} reconstructed date(s): {', '.join(w.dates)})"]
    out.append("new policy:")
    if w.settings:
        rows = [(s.name, _value(s.current), "->", _value(s.proposed), s.note) for s in w.settings]
        out += _table(rows)
    else:
        out.append("  the same as the configured one (no setting changed)")
    out.append("")
    if not w.failed_messages:
        out.append(f"No failures of {w.group} in {scope}: there is nothing to replay.")
        return "\n".join(out)
    kinds = ", ".join(f"{k} {n}" for k, n in w.by_kind.items()) or "none"
    out.append(f"failed messages: {w.failed_messages}, replayed {w.replayed} ({kinds})")
    for reason, n in w.not_replayed.items():
        out.append(f"  not replayed ({n}): {NOT_REPLAYED[reason]}")
    if w.replayed:
        out += ["", *_totals(w)]
        if w.current_mismatches:
            out.append(
                f"  note: the current policy's replay ends {w.current_mismatches} message(s) otherwise than observed "
                "(see the reconstruction's anomalies): the differences compare replay with replay"
            )
        out += ["", *_changes("dead letters consumed under the new policy", w.rescued, "dead-lettered")]
        out += ["", *_changes("consumed as observed, given up under the new policy", w.lost, "consumed")]
    out += ["", "assumptions:", *(f"  - {a}" for a in w.assumptions)]
    return "\n".join(out)
