"""``rocketmq-retry explain MSG_ID``: a message's story in the terminal, one per consumer group (docs/explore.md).

Each hop with its observed and expected time and the drift, the log lines behind it (file:line), the final state,
the engine's expected path for the group, the dead letter and its compensation in the ledger, and why it
failed: each failed delivery's cause (docs/causes.md), its kind and the rule that set it, and the re-drive
advice. ``--format json`` prints the same stories as a JSON list (``Story.to_dict()``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence

from rocketmq_retry import contract
from rocketmq_retry.config import load_config
from rocketmq_retry.dates import date_arg, format_duration
from rocketmq_retry.engine.model import SCHEDULE_TOPIC, dlq_topic
from rocketmq_retry.errors import UserError
from rocketmq_retry.explore.model import CompensationRecord, DeadLetterRow, Story
from rocketmq_retry.explore.warehouse import open_warehouse

PROG = "rocketmq-retry explain"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Print what happened to one message under each consumer group: every hop with its observed "
        "and expected time, the log lines behind it, the final state, its dead letter and compensation.",
    )
    p.add_argument("msg_id", metavar="MSG_ID", help="the message's msg_id (UNIQ_KEY) or an offset msg id")
    p.add_argument("--group", help="only this consumer group (default: every group that saw the message)")
    p.add_argument("--date", type=date_arg, help="the one date to search (YYYY-MM-DD)")
    p.add_argument("--from", dest="date_from", type=date_arg, help="first date searched (inclusive)")
    p.add_argument("--to", dest="date_to", type=date_arg, help="last date searched (inclusive)")
    p.add_argument(
        "--warehouse",
        help="warehouse root (default: the config's airflow.warehouse_root, where the daily DAG writes)",
    )
    p.add_argument("--config", help="config file (default: $ROCKETMQ_RETRY_CONFIG, else built-in defaults)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


def _when(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if value else "-"


def _drift(ms: int | None) -> str:
    if ms is None:
        return "-"
    return ("+" if ms >= 0 else "-") + format_duration(abs(ms))


def _table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))).rstrip() for r in rows]


def _cited(hops: list[str] | None) -> str:
    if not hops:
        return "dead letter"
    return ("hop " if len(hops) == 1 else "hops ") + ", ".join(hops)


def render(story: Story) -> str:
    return "\n".join(
        [
            *_facts(story),
            "",
            *_hops(story),
            "",
            *_evidence(story),
            "",
            *_causes(story),
            "",
            *_expected_path(story),
            "",
            _dead_letter(story.dead_letter),
            *_compensation(story.compensation, story.dead_letter),
        ]
    )


def _facts(s: Story) -> list[str]:
    out = [f"msg_id {s.msg_id}, consumer group {s.consumer_group} (date {s.date})"]
    facts = [
        ("topic", s.original_topic),
        ("tags", s.tags),
        ("keys", s.keys),
        ("business key", s.business_key),
        ("first seen", _when(s.first_seen)),
        ("last seen", _when(s.last_seen)),
        ("deliveries", None if s.deliveries is None else str(s.deliveries)),
        ("final state", f"{s.final_state} (the engine expects {s.expected_final_state})"),
        ("anomalies", ", ".join(s.anomalies) or "none"),
        ("evidence", s.evidence_class),
        ("group established by", ", ".join(s.attribution) or "-"),
    ]
    if len(s.dates) > 1:
        facts.append(("also on", ", ".join(d for d in s.dates if d != s.date)))
    width = max(len(k) for k, _ in facts)
    return out + [f"  {k.ljust(width)}  {v if v not in (None, '') else '-'}" for k, v in facts]


def _hops(s: Story) -> list[str]:
    out = ["hops (UTC; * = inferred: not seen in the logs, the engine proves it happened):"]
    rows = [("hop", "from -> to", "topic", "level", "r", "observed", "expected", "drift")]
    for h in s.hops:
        topic = h.physical_topic or "-"
        if h.queue_id is not None and topic == SCHEDULE_TOPIC:
            topic += f" q{h.queue_id}"
        rows.append(
            (
                f"{h.hop}{'*' if h.inferred else ''}",
                f"{h.from_state or '-'} -> {h.to_state}",
                topic,
                "-" if h.delay_level is None else str(h.delay_level),
                "-" if h.reconsume_times is None else str(h.reconsume_times),
                _when(h.observed_at),
                _when(h.expected_at),
                _drift(h.drift_ms),
            )
        )
    return out + (_table(rows) if s.hops else ["  (no hops)"])


def _evidence(s: Story) -> list[str]:
    out = ["evidence lines:"]
    if not s.evidence:
        return [*out, "  (none: every hop is inferred)"]
    hop_of: dict[str, list[str]] = {}
    for h in s.hops:
        for e in h.evidence:
            hop_of.setdefault(e, []).append(str(h.hop))
    return out + _table(
        [
            (
                _when(e.event_time),
                e.event_type or "-",
                f"{e.source_file}:{e.line_no if e.line_no is not None else '?'}",
                e.source or "-",
                _cited(hop_of.get(e.event_id)),
            )
            for e in s.evidence
        ]
    )


def _causes(s: Story) -> list[str]:
    """Why it failed (docs/causes.md): the lifecycle's kind and the rule that set it, then each failed delivery's
    cause, what established it and the line; a code's words once."""
    out = ["why it failed:"]
    if not s.failures and not s.failure_kind:
        return [*out, "  (no cause recorded: it never failed, or its date was reconstructed before causes were read)"]
    if s.failure_kind:
        rule = contract.KIND_RULES.get(s.kind_rule or "", s.kind_rule or "no rule named")
        out.append(f"  kind {s.failure_kind}: {rule}" + (f" (incident {s.incident_id})" if s.incident_id else ""))
    if s.dead_letter is not None and s.dead_letter.redrive_advice:
        advice = s.dead_letter.redrive_advice
        out.append(f"  re-drive: {advice}: {contract.REDRIVE_ADVICE.get(advice, '')}")
    rows = [("r", "failed at", "cause", "established by", "line")]
    for f in s.failures:
        line = f"{f.source_file}:{f.line_no if f.line_no is not None else '?'}" if f.source_file else f.event_id or "-"
        rows.append(
            (
                "-" if f.reconsume_times is None else str(f.reconsume_times),
                _when(f.failed_at),
                f.label or f.cause or "-",
                f.cause_evidence or "-",
                line,
            )
        )
    if s.failures:
        out += _table(rows)
    codes = sorted({f.cause for f in s.failures if f.code_text})
    out += [f"  {code}: {contract.CAUSE_CODES[code]}" for code in codes]
    why = sorted({f.cause_evidence for f in s.failures if f.cause == contract.UNKNOWN and f.cause_evidence})
    out += [f"  {e}: {contract.CAUSE_EVIDENCE.get(e, '')}" for e in why]
    frames = sorted({f.app_frame for f in s.failures if f.app_frame})
    out += [f"  at {frame}" for frame in frames]
    return out


