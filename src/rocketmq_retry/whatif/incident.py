"""The what-if of a group's current incident, for the groups page (docs/causes.md "What if", "The incident's
what-if"): the incident's length, the policy that would have outlasted it (``propose``) and the group's failures
replayed under that policy, over the incident's dates capped to the page's range. A read or a policy that fails is
a sentence in the answer (``error``), never an exception: one group's problem leaves the others' what-ifs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
from typing import TYPE_CHECKING, Any

from rocketmq_retry.errors import UserError
from rocketmq_retry.explore.model import plain
from rocketmq_retry.whatif.model import CurrentIncident, WhatIf
from rocketmq_retry.whatif.policy import changed_settings, proposed_policy
from rocketmq_retry.whatif.propose import Proposal, propose
from rocketmq_retry.whatif.read import current_incidents, observe
from rocketmq_retry.whatif.replay import outcome_of, replay

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

COMMAND = "rocketmq-retry whatif"


@dataclasses.dataclass(frozen=True)
class IncidentWhatIf:
    incident: CurrentIncident
    date_from: str  # the replayed range: the incident's dates within the page's, and the day after its last
    date_to: str
    duration_ms: int | None  # start to end; to the end of observation while it is open
    still_open: bool
    proposal: Proposal | None
    result: WhatIf | None  # None when nothing is proposed or something failed
    error: str | None  # why there is no answer, in a sentence
    command: str  # the equivalent command line, to explore further

    @property
    def extra_deliveries(self) -> int | None:
        r = self.result
        return None if r is None else r.proposed.deliveries - r.current.deliveries

    @property
    def extra_schedule_topic_writes(self) -> int | None:
        r = self.result
        if r is None or r.proposed.schedule_topic_writes is None or r.current.schedule_topic_writes is None:
            return None
        return r.proposed.schedule_topic_writes - r.current.schedule_topic_writes

    def as_dict(self) -> dict[str, Any]:
        return {
            "incident": plain(self.incident),
            "date_from": self.date_from,
            "date_to": self.date_to,
            "duration_ms": self.duration_ms,
            "still_open": self.still_open,
            "proposal": self.proposal.as_dict() if self.proposal is not None else None,
            "result": self.result.as_dict() if self.result is not None else None,
            "error": self.error,
            "command": self.command,
            "extra_deliveries": self.extra_deliveries,
            "extra_schedule_topic_writes": self.extra_schedule_topic_writes,
        }


def _day_after(ds: str) -> str:
    return (dt.date.fromisoformat(ds) + dt.timedelta(days=1)).isoformat()


def incident_what_if(ex: Explorer, incident: CurrentIncident, last: str) -> IncidentWhatIf:
    """``incident``'s what-if, reading no date after ``last`` (the page's last date). The day after the incident's
    last date is read too when the page has it: a message the look-back carries over midnight is settled there."""
    group = incident.consumer_group
    date_from, date_to = incident.first_date, min(last, _day_after(incident.last_date))

    def answer(
        command_args: list[str],
        duration_ms: int | None = None,
        still_open: bool = incident.ended_at is None,
        proposal: Proposal | None = None,
        result: WhatIf | None = None,
        error: str | None = None,
    ) -> IncidentWhatIf:
        argv = [*shlex.split(COMMAND), "--group", group, "--from", date_from, "--to", date_to, *command_args]
        return IncidentWhatIf(
            incident, date_from, date_to, duration_ms, still_open, proposal, result, error, shlex.join(argv)
        )

    try:
        observation = observe(ex, group, date_from, date_to)
    except UserError as exc:
        return answer([], error=f"The failures of {date_from}..{date_to} could not be read: {exc}")
    # The newest row the replay reads knows most about the end (the same row its outage rule uses).
    seen = observation.incidents.get(incident.incident_id)
    started = seen.started_at if seen is not None else incident.started_at
    ended = seen.ended_at if seen is not None else incident.ended_at
    until = ended or observation.observed_end
    if started is None or until is None:
        return answer([], error="The incident's start or end is not known: its length cannot be told.")
    duration_ms = max(0, int((until - started).total_seconds() * 1000))
    config = ex.config
    try:
        current = config.group_policy(group)
        proposal = propose(current, duration_ms, outcome_of(incident.fingerprint))
    except (UserError, ValueError) as exc:
        return answer([], duration_ms, ended is None, error=f"The group's policy cannot be replayed: {exc}")
    change = proposal.change
    if change is None:
        return answer([], duration_ms, ended is None, proposal)
    args = proposal.option_args()
    try:
        proposed = proposed_policy(config, group, change)
    except UserError as exc:
        return answer(args, duration_ms, ended is None, proposal, error=str(exc))
    settings = changed_settings(current, proposed, config.group_config(group).broker)
    result = replay(observation, current, proposed, settings)
    return answer(args, duration_ms, ended is None, proposal, result)


def incident_what_ifs(ex: Explorer, first: str, last: str) -> dict[str, IncidentWhatIf]:
    """Group -> the what-if of its current incident over ``first..last``; groups without one are left out."""
    return {g: incident_what_if(ex, i, last) for g, i in sorted(current_incidents(ex, first, last).items())}
