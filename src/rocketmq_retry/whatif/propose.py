"""The policy that would have outlasted an incident (docs/causes.md "What if", "The incident's what-if"): the smallest
maximum of retries under which a message that first fails when the incident starts is still being delivered when
it ends. Pure: a group policy, the incident's length and how its deliveries fail; every time comes from the engine,
through the very loop the replay runs (``replay.run_message``), so the proposal and the replay cannot disagree on
when a delivery happens.

Which maximum: a remoting consumer (concurrently, orderly, POP) sends its own ``maxReconsumeTimes``, which wins
on the broker (§1.4, §4, §1.7, §2.2 step 9); a gRPC consumer (push, FIFO, SimpleConsumer) follows the group's
``retryMaxTimes`` (maxAttempts - 1, §5.2). The delays between deliveries are the engine's for the group as it is
configured: the broker's delay level table for a remoting send-back (level 3 + r, §2.2, §3.1, clamped at the last
level, §3.2), the suspend time of an orderly one (§4), the retry policy of a gRPC push or FIFO one (§5.1, §5.3),
the invisible duration of a SimpleConsumer (§5.5).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from rocketmq_retry import contract
from rocketmq_retry.dates import format_duration
from rocketmq_retry.engine import (
    ConsumeOutcome,
    FailedDelivery,
    GroupPolicy,
    effective_max_reconsume_times,
    expected_path,
)
from rocketmq_retry.engine.max_reconsume_times import is_grpc
from rocketmq_retry.schedule import FOREVER_PROBE
from rocketmq_retry.whatif.policy import PolicyChange
from rocketmq_retry.whatif.replay import Run, run_message

# The replay counts a message still failing after FOREVER_PROBE deliveries as retrying forever: a larger maximum
# could not be told apart from "forever" by it.
MAX_PROPOSED = FOREVER_PROBE - 2
_START = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class Knob:
    """The maximum a consumer kind reads: its config key, its name in RocketMQ and the whatif option."""

    key: str
    name: str
    option: str


REMOTING_MAX = Knob("max_reconsume_times", "maxReconsumeTimes", "--max-reconsume-times")
GRPC_MAX = Knob("retry_max_times", "retryMaxTimes", "--retry-max-times")


def knob_of(policy: GroupPolicy) -> Knob:
    return GRPC_MAX if is_grpc(policy) else REMOTING_MAX


@dataclasses.dataclass(frozen=True)
class Ending:
    """A message that first fails when the incident starts, under one policy: how it ends, after how many
    deliveries, and ``after_ms`` from its first delivery to that end (the delivery that succeeds, or the DLQ copy)."""

    end: str  # contract.FINAL_STATES
    deliveries: int
    after_ms: int

    def words(self) -> str:
        span = format_duration(self.after_ms)
        if self.end == contract.CONSUMED:
            return f"consumed on delivery {self.deliveries}, {span} after the first"
        n = f"{self.deliveries} {'delivery' if self.deliveries == 1 else 'deliveries'}"
        if self.end == contract.DEAD_LETTERED:
            return f"dead-lettered after {n}, {span} after the first"
        if self.end == contract.DROPPED:
            return f"dropped after {n}, {span} after the first"
        return f'still retrying after {self.deliveries} deliveries ({span}): the engine\'s "never ends"'


@dataclasses.dataclass(frozen=True)
class Proposal:
    """The smallest maximum that outlasts the incident, or why none is proposed (``reason``)."""

    duration_ms: int
    outcome: str  # engine.ConsumeOutcome: how the incident's deliveries fail
    knob: Knob
    configured: int  # the key's configured value (-1: the mode's default)
    effective: int  # the maximum the engine uses with it
    now: Ending  # under the configured policy
    proposed: int | None
    under: Ending | None  # under the proposed maximum
    reason: str | None

    @property
    def change(self) -> PolicyChange | None:
        if self.proposed is None:
            return None
        return PolicyChange(**{self.knob.key: self.proposed})

    def option_args(self) -> list[str]:
        """The whatif command's policy option for the proposal (none when nothing is proposed)."""
        return [] if self.proposed is None else [self.knob.option, str(self.proposed)]

    def words(self) -> str:
        length = format_duration(self.duration_ms)
        if self.proposed is None or self.under is None:
            return f"No change proposed: {self.reason}"
        configured = (
            f"{self.configured} ({self.effective})" if self.configured != self.effective else str(self.configured)
        )
        return (
            f"{self.knob.name} {configured} → {self.proposed}: a message that first fails when the incident starts "
            f"is {self.under.words()}, when the incident ({length}) is over; under the configured policy it is "
            f"{self.now.words()}."
        )

    def as_dict(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["words"] = self.words()
        return out


def _run(policy: GroupPolicy, duration_ms: int, outcome: ConsumeOutcome) -> Ending:
    # The replay's outage rule: a delivery fails while the incident is open, the first one at or after its end
    # succeeds (docs/causes.md "What if").
    start_ms = int(_START.timestamp() * 1000)
    end_ms = start_ms + duration_ms
    run: Run = run_message(policy, start=_START, fails=lambda k, at: at < end_ms, outcome=lambda k: outcome, topic=None)
    return Ending(run.final_state, run.deliveries, int(run.ended_at.timestamp() * 1000) - start_ms)


def _last_rule(policy: GroupPolicy, outcome: ConsumeOutcome, deliveries: int) -> str:
    """The rule of the hop that ends a path failing every time (what gives the message up, in the engine's words)."""
    path = expected_path(policy, failure=FailedDelivery(reconsume_times=0, outcome=outcome), limit=deliveries)
    return path.steps[-1].next.rule if path.steps else "no delivery"


def propose(
    policy: GroupPolicy, duration_ms: int, outcome: ConsumeOutcome = ConsumeOutcome.RECONSUME_LATER
) -> Proposal:
    """The smallest maximum (``knob_of(policy)``) under which a message that first fails at the incident's start,
    and fails at every delivery before its end, is delivered at or after the end (and so consumed, as the replay
    has it). ``duration_ms``: the incident's start to its end (to the end of observation while it is open)."""
    if duration_ms < 0:
        raise ValueError(f"an incident cannot end before it starts ({duration_ms} ms)")
    knob = knob_of(policy)
    configured = getattr(policy, knob.key)
    now = _run(policy, duration_ms, outcome)

    def under(value: int) -> Ending:
        return _run(dataclasses.replace(policy, **{knob.key: value}), duration_ms, outcome)

    def answer(proposed: int | None, path: Ending | None, reason: str | None) -> Proposal:
        return Proposal(
            duration_ms, outcome.value, knob, configured, effective_max_reconsume_times(policy), now, proposed, path,
            reason,
        )  # fmt: skip

    if now.end == contract.CONSUMED:
        return answer(None, None, f"the configured policy already outlasts the incident: a message that first "
                      f"fails when it starts is {now.words()}.")  # fmt: skip
    if now.end == contract.IN_RETRY:
        return answer(None, None, f"the configured policy never gives a message up (a message failing from the "
                      f"incident's start is {now.words()}); no maximum to raise.")  # fmt: skip
    widest = under(MAX_PROPOSED)
    if widest.end != contract.CONSUMED:
        rule = _last_rule(dataclasses.replace(policy, **{knob.key: MAX_PROPOSED}), outcome, widest.deliveries)
        return answer(None, None, f"even with {knob.name} {MAX_PROPOSED}, a message that first fails when the "
                      f"incident starts is {widest.words()} (the engine: {rule}): no maximum of retries outlasts "
                      "it.")  # fmt: skip
    # The smallest value that outlasts it, by bisection (a larger maximum only adds deliveries at the end); each
    # run stops at the delivery that succeeds or at the DLQ, so it is never longer than the answer.
    low, high = 0, MAX_PROPOSED
    while low < high:
        middle = (low + high) // 2
        if under(middle).end == contract.CONSUMED:
            high = middle
        else:
            low = middle + 1
    return answer(high, under(high), None)
