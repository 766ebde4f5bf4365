"""What the what-if replay reads and answers: plain frozen dataclasses, the answer with ``as_dict()`` (JSON-ready,
times as ISO-8601 UTC ``…Z``, as the read layer's results are)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from rocketmq_retry.explore.model import plain

# --- what was observed --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ObservedFailure:
    """One row of ``failures``: the failed delivery ``reconsume_times`` (0 = the first delivery)."""

    reconsume_times: int
    failed_at: dt.datetime
    cause: str | None


@dataclasses.dataclass(frozen=True)
class ObservedMessage:
    """A lifecycle of the group that failed at least once in the range (its newest row), with its failures."""

    msg_id: str
    original_topic: str | None
    first_seen: dt.datetime | None
    last_seen: dt.datetime | None
    deliveries: int | None
    final_state: str | None  # contract.FINAL_STATES
    failure_kind: str | None  # contract.FAILURE_KINDS
    incident_id: str | None
    dlq_at: dt.datetime | None  # dead_letters.dlq_at, when it was dead-lettered
    failures: tuple[ObservedFailure, ...]  # by reconsume_times


@dataclasses.dataclass(frozen=True)
class Incident:
    incident_id: str
    started_at: dt.datetime | None
    ended_at: dt.datetime | None  # None while open


@dataclasses.dataclass(frozen=True)
class CurrentIncident:
    """A group's incident as the pages' date range last saw it (``read.current_incidents``)."""

    consumer_group: str
    incident_id: str
    fingerprint: str | None  # its cause
    cause_label: str | None  # the cause in one line, as the causes page names it
    started_at: dt.datetime | None
    last_failure_at: dt.datetime | None
    ended_at: dt.datetime | None  # None while open
    state: str | None  # contract.INCIDENT_STATES
    first_date: str  # the range's first and last date with a row of it (a date it failed on)
    last_date: str


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the warehouse holds of one group over a date range."""

    group: str
    date_from: str
    date_to: str
    dates: tuple[str, ...]  # the partitions read, oldest first
    observed_end: dt.datetime | None  # the latest lifecycle event read (any group): the end of observation
    messages: tuple[ObservedMessage, ...]
    incidents: dict[str, Incident]
    configured: bool  # the group is in the config (else it runs on the defaults)


# --- the answer ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting the new policy changes, as the engine reads it (``engine.policy_settings`` keys)."""

    name: str
    current: Any
    proposed: Any
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Totals:
    """One policy's outcome over the replayed messages (the observed column has no write counts: the replay
    counts what the engine says, the logs do not count every write)."""

    dead_letters: int
    consumed: int
    dropped: int
    retrying: int  # never settled: still retrying at the end of observation, or retrying forever under the replay
    deliveries: int
    schedule_topic_writes: int | None
    retry_topic_writes: int | None
    dlq_writes: int | None
    longest_to_consumption_ms: int | None
    longest_msg_id: str | None

    @property
    def broker_writes(self) -> int | None:
        parts = (self.schedule_topic_writes, self.retry_topic_writes, self.dlq_writes)
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


@dataclasses.dataclass(frozen=True)
class MessageChange:
    """A message whose end differs between what was observed and the new policy."""

    msg_id: str
    failure_kind: str | None
    observed_state: str | None
    observed_at: dt.datetime | None  # when it was dead-lettered / consumed, as observed
    proposed_state: str
    proposed_at: dt.datetime  # when it is dead-lettered / consumed under the new policy
    proposed_deliveries: int
    to_end_ms: int  # first delivery → that end, under the new policy


@dataclasses.dataclass(frozen=True)
class WhatIf:
    """The replay of a group's failures of a date range under another retry policy (docs/causes.md "What if")."""

    group: str
    date_from: str
    date_to: str
    dates: tuple[str, ...]
    observed_end: dt.datetime | None
    settings: tuple[Setting, ...]
    failed_messages: int
    replayed: int
    by_kind: dict[str, int]  # replayed messages per failure kind
    not_replayed: dict[str, int]  # reason -> messages
    observed: Totals
    current: Totals  # the group's configured policy, replayed the same way: the baseline of every difference
    proposed: Totals
    rescued: tuple[MessageChange, ...]  # dead-lettered (or dropped) as observed, consumed under the new policy
    lost: tuple[MessageChange, ...]  # consumed as observed, dead-lettered or dropped under the new policy
    current_mismatches: int  # replayed messages whose end under the current policy is not the observed one
    assumptions: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = plain(self)
        for key in ("observed", "current", "proposed"):
            out[key]["broker_writes"] = getattr(self, key).broker_writes
        return out
