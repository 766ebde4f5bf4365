"""The replay: every observed failed message run forward again, delivery by delivery, under a group policy.

Pure Python over an ``Observation``: whether a delivery fails comes from the message's kind (docs/causes.md
"What if"), when the next delivery happens and whether the message is dead-lettered instead comes from the
engine's ``next_hop`` for the policy, exactly as ``engine.expected_path`` runs a path (whose failure template is
keyed by reconsume times only, while an outage's end is a time: hence this loop).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Callable

from rocketmq_retry import contract
from rocketmq_retry.engine import ConsumeOutcome, FailedDelivery, GroupPolicy, HopAction, next_hop
from rocketmq_retry.schedule import FOREVER_PROBE
from rocketmq_retry.whatif.model import (
    Incident,
    MessageChange,
    Observation,
    ObservedMessage,
    Setting,
    Totals,
    WhatIf,
)

# failures.cause -> the outcome the engine is told. Only two change a path: a consume timeout is sent back at
# level 3 by ProcessQueue#cleanExpiredMsg (§1.6), a null result skips the gRPC FIFO consumer's local retries
# (§5.3). A fingerprint (an exception) and every other code is a plain failure.
_Code = contract.CauseCode
OUTCOME_OF_CAUSE: dict[str, ConsumeOutcome] = {
    _Code.RETURNED_NULL: ConsumeOutcome.RETURN_NULL,
    _Code.RECONSUME_LATER: ConsumeOutcome.RECONSUME_LATER,
    _Code.CONSUME_TIMEOUT: ConsumeOutcome.TIMEOUT,  # longer than consumeTimeout
    _Code.INVISIBLE_TIME_EXPIRED: ConsumeOutcome.RECONSUME_LATER,  # a POP / SimpleConsumer delivery not acked
    _Code.UNKNOWN: ConsumeOutcome.RECONSUME_LATER,
}
_GAVE_UP = (contract.DEAD_LETTERED, contract.DROPPED)  # the observed policy stopped delivering it


def outcome_of(cause: str | None) -> ConsumeOutcome:
    """The outcome the engine is told for a failure of ``cause``: an exception's fingerprint is an exception."""
    return OUTCOME_OF_CAUSE.get(cause or "", ConsumeOutcome.EXCEPTION if cause else ConsumeOutcome.RECONSUME_LATER)


# why a message is not replayed, with the words the result prints
NOT_REPLAYED = {
    "unsettled": "still in retry (or its end unknown) at the end of observation, and its failures are not of an "
    "outage or poison: what its later deliveries would do is not known",
    "failures-not-contiguous": "its failures in the range do not run from the first delivery on (the range starts "
    "inside its retries, or a delivery's evidence is missing)",
    "incident-not-found": "an outage whose incident is not in the incidents table of the range",
    "no-lifecycle": "failures without a lifecycle row in the range",
}


@dataclasses.dataclass(frozen=True)
class Run:
    """One message under one policy."""

    final_state: str  # contract.FINAL_STATES
    ended_at: dt.datetime  # consumed, dead-lettered or dropped at; the last delivery when still retrying
    deliveries: int
    schedule_topic_writes: int
    retry_topic_writes: int
    dlq_writes: int


def _ms(value: dt.datetime) -> int:
    return int(value.timestamp() * 1000)


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def run_message(
    policy: GroupPolicy,
    *,
    start: dt.datetime,
    fails: Callable[[int, int], bool],
    outcome: Callable[[int], ConsumeOutcome],
    topic: str | None,
    born: dt.datetime | None = None,
) -> Run:
    """Deliver from ``start`` until a delivery succeeds or the engine's hop is terminal. ``fails(k, at_ms)``: does
    delivery k (0 = the first) at that time fail; ``outcome(k)``: how it fails.

    Writes, as the engine's hops say (``SendMessageProcessor#consumerSendMsgBack`` and the store put the copy in
    ``SCHEDULE_TOPIC_XXXX``, from which ``ScheduleMessageService`` writes it again to its ``REAL_TOPIC``, §2.2, §3.2,
    §3.3; a POP / gRPC revive writes the pop retry topic, §2.6; a local retry writes nothing): one schedule-topic
    write per hop through it, one retry-topic write per copy that reaches a retry topic, one per DLQ copy.
    """
    at = _ms(start)
    born_ms = _ms(born) if born is not None else at
    r, stored = 0, None
    schedule = retry = dlq = 0
    k = 0
    while True:
        if not fails(k, at):
            return Run(contract.CONSUMED, _at(at), k + 1, schedule, retry, dlq)
        if k + 1 >= FOREVER_PROBE:
            # orderly with Integer.MAX_VALUE retries, huge maxima: the engine's own "never ends in practice", which
            # the tables call IN_RETRY
            return Run(contract.IN_RETRY, _at(at), k + 1, schedule, retry, dlq)
        hop = next_hop(
            policy,
            FailedDelivery(
                reconsume_times=r,
                stored_reconsume_times=stored,
                failed_at_ms=at,
                delivered_at_ms=at,
                born_at_ms=born_ms,
                outcome=outcome(k),
                original_topic=topic or "",
            ),
        )
        schedule += hop.via_schedule_topic
        if hop.action == HopAction.DEAD_LETTER:
            dlq += 1
        elif hop.via_schedule_topic or hop.action == HopAction.INVISIBLE_RETRY:
            retry += 1
        if hop.terminal:
            state = contract.DEAD_LETTERED if hop.action == HopAction.DEAD_LETTER else contract.DROPPED
            return Run(state, _at(hop.ready_at_ms), k + 1, schedule, retry, dlq)
        r, stored, at = hop.reconsume_times, hop.stored_reconsume_times, hop.ready_at_ms
        k += 1


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a message's deliveries fail, decided once from what was observed (docs/causes.md "What if")."""

    start: dt.datetime
    fails: Callable[[int, int], bool]
    outcome: Callable[[int], ConsumeOutcome]