def _expected_path(s: Story) -> list[str]:
    return [
        "expected path (rocketmq-retry schedule):",
        *("  " + line if line else "" for line in s.expected_path.text.splitlines()),
    ]


def _dead_letter(d: DeadLetterRow | None) -> str:
    if d is None:
        return "dead letter: none"
    held = "compensable" if d.compensable else f"held for review ({d.review_reason or 'not established'})"
    inferred = " (inferred by the engine)" if d.dlq_inferred else ""
    return (
        f"dead letter: {dlq_topic(d.consumer_group)} at {_when(d.dlq_at)}{inferred}, reconsume times "
        f"{d.reconsume_times if d.reconsume_times is not None else '-'}, {held}"
    )


def _compensation(c: CompensationRecord | None, d: DeadLetterRow | None) -> list[str]:
    if c is None:
        # "not in the ledger" only means something for a message that was dead-lettered
        return ["compensation: " + ("not in the ledger" if d is not None else "-")]
    out = [
        f"compensation: {c.state} after {c.attempts} attempt(s)"
        + (f", {c.redrives} re-drive(s)" if c.redrives else "")
        + f", handler {c.handler or '-'}, last attempt {_when(c.last_attempt_at)}"
        + (f", completed {_when(c.completed_at)}" if c.completed_at else "")
    ]
    if c.last_error:
        out.append(f"  last error: {c.last_error}")
    if c.result:
        out.append(f"  result: {c.result}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ns = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if ns.date and (ns.date_from or ns.date_to):
            raise UserError("use --date or --from/--to, not both")
        first, last = (ns.date, ns.date) if ns.date else (ns.date_from, ns.date_to)
        config = load_config(ns.config)
        warehouse = ns.warehouse or str(config.airflow.warehouse)
        with open_warehouse(warehouse, config) as ex:
            stories = ex.story(ns.msg_id, ns.group, first, last)
    except UserError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.exit_code
    if ns.format == "json":
        print(json.dumps([s.to_dict() for s in stories], indent=2, sort_keys=True))
    else:
        print("\n\n".join(render(s) for s in stories))
    return 0
