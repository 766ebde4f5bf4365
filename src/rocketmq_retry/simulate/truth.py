"""Ground truth written beside the logs (``<out>/_truth/``), so tests and benchmarks can score the pipeline.

- ``publishes.csv``: one row per business message the producers tried to send (attempts, stored or not);
- ``lifecycles.csv``: one row per (consumer group, instance, message): deliveries, final state, hop times;
  ``client_host`` is the instance's host (shared by the groups of one ``application``, named in ``application``);
- ``hops.csv``: one row per delivery and per engine decision after a failed delivery;
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
    "send_back_faults", "timeouts", "application",
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
            )
        ]


def write_csv(path: pathlib.Path, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> pathlib.Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return path