def plan_of(message: ObservedMessage, incidents: dict[str, Incident], observed_end: dt.datetime | None) -> Plan | str:
    """The message's plan, or the ``NOT_REPLAYED`` reason it has none."""
    if message.final_state is None:
        return "no-lifecycle"
    by_k = {f.reconsume_times: f for f in message.failures}
    first = by_k.get(0)
    start = first.failed_at if first is not None else message.first_seen
    last_cause = message.failures[-1].cause

    def outcome(k: int) -> ConsumeOutcome:
        seen = by_k.get(k)
        cause = seen.cause if seen is not None else last_cause
        return outcome_of(cause)

    if start is None:
        return "failures-not-contiguous"
    if message.failure_kind == contract.POISON:
        return Plan(start, lambda k, at: True, outcome)
    if message.failure_kind == contract.OUTAGE:
        incident = incidents.get(message.incident_id or "")
        if incident is None:
            return "incident-not-found"
        until = incident.ended_at or observed_end
        if until is None:
            return "incident-not-found"
        end_ms = _ms(until)
        return Plan(start, lambda k, at: at < end_ms, outcome)
    if sorted(by_k) != list(range(len(by_k))):
        return "failures-not-contiguous"
    if message.final_state == contract.CONSUMED:
        return Plan(start, lambda k, at: k in by_k, outcome)
    if message.final_state in _GAVE_UP:
        return Plan(start, lambda k, at: True, outcome)
    return "unsettled"


def _observed_end_of(m: ObservedMessage) -> dt.datetime | None:
    if m.final_state == contract.DEAD_LETTERED:
        return m.dlq_at or m.last_seen
    return m.last_seen


def _totals(runs: dict[str, Run], starts: dict[str, dt.datetime]) -> Totals:
    states = Counter(r.final_state for r in runs.values())
    longest = max(
        ((_ms(r.ended_at) - _ms(starts[m]), m) for m, r in runs.items() if r.final_state == contract.CONSUMED),
        default=None,
    )
    return Totals(
        dead_letters=states[contract.DEAD_LETTERED],
        consumed=states[contract.CONSUMED],
        dropped=states[contract.DROPPED],
        retrying=states[contract.IN_RETRY],
        deliveries=sum(r.deliveries for r in runs.values()),
        schedule_topic_writes=sum(r.schedule_topic_writes for r in runs.values()),
        retry_topic_writes=sum(r.retry_topic_writes for r in runs.values()),
        dlq_writes=sum(r.dlq_writes for r in runs.values()),
        longest_to_consumption_ms=longest[0] if longest else None,
        longest_msg_id=longest[1] if longest else None,
    )


def _observed_totals(messages: list[ObservedMessage], starts: dict[str, dt.datetime]) -> Totals:
    states = Counter(m.final_state for m in messages)
    consumed = [
        (_ms(m.last_seen) - _ms(starts[m.msg_id]), m.msg_id)
        for m in messages
        if m.final_state == contract.CONSUMED and m.last_seen is not None
    ]
    longest = max(consumed, default=None)
    return Totals(
        dead_letters=states[contract.DEAD_LETTERED],
        consumed=states[contract.CONSUMED],
        dropped=states[contract.DROPPED],
        retrying=sum(
            n for s, n in states.items() if s not in (contract.DEAD_LETTERED, contract.CONSUMED, contract.DROPPED)
        ),
        deliveries=sum(m.deliveries or 0 for m in messages),
        schedule_topic_writes=None,
        retry_topic_writes=None,
        dlq_writes=None,
        longest_to_consumption_ms=longest[0] if longest else None,
        longest_msg_id=longest[1] if longest else None,
    )


