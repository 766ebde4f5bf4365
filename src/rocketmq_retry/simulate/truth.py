"""Ground truth written beside the logs (``<out>/_truth/``), so tests and benchmarks can score the pipeline.

- ``publishes.csv``: one row per business message the producers tried to send (attempts, stored or not);
- ``lifecycles.csv``: one row per (consumer group, instance, message): deliveries, final state, hop times;
  ``client_host`` is the instance's host (shared by the groups of one ``application``, named in ``application``);
- ``hops.csv``: one row per delivery and per engine decision after a failed delivery;
- ``incidents.csv``: one row per outage window of a group (scenario ``outages``) on a date of the run;
- a run over several dates (``--days``, ``--collect daily``) adds ``lifecycles_by_date.csv`` and
  ``dead_letters_by_date.csv`` (:mod:`rocketmq_retry.simulate.truth_dates`).

Times are ISO-8601 UTC with milliseconds (``2026-11-20T03:12:45.123Z``) next to epoch ms.
"""

from __future__ import annotations

import csv
import datetime as _dt
import pathlib
from collections.abc import Sequence
from typing import Any

from rocketmq_retry.contract import MIXED, OUTAGE
from rocketmq_retry.simulate.failures import OTHER

PUBLISH_COLUMNS = (
    "msg_id", "topic", "keys", "tags", "order_id", "producer_group", "published_at", "published_at_ms",
    "send_attempts", "final_state",
)  # fmt: skip
LIFECYCLE_COLUMNS = (
    "lifecycle_id", "consumer_group", "instance", "client_host", "client", "app", "protocol", "consume_mode",
    "message_model", "broker_version", "max_reconsume_times", "topic", "keys", "tags", "order_id", "msg_id",
    "origin_offset_msg_id", "body", "behaviour", "failure_kind", "delay_level_override", "published_at",
    "deliveries", "final_state", "final_at", "final_at_ms", "dlq_topic", "dlq_offset_msg_id", "dlq_reconsume_times",
    "delivery_times", "delivery_reconsume_times", "delivery_outcomes", "hop_actions", "hop_delay_levels",
    "send_back_faults", "timeouts", "application", "true_kind", "incident_id", "incident_start_ms",
    "incident_end_ms", "true_cause", "exception_class", "root_cause_class", "delivery_kinds",
)  # fmt: skip
INCIDENT_COLUMNS = (
    "consumer_group", "incident_id", "cause", "exception_class", "root_cause_class", "start", "start_ms", "end",
    "end_ms", "messages", "failures", "dead_letters",
)  # fmt: skip
HOP_COLUMNS = (
    "lifecycle_id", "consumer_group", "msg_id", "seq", "kind", "at", "at_ms", "reconsume_times", "outcome",
    "action", "topic", "delay_level", "ready_at_ms", "rule",
)  # fmt: skip


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class Truth:
    def __init__(self) -> None:
        self.publishes: list[tuple[Any, ...]] = []
        self.lifecycles: list[tuple[Any, ...]] = []
        self.hops: list[tuple[Any, ...]] = []
        self.opened: dict[int, int] = {}  # lifecycle id -> when its business copy was stored (true ms)
        self.incidents: list[tuple[Any, ...]] = []
        self.windows: dict[str, Any] = {}  # incident id -> failures.Incident, set before the lifecycles are written

    def publish(
        self,
        msg_id: str,
        topic: str,
        keys: str,
        tags: str,
        order_id: str,
        producer_group: str,
        at_ms: int,
        attempts: int,
        stored: bool,
    ) -> None:
        state = "STORED" if stored else f"SEND_FAILED_AFTER_{attempts}_ATTEMPTS"
        self.publishes.append((msg_id, topic, keys, tags, order_id, producer_group, iso(at_ms), at_ms, attempts, state))

    def lifecycle(self, lc: Any, broker: Any) -> None:
        g = lc.group
        p = g.policy
        stored = lc.msg.stored
        self.opened[lc.lid] = stored.store_ts
        self.lifecycles.append(
            (
                lc.lid, g.name, lc.inst.index, lc.inst.host.name, lc.inst.kind, g.scenario.app, p.protocol.value,
                p.consume_mode.value, p.message_model.value, broker.version, g.max_reconsume, lc.msg.topic,
                lc.msg.keys, lc.msg.tags, lc.msg.order_id, lc.msg.uniq_key, stored.offset_msg_id if stored else "",
                lc.msg.body.decode("utf-8"), lc.behaviour, lc.kind,
                g.scenario.delay_level or getattr(p, "delay_level_when_next_consume", 0), iso(lc.msg.born_ts),
                len(lc.deliveries), lc.final_state, iso(lc.final_at), lc.final_at if lc.final_at is not None else "",
                lc.dlq.topic if lc.dlq else "", lc.dlq.offset_msg_id if lc.dlq else "",
                lc.dlq.reconsume_times if lc.dlq else "",
                ";".join(iso(d[0]) for d in lc.deliveries), ";".join(str(d[1]) for d in lc.deliveries),
                ";".join(d[2] or "PENDING" for d in lc.deliveries), ";".join(h["action"] for h in lc.hops),
                ";".join("" if h["delay_level"] is None else str(h["delay_level"]) for h in lc.hops),
                lc.send_back_faults, lc.timeouts, g.run.name if g.run is not None else "",
                *_kind_columns(lc, self.windows),
            )
        )  # fmt: skip
        events: list[tuple[int, int, tuple[Any, ...]]] = []
        for n, (at, r, outcome) in enumerate(lc.deliveries):
            events.append((at, 2 * n, ("DELIVERY", at, r, outcome or "PENDING", "", "", "", "", "")))
        for n, h in enumerate(lc.hops):
            row = ("HOP", h["at"], h["reconsume_times"], "", h["action"], h["topic"],
                   "" if h["delay_level"] is None else h["delay_level"], h["ready_at"], h["rule"])  # fmt: skip
            events.append((h["at"], 2 * n + 1, row))
        events.sort(key=lambda e: (e[0], e[1]))
        for seq, (_, _, (kind, at, r, outcome, action, topic, level, ready, rule)) in enumerate(events):
            self.hops.append(
                (lc.lid, g.name, lc.msg.uniq_key, seq, kind, iso(at), at, r, outcome, action, topic, level, ready, rule)
            )

    def write(self, folder: pathlib.Path) -> list[pathlib.Path]:
        folder.mkdir(parents=True, exist_ok=True)
        return [
            write_csv(folder / name, columns, rows)
            for name, columns, rows in (
                ("publishes.csv", PUBLISH_COLUMNS, self.publishes),
                ("lifecycles.csv", LIFECYCLE_COLUMNS, self.lifecycles),
                ("hops.csv", HOP_COLUMNS, self.hops),
                ("incidents.csv", INCIDENT_COLUMNS, self.incidents),
            )
        ]

    def incidents_of(self, incidents: Sequence[Any], lifecycles: Sequence[Any]) -> None:
        """One row per planned outage window (``failures.Incident``), with what it did: distinct messages that failed
        in it, those failures, and the messages it dead-lettered (their last failure was in it)."""
        hit: dict[str, list[Any]] = {}
        for lc in lifecycles:
            for inc in dict.fromkeys(f[2] for f in lc.failures if f[2]):
                hit.setdefault(inc, []).append(lc)
        for inc in incidents:
            lcs = hit.get(inc.incident_id, [])
            failures = [f for lc in lcs for f in lc.failures if f[2] == inc.incident_id]
            dead = sum(1 for lc in lcs if lc.dlq is not None and _last_failure(lc)[2] == inc.incident_id)
            self.incidents.append(
                (inc.group, inc.incident_id, inc.cause, failures[0][3] if failures else "",
                 failures[0][4] if failures else "", iso(inc.start_ms), inc.start_ms, iso(inc.end_ms), inc.end_ms,
                 len(lcs), len(failures), dead)
            )  # fmt: skip


