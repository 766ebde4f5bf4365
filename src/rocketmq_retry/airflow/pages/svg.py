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
