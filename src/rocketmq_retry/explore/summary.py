"""One sentence of what happened to a message under one group, for the top of its page: how often it failed and
with what, when it was dead-lettered (or consumed), and what compensation did. Built only from what the
story's hops, their log lines and the ledger establish; a clause whose facts are missing is left out, never
guessed (an inferred DLQ move has no time to measure from, a failure without a logged exception has no "with").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from rocketmq_retry.compensation.model import State
from rocketmq_retry.contract import UNKNOWN, HopState
from rocketmq_retry.explore.model import Story
from rocketmq_retry.explore.values import duration_text

# RemotingHelper.exceptionSimpleDesc (what "consumeMessage exception: %s" prints) is the exception's toString()
# followed by ", " and its first stack frame: the frame is left for the evidence table.
_FRAME = re.compile(r", [\w$.<>]+\([^()]*\)$")
# java.lang.IllegalStateException -> IllegalStateException: the package says little on a one-line summary.
_PACKAGE = re.compile(r"^(?:[a-z_][\w$]*\.)+(?=[A-Z][\w$]*(?::|$))")
CODE_CHARS = 90  # a longer exception is cut in the sentence, whole in its title and the evidence table


@dataclasses.dataclass(frozen=True)
class Part:
    """A piece of the sentence: plain words, or a value from the logs or the ledger (shown as code)."""

    text: str
    code: bool = False
    title: str = ""


def exception_of(detail: str | None) -> str | None:
    if not detail or not detail.strip():
        return None
    text = _FRAME.sub("", detail.strip())
    return _PACKAGE.sub("", text)


def _hhmm(moment: dt.datetime, day: dt.date | None) -> str:
    """09:12 on the day the sentence is already about, else 2026-11-22 09:12 (UTC like every time on the page)."""
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%H:%M") if day == moment.date() else moment.strftime("%Y-%m-%d %H:%M")


def _code(value: str) -> Part:
    short = value if len(value) <= CODE_CHARS else value[: CODE_CHARS - 1] + "…"
    return Part(short, code=True, title=value)


def summary(story: Story) -> list[Part]:
    parts: list[Part] = []
    clauses: list[list[Part]] = []
    failed = [h for h in story.hops if h.to_state == HopState.FAILED]
    if failed:
        clause = [Part(f"failed {len(failed)} time{'s' if len(failed) != 1 else ''}")]
        inferred = sum(1 for h in failed if h.inferred)
        if inferred:
            clause.append(Part(f" ({inferred} of them inferred)"))
        by_id = {e.event_id: e for e in story.evidence}
        # the causes the reconstruction established (docs/causes.md), else the exception a failure line carries
        errors = [f.label for f in story.failures if f.label and f.cause != UNKNOWN] or [
            error
            for h in failed
            for event_id in h.evidence
            if (line := by_id.get(event_id)) is not None and (error := exception_of(line.detail))
        ]
        if errors:
            distinct = len(set(errors))
            clause.append(Part(" with " if distinct == 1 else f" ({distinct} different errors), the last with "))
            clause.append(_code(errors[-1]))
        clauses.append(clause)
    first_delivery = next((h for h in story.hops if h.to_state == HopState.DELIVERED and h.observed_at), None)
    dlq = next((h for h in story.hops if h.to_state == HopState.DEAD_LETTERED), None)
    day: dt.date | None = None
    if dlq is not None:
        if dlq.observed_at and first_delivery and first_delivery.observed_at:
            span = duration_text((dlq.observed_at - first_delivery.observed_at).total_seconds())
            clauses.append([Part(f"dead-lettered {span} after its first delivery")])
            day = dlq.observed_at.astimezone(dt.UTC).date()
        elif dlq.observed_at:
            day = dlq.observed_at.astimezone(dt.UTC).date()
            clauses.append([Part(f"dead-lettered at {_hhmm(dlq.observed_at, None)}")])
        else:
            clauses.append([Part("dead-lettered (the move is inferred: no line shows its time)")])
    elif story.dead_letter is not None and story.dead_letter.dlq_at is not None:  # no hops read, the row has it
        day = story.dead_letter.dlq_at.astimezone(dt.UTC).date()
        clauses.append([Part(f"dead-lettered at {_hhmm(story.dead_letter.dlq_at, None)}")])
    consumed = next((h for h in story.hops if h.to_state == HopState.CONSUMED), None)
    if consumed is not None and dlq is None:
        deliveries = sum(1 for h in story.hops if h.to_state == HopState.DELIVERED and h.hop <= consumed.hop)
        when = f" at {_hhmm(consumed.observed_at, None)}" if consumed.observed_at else ""
        clauses.append([Part(f"consumed{when} on delivery {deliveries}")])
    if dlq is not None or story.dead_letter is not None:
        clauses.append(_compensation(story, day))
    if not clauses:
        clauses.append([Part(f"final state {story.final_state or UNKNOWN}")])
    for i, clause in enumerate(clauses):
        if i:
            parts.append(Part(", "))
        parts.extend(clause)
    first = parts[0]
    parts[0] = dataclasses.replace(first, text=first.text[:1].upper() + first.text[1:])
    parts.append(Part("."))
    return parts


def _compensation(story: Story, day: dt.date | None) -> list[Part]:
    record = story.compensation
    letter = story.dead_letter
    if record is None:
        if letter is not None and not letter.compensable:
            reason = f" ({letter.review_reason})" if letter.review_reason else ""
            return [Part(f"held for review{reason}, not compensated")]
        return [Part("not registered for compensation yet")]
    handler = [Part(" by "), _code(record.handler)] if record.handler else []
    attempts = f"{record.attempts} attempt{'s' if record.attempts != 1 else ''}"
    if record.state == State.DONE:
        when = [Part(f" at {_hhmm(record.completed_at, day)}")] if record.completed_at else []
        return [Part("compensated"), *handler, *when]
    if record.state == State.GAVE_UP:
        return [Part("compensation"), *handler, Part(f" gave up after {attempts}")]
    if record.state == State.FAILED:
        return [Part("compensation"), *handler, Part(f" failed ({attempts} so far)")]
    if record.state == State.SKIPPED:
        return [Part("compensation skipped"), *handler]
    return [Part(f"compensation {record.state.lower()}"), *handler]
