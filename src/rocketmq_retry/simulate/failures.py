"""Which deliveries fail for a reason the operator must tell apart (docs/causes.md): a downstream outage (every
delivery of the group inside the window fails with the outage's exception), a poison message (every delivery of it
fails), a throttling listener (about half of the first deliveries of a burst are refused and succeed on their
first retry). Everything else fails or succeeds by the scenario's behaviour mix.

The plan is fixed before the run from the scenario (windows at local times of every date); the only draws are the
throttled share, made at a first delivery inside a throttling window, so a scenario without these keys draws
exactly what it drew before.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from rocketmq_retry.contract import FLOW_CONTROL, OUTAGE, POISON
from rocketmq_retry.simulate.exceptions import THROTTLE_CAUSE
from rocketmq_retry.simulate.model import GroupRun
from rocketmq_retry.simulate.scenario import Window

OTHER = "other"  # a failure of the behaviour mix or a consume timeout: none of the kinds


@dataclass(frozen=True)
class Incident:
    """One outage window of one group on one date: true time ``[start_ms, end_ms)``."""

    group: str
    incident_id: str
    cause: str
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class Forced:
    """A delivery that fails for a planned reason: its kind, cause name and incident (outages)."""

    kind: str  # OUTAGE | POISON | FLOW_CONTROL
    cause: str
    incident_id: str = ""
    later: bool = False  # the listener returns RECONSUME_LATER instead of throwing


class FailurePlan:
    def __init__(self, groups: list[GroupRun], days: list[tuple[_dt.date, int, int]]) -> None:
        self.incidents: list[Incident] = []
        self._outages: dict[str, list[Incident]] = {}
        self._throttles: dict[str, list[tuple[int, int, Window]]] = {}
        for g in groups:
            for day, start, _end in days:
                for w in g.scenario.outages:
                    lo, hi = _bounds(start, w)
                    local = f"{day.isoformat()}T{w.start_minute // 60:02d}:{w.start_minute % 60:02d}"
                    inc = Incident(g.name, f"{g.name}/{local}", w.cause, lo, hi)
                    self.incidents.append(inc)
                    self._outages.setdefault(g.name, []).append(inc)
                if g.scenario.throttle is not None:
                    self._throttles.setdefault(g.name, []).append(
                        (*_bounds(start, g.scenario.throttle), g.scenario.throttle)
                    )

    def incident_at(self, group: str, t: int) -> Incident | None:
        return next((i for i in self._outages.get(group, ()) if i.start_ms <= t < i.end_ms), None)

    def throttle_at(self, group: str, t: int) -> Window | None:
        return next((w for lo, hi, w in self._throttles.get(group, ()) if lo <= t < hi), None)

    def throttle_windows(self, group: str) -> list[tuple[int, int, Window]]:
        return list(self._throttles.get(group, ()))

    def forced(self, g: GroupRun, poison: str, first: bool, t: int, draw: float | None) -> Forced | None:
        """The planned failure of a delivery of ``g`` starting at ``t`` (``first``: the lifecycle's first), or
        None: a poison message fails first (its body is refused before any call), then an outage, then the
        throttle (``draw``: the uniform draw that decides it, made by the caller only inside a window)."""
        if poison and g.scenario.poison > 0:
            return Forced(POISON, g.scenario.poison_cause)
        inc = self.incident_at(g.name, t)
        if inc is not None:
            return Forced(OUTAGE, inc.cause, inc.incident_id)
        w = self.throttle_at(g.name, t) if first else None
        if w is not None and draw is not None and draw < w.share:
            return Forced(FLOW_CONTROL, THROTTLE_CAUSE, later=not w.raises and g.scenario.app != "spring")
        return None


def _bounds(day_start: int, w: Window) -> tuple[int, int]:
    lo = day_start + w.start_minute * 60_000
    return lo, lo + int(w.minutes * 60_000)