def replay(
    observation: Observation,
    current: GroupPolicy,
    proposed: GroupPolicy,
    settings: tuple[Setting, ...] = (),
) -> WhatIf:
    """The observation's failed messages under ``current`` (the baseline) and ``proposed``."""
    plans: dict[str, Plan] = {}
    skipped: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    by_id = {m.msg_id: m for m in observation.messages}
    for m in observation.messages:
        plan = plan_of(m, observation.incidents, observation.observed_end)
        if isinstance(plan, str):
            skipped[plan] += 1
            continue
        plans[m.msg_id] = plan
        kinds[m.failure_kind or contract.UNKNOWN_KIND] += 1

    def runs(policy: GroupPolicy) -> dict[str, Run]:
        return {
            msg_id: run_message(
                policy,
                start=p.start,
                fails=p.fails,
                outcome=p.outcome,
                topic=by_id[msg_id].original_topic,
                born=by_id[msg_id].first_seen,
            )
            for msg_id, p in plans.items()
        }

    base, new = runs(current), runs(proposed)
    starts = {m: p.start for m, p in plans.items()}
    replayed = [by_id[m] for m in plans]
    rescued, lost = [], []
    for m in replayed:
        run = new[m.msg_id]
        change = MessageChange(
            msg_id=m.msg_id,
            failure_kind=m.failure_kind,
            observed_state=m.final_state,
            observed_at=_observed_end_of(m),
            proposed_state=run.final_state,
            proposed_at=run.ended_at,
            proposed_deliveries=run.deliveries,
            to_end_ms=_ms(run.ended_at) - _ms(starts[m.msg_id]),
        )
        if m.final_state in _GAVE_UP and run.final_state == contract.CONSUMED:
            rescued.append(change)
        elif m.final_state == contract.CONSUMED and run.final_state in _GAVE_UP:
            lost.append(change)
    mismatches = sum(1 for m in replayed if base[m.msg_id].final_state != m.final_state)
    return WhatIf(
        group=observation.group,
        date_from=observation.date_from,
        date_to=observation.date_to,
        dates=observation.dates,
        observed_end=observation.observed_end,
        settings=settings,
        failed_messages=len(observation.messages),
        replayed=len(plans),
        by_kind=dict(sorted(kinds.items())),
        not_replayed=dict(sorted(skipped.items())),
        observed=_observed_totals(replayed, starts),
        current=_totals(base, starts),
        proposed=_totals(new, starts),
        rescued=tuple(sorted(rescued, key=lambda c: (c.proposed_at, c.msg_id))),
        lost=tuple(sorted(lost, key=lambda c: (c.proposed_at, c.msg_id))),
        current_mismatches=mismatches,
        assumptions=assumptions(observation, proposed, kinds, new),
    )


def assumptions(
    observation: Observation, proposed: GroupPolicy, kinds: Counter[str], new: dict[str, Run]
) -> tuple[str, ...]:
    """What the replay takes for granted, printed with every result."""
    out = [
        "A delivery fails by its failures' kind (docs/causes.md): an outage's message fails while its incident is "
        "open and succeeds on its first delivery after the incident's ended_at; a poison message always fails; any "
        "other message fails delivery k exactly when its observed delivery k (failures.reconsume_times) failed.",
        "Beyond what was observed, a message that was consumed succeeds and one that was dead-lettered (or dropped) "
        "keeps failing.",
        "The first delivery keeps its observed time (the failure at reconsume times 0, else the lifecycle's "
        "first_seen); every later one is scheduled by the engine's next_hop for the policy. A failure is acted on "
        "when it is delivered: processing time and the schedule service's polling are not modelled, as in the "
        "engine's expected path.",
        f"Group mode and protocol from the config: {proposed.protocol.value} {proposed.consume_mode.value}, "
        f"{proposed.message_model.value}, broker {'.'.join(map(str, proposed.broker_version))}"
        + ("" if observation.configured else " (the group is not in the config: RocketMQ's defaults)")
        + ".",
        "Writes are counted as the engine's hops say, not read from the logs; the current-policy column replays the "
        "configured policy the same way, so each difference compares like with like.",
    ]
    open_outages = {
        m.incident_id
        for m in observation.messages
        if m.failure_kind == contract.OUTAGE
        and m.incident_id in observation.incidents
        and observation.incidents[m.incident_id].ended_at is None
    }
    if open_outages:
        end = observation.observed_end
        out.append(
            f"{len(open_outages)} incident(s) still open at the end of observation "
            f"({end.isoformat().replace('+00:00', 'Z') if end else 'unknown'}): taken to fail until then and to "
            "succeed on the first delivery after it."
        )
    if any(r.final_state == contract.IN_RETRY for r in new.values()):
        out.append(
            f"A message still failing after {FOREVER_PROBE} deliveries is counted as retrying forever; its writes "
            "are those of the deliveries counted."
        )
    if kinds.get(contract.FLOW_CONTROL) or kinds.get(contract.MIXED) or kinds.get(contract.UNKNOWN_KIND):
        out.append("Flow-control, mixed and unknown-kind failures are replayed as observed (their kind says nothing "
                   "about a later delivery).")  # fmt: skip
    return tuple(out)
