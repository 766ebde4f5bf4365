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
    hops: Sequence[dict[str, object]], *, width: int = 900, row_height: int = 26, title: str = "hop timeline"
) -> Markup:
    """One row per hop: a filled dot at the observed time, a ring at the engine's expected time, a line between
    them (the drift), on one time axis from the first to the last of all those times.

    ``hops`` are dicts with ``hop``, ``to_state``, ``physical_topic``, ``observed_at``, ``expected_at``,
    ``drift_ms`` and ``inferred`` (the read layer's ``Hop.to_dict()``).
    """
    label_w, right = 260, 110
    times = [t for h in hops for t in (_parse_time(h.get("observed_at")), _parse_time(h.get("expected_at"))) if t]
    height = 34 + max(1, len(hops)) * row_height
    head = (
        f'<svg class="chart timeline" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    )
    if not times:
        return Markup(head + '<text class="label" x="8" y="20">no timed hop</text></svg>')
    start, end = min(times), max(times)
    span = (end - start).total_seconds() or 1.0
    plot = width - label_w - right

    def x_of(t: dt.datetime) -> float:
        return label_w + plot * (t - start).total_seconds() / span

    parts = [
        head,
        f'<line class="axis" x1="{label_w}" y1="18" x2="{label_w + plot}" y2="18"/>',
        f'<text class="tick" x="{label_w}" y="12">{escape(start.strftime("%H:%M:%S"))}</text>',
        f'<text class="tick" x="{label_w + plot}" y="12" text-anchor="end">{escape(end.strftime("%H:%M:%S"))}</text>',
        f'<text class="tick" x="{label_w + plot / 2}" y="12" text-anchor="middle">'
        f"{escape(_duration(span))} span</text>",
    ]
    for i, hop in enumerate(hops):
        y = 34 + i * row_height
        label = f"{hop.get('hop')}: {hop.get('to_state') or ''} {hop.get('physical_topic') or ''}".strip()
        css = "row inferred" if hop.get("inferred") else "row"
        parts.append(f'<g class="{css}" data-hop="{escape(str(hop.get("hop")))}">')
        parts.append(f'<text class="label" x="{label_w - 8}" y="{y + 4}" text-anchor="end">{escape(label[:40])}</text>')
        parts.append(f'<line class="grid" x1="{label_w}" y1="{y}" x2="{label_w + plot}" y2="{y}"/>')
        observed, expected = _parse_time(hop.get("observed_at")), _parse_time(hop.get("expected_at"))
        if observed and expected:
            parts.append(
                f'<line class="drift" x1="{_num(x_of(expected))}" y1="{y}" x2="{_num(x_of(observed))}" y2="{y}"/>'
            )
        if expected:
            parts.append(f'<circle class="expected" cx="{_num(x_of(expected))}" cy="{y}" r="5"/>')
        if observed:
            parts.append(f'<circle class="observed" cx="{_num(x_of(observed))}" cy="{y}" r="4"/>')
        drift = hop.get("drift_ms")
        note = "inferred" if hop.get("inferred") else (f"drift {_drift(drift)}" if drift is not None else "")
        parts.append(f'<text class="value" x="{label_w + plot + 8}" y="{y + 4}">{escape(note)}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _drift(ms: object) -> str:
    value = int(ms)  # type: ignore[call-overload]
    sign = "+" if value > 0 else ""
    return f"{sign}{value / 1000:.1f} s" if abs(value) < 120_000 else f"{sign}{value / 60000:.1f} min"
