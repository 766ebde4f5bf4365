"""Charts as inline SVG written on the server: no script, no foreign asset, and every label escaped.

Each helper returns ``markupsafe.Markup`` built only from numbers it formats itself and ``escape()``d text, so a
template may insert it as is. Colours and fonts come from classes in static/ops.css: the pages' Content-Security-
Policy allows no inline style.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from markupsafe import Markup, escape


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def bars(
    items: Sequence[tuple[str, float]], *, width: int = 420, bar_height: int = 18, title: str = "", unit: str = ""
) -> Markup:
    """Horizontal bars, one per (label, value), scaled to the largest value; ``unit`` follows each value."""
    label_w, value_w = 150, 60
    top = max((v for _, v in items), default=0) or 1
    height = max(1, len(items)) * (bar_height + 4) + 4
    inner = width - label_w - value_w
    parts = [
        f'<svg class="chart bars" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for i, (label, value) in enumerate(items):
        y = 4 + i * (bar_height + 4)
        w = inner * (value / top) if value > 0 else 0
        short = label if len(label) <= 22 else label[:21] + "…"  # the full name stays in the row's tooltip
        parts.append(
            f"<g><title>{escape(label)}: {escape(_fmt(value) + unit)}</title>"
            f'<text class="label" x="{label_w - 6}" y="{y + bar_height - 5}" text-anchor="end">{escape(short)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{_num(w)}" height="{bar_height}"/>'
            f'<text class="value" x="{_num(label_w + w)}" dx="4" y="{y + bar_height - 5}">'
            f"{escape(_fmt(value) + unit)}</text>"
            "</g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _fmt(value: float) -> str:
    # 16.7, not 16.700: the value as the page's tables print it
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}".rstrip("0")


def sparkline(values: Sequence[float | None], *, width: int = 160, height: int = 32, title: str = "") -> Markup:
    """A trend line; ``None`` (no data that day) breaks the line rather than pretending zero."""
    n = len(values)
    known = [v for v in values if v is not None]
    top = max(known, default=0) or 1
    step = (width - 8) / max(1, n - 1)
    segments: list[list[str]] = [[]]
    dots = []
    for i, v in enumerate(values):
        if v is None:
            segments.append([])
            continue
        x, y = 4 + i * step, height - 4 - (height - 8) * (v / top)
        segments[-1].append(f"{_num(x)},{_num(y)}")
        dots.append(f'<circle class="dot" cx="{_num(x)}" cy="{_num(y)}" r="1.8"/>')
    lines = "".join(f'<polyline class="spark" points="{" ".join(s)}"/>' for s in segments if len(s) > 1)
    return Markup(
        f'<svg class="chart sparkline" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{lines}{"".join(dots)}</svg>'
    )


def _parse_time(value: object) -> dt.datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    text = str(value).replace("Z", "+00:00")
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def timeline(
    hops: Sequence[dict[str, object]], *, width: int = 1080, per_row: int = 8, title: str = "hop timeline"
) -> Markup:
    """The hops in order, one step each, evenly spaced and wrapping after ``per_row`` steps: a time axis puts the
    first retries of a long schedule (seconds apart) on one spot and the last (hours apart) far off, so the axis
    is the hop order and the time is written on each step instead: the wait since the previous hop (``+10 s``)
    on the link into it, the drift from the engine's expected time under it.

    A filled dot is an observed hop, a ring an inferred one (the engine proves it happened, no line shows it).
    ``hops`` are dicts with ``hop``, ``to_state``, ``physical_topic``, ``observed_at``, ``expected_at``,
    ``drift_ms`` and ``inferred`` (the read layer's ``Hop.to_dict()``).
    """
    step_w = width / per_row
    row_h, top = 74, 8
    rows = max(1, -(-len(hops) // per_row))
    height = top + rows * row_h
    parts = [
        f'<svg class="chart timeline" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    if not hops:
        return Markup(parts[0] + '<text class="label" x="8" y="20">no hop</text></svg>')
    previous: dt.datetime | None = None
    for i, hop in enumerate(hops):
        row, col = divmod(i, per_row)
        cx, cy = step_w * col + step_w / 2, top + row * row_h + 30
        at = _parse_time(hop.get("observed_at")) or _parse_time(hop.get("expected_at"))
        wait = _duration((at - previous).total_seconds()) if at and previous else ""
        previous = at or previous
        css = "step inferred" if hop.get("inferred") else "step"
        state = str(hop.get("to_state") or "")
        topic = str(hop.get("physical_topic") or "")
        when = str(hop.get("observed_at") or hop.get("expected_at") or "no time")
        parts.append(f'<g class="{css}" data-hop="{escape(str(hop.get("hop")))}">')
        tip = f"hop {hop.get('hop')}: {state} {topic} at {when}"
        parts.append(f"<title>{escape(tip)}</title>")
        if col > 0:  # the link from the previous step in this row, with the wait written on it
            parts.append(
                f'<line class="link" x1="{_num(cx - step_w + 7)}" y1="{_num(cy)}" x2="{_num(cx - 7)}" y2="{_num(cy)}"/>'
            )
        if wait:  # a row's first step has its wait at the row's left edge, not outside the chart
            x, anchor = (cx - step_w / 2, "middle") if col > 0 else (2.0, "start")
            parts.append(
                f'<text class="wait" x="{_num(x)}" y="{_num(cy + 14)}" text-anchor="{anchor}">+{escape(wait)}</text>'
            )
        circle = "inferred" if hop.get("inferred") else "observed"
        parts.append(f'<circle class="{circle}" cx="{_num(cx)}" cy="{_num(cy)}" r="5"/>')
        parts.append(
            f'<text class="label" x="{_num(cx)}" y="{_num(cy - 12)}" text-anchor="middle">'
            f"{escape(str(hop.get('hop')))} {escape(_short(state, 16))}</text>"
        )
        drift = hop.get("drift_ms")
        note = "inferred" if hop.get("inferred") else (f"drift {_drift(drift)}" if drift else "")
        if note:
            parts.append(
                f'<text class="note" x="{_num(cx)}" y="{_num(cy + 28)}" text-anchor="middle">{escape(note)}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(seconds: float) -> str:
    from rocketmq_retry.explore.values import duration_text

    if 0 < seconds < 10:  # the hops of one delivery are milliseconds apart
        return f"{seconds:.1f} s".replace(".0 s", " s")
    return duration_text(seconds)


def _drift(ms: object) -> str:
    value = int(ms)  # type: ignore[call-overload]
    sign = "+" if value > 0 else ""
    return f"{sign}{value / 1000:.1f} s" if abs(value) < 120_000 else f"{sign}{value / 60000:.1f} min"


def incident_timeline(
    per_minute: Sequence[Sequence[int]],
    incidents: Sequence[dict[str, object]],
    day_start: object,
    day_end: object,
    *,
    width: int = 1080,
    height: int = 84,
    title: str = "failures per minute",
) -> Markup:
    """Failures per minute over the day (a bar per minute with failures, scaled to the busiest minute) with each
    incident's window shaded from its first to its last failure; an open incident's window runs on to the end of
    the day, is drawn in the warning colour and says "open". ``per_minute``: (minute from the day's start,
    failures); ``incidents``: the read layer's ``Incident.to_dict()``; the day's bounds as ISO text or datetimes.
    Times on the axis are UTC, as every time on the pages."""
    start, end = _parse_time(day_start), _parse_time(day_end)
    if start is None or end is None or end <= start:
        return Markup(
            f'<svg class="chart causes" role="img" width="{width}" height="20"><title>{escape(title)}</title></svg>'
        )
    minutes = (end - start).total_seconds() / 60
    left, right, top, axis = 4, 4, 14, 16
    inner_w, inner_h = width - left - right, height - top - axis
    peak = max((int(n) for _, n in per_minute), default=0) or 1

    def x_of(minute: float) -> float:
        return left + inner_w * max(0.0, min(minutes, minute)) / minutes

    def minute_of(value: object) -> float | None:
        moment = _parse_time(value)
        return None if moment is None else (moment - start).total_seconds() / 60

    parts = [
        f'<svg class="chart causes" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for inc in incidents:
        first = minute_of(inc.get("started_at"))
        if first is None:
            continue
        is_open = inc.get("ended_at") is None
        last = minutes if is_open else (minute_of(inc.get("last_failure_at")) or first)
        x1, x2 = x_of(first), x_of(last)
        css = "incident open" if is_open else "incident"
        state = "open" if is_open else f"ended {inc.get('ended_at')}"
        tip = f"incident {inc.get('incident_id')}: from {inc.get('started_at')}, {state}"
        parts.append(
            f'<g class="{css}"><title>{escape(tip)}</title>'
            f'<rect class="window" x="{_num(x1)}" y="{top}" width="{_num(max(2.0, x2 - x1))}" height="{inner_h}"/>'
        )
        if is_open:
            parts.append(f'<text class="open" x="{_num(x1 + 3)}" y="{top - 3}">open</text>')
        parts.append("</g>")
    bar_w = max(1.0, inner_w / minutes)
    for minute, n in per_minute:
        h = inner_h * int(n) / peak
        parts.append(
            f'<rect class="bar" x="{_num(x_of(int(minute)))}" y="{_num(top + inner_h - h)}" width="{_num(bar_w)}" '
            f'height="{_num(h)}"><title>{escape(_clock(start, int(minute)))}: {int(n)} failures</title></rect>'
        )
    base = top + inner_h
    parts.append(f'<line class="axis" x1="{left}" y1="{base}" x2="{width - right}" y2="{base}"/>')
    for hour in range(0, int(minutes // 60) + 1, 3):
        x = x_of(hour * 60)
        anchor = "start" if hour == 0 else ("end" if hour * 60 >= minutes else "middle")
        parts.append(
            f'<text class="tick" x="{_num(x)}" y="{height - 3}" text-anchor="{anchor}">'
            f"{escape(_clock(start, hour * 60))}</text>"
        )
    parts.append(f'<text class="tick" x="{width - right}" y="10" text-anchor="end">peak {peak}/min</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _clock(start: dt.datetime, minute: int) -> str:
    return (start + dt.timedelta(minutes=minute)).astimezone(dt.UTC).strftime("%H:%M")