def _last_failure(lc: Any) -> tuple[str, ...]:
    return next((f for f in reversed(lc.failures) if f[0]), ("", "", "", "", ""))


def _kind_columns(lc: Any, windows: dict[str, Any]) -> tuple[Any, ...]:
    """``true_kind`` (contract FAILURE_KINDS, or "" for a lifecycle that never failed or failed only otherwise),
    its outage's incident and window, the cause name and the exception and root cause classes logged with its last
    planned failure (empty when the listener threw nothing),
    and the kind of each delivery (aligned with ``delivery_times``: "" for a success, ``other`` for a failure of
    the behaviour mix or a timeout)."""
    kinds = {f[0] for f in lc.failures if f[0]}
    planned = kinds - {OTHER}
    kind = "" if not planned else (MIXED if len(kinds) > 1 else next(iter(planned)))
    last = next((f for f in reversed(lc.failures) if f[0] and f[0] != OTHER), ("", "", "", "", ""))
    window = windows.get(last[2]) if last[0] == OUTAGE else None
    return (
        kind, last[2] if window else "", window.start_ms if window else "", window.end_ms if window else "",
        last[1], last[3], last[4], ";".join(f[0] for f in lc.failures),
    )  # fmt: skip


def write_csv(path: pathlib.Path, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> pathlib.Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return path
