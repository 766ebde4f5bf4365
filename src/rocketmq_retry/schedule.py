"""The expected retry path of a message that keeps failing, as ``rocketmq-retry schedule`` prints it and the
message page and ``explain`` show it: the group's settings as the engine reads them, one row per retry, the final
state. Rendering only; the path itself is the engine's (``engine.expected_path``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_retry.dates import format_duration
from rocketmq_retry.engine.model import SCHEDULE_TOPIC, FinalState, dlq_topic, retry_topic

if TYPE_CHECKING:
    from rocketmq_retry.engine import GroupPolicy

# A path still going after this many retries never ends in practice (orderly: Integer.MAX_VALUE retries).
FOREVER_PROBE = 10_000


def schedule_rows(path: object, limit: int | None = None) -> tuple[list[dict[str, object]], dict[str, object]]:
    """The JSON records of ``schedule --format json``: one per retry (the first ``limit``), then the final one."""
    rows = [
        {
            "hop": step.hop,
            "reconsume_times": step.failed_reconsume_times,
            "delay_level": step.next.delay_level,
            "delay_ms": step.next.delay_ms,
            "cumulative_ms": step.cumulative_ms,
            "topic": step.next.topic,
        }
        for step in path.steps  # type: ignore[attr-defined]
        if not step.next.terminal
    ][:limit]
    if path.truncated:  # type: ignore[attr-defined]
        # Only a path that runs past FOREVER_PROBE is reported as endless; count what is listed.
        return rows, {"final": FinalState.RETRYING_FOREVER, "topic": path.final_topic, "deliveries": len(rows)}  # type: ignore[attr-defined]
    final = {"final": path.final.value, "topic": path.final_topic, "deliveries": path.deliveries}  # type: ignore[attr-defined]
    return rows, final


def _delay_level_note(policy: GroupPolicy) -> str:
    level = policy.delay_level_when_next_consume
    if policy.consume_mode.value == "pop":
        # changePopInvisibleTime reads the context level as a popDelayLevel index (0 → reconsume_times, §1.7).
        if level < 0:
            return f"{level} (popDelayLevel[{level}] throws: the pop invisible time applies)"
        return f"{level} (popDelayLevel[{'reconsume_times' if level == 0 else level}])"
    if level < 0:
        return f"{level} (straight to {dlq_topic(policy.group)})"
    if level == 0:
        return "0 (the broker picks level 3 + reconsume_times)"
    top = policy.delay_levels.max_level
    clamp = f"; the store clamps it to {top}" if level > top else ""
    return f"{level} (every retry asks level {level}{clamp})"


def _retry_policy_note(policy: GroupPolicy) -> str:
    rp = policy.retry_policy
    if hasattr(rp, "multiplier"):
        return f"exponential (initial {rp.initial_ms} ms, max {rp.max_ms} ms, multiplier {rp.multiplier:g})"
    if rp.next_ms:
        return "customized (next " + " ".join(format_duration(ms) for ms in rp.next_ms) + ")"
    return "customized (the built-in 1s 5s 10s … 1h 2h)"


def schedule_settings(policy: GroupPolicy) -> list[tuple[str, str]]:
    """The settings the engine reads for this kind of consumer, as (config key, value) lines of the table."""
    from rocketmq_retry.engine import effective_max_reconsume_times, format_version, policy_settings

    p = policy
    protocol = str(policy_settings(p)["protocol"])  # as the rules read it: `simple` implies gRPC
    grpc = protocol == "grpc"
    mode = p.consume_mode.value
    lines = [("broker_version", f"{format_version(p.broker_version)} ({p.broker_major}.x rules)")]
    if not grpc:  # the gRPC SDK is versioned apart; no rule reads client_version for it
        lines.append(("client_version", format_version(p.client_version)))
    lines.append(("consumer", f"{protocol}, {mode}, {p.message_model.value}"))
    if p.message_model.value == "broadcasting" and mode != "orderly":
        return lines  # failures are dropped: no other setting plays a part (§1.3)
    effective = effective_max_reconsume_times(p)
    max_line = str(p.max_reconsume_times)
    if p.max_reconsume_times != effective:
        max_line += f" ({effective} in effect)"
    if grpc:
        lines.append(("retry_max_times", f"{p.retry_max_times} (maxAttempts {p.retry_max_times + 1})"))
        if mode == "simple":
            lines.append(("invisible_duration_ms", str(p.invisible_duration_ms)))
        else:
            lines.append(("retry_policy", _retry_policy_note(p)))
    elif mode == "pop":
        lines.append(("max_reconsume_times", max_line))
        lines.append(("delay_level_when_next_consume", _delay_level_note(p)))
        lines.append(("pop_invisible_time_ms", str(p.pop_invisible_time_ms)))
    else:
        lines.append(("message_delay_level", f'"{p.delay_levels.source}" ({p.delay_levels.max_level} levels)'))
        lines.append(("max_reconsume_times", max_line))
        if mode == "orderly":
            lines.append(("suspend_current_queue_time_millis", str(p.suspend_current_queue_time_millis)))
        else:
            lines.append(("delay_level_when_next_consume", _delay_level_note(p)))
            lines.append(("retry_queue_nums", str(p.retry_queue_nums)))
            lines.append(("consume_timeout_minutes", str(p.consume_timeout_minutes)))
    if grpc or mode == "pop":
        v2 = p.enable_retry_topic_v2
        lines.append(
            ("enable_retry_topic_v2", f"{str(v2).lower()} ({retry_topic(p.group)}{'+' if v2 else '_'}<topic>)")
        )
        lines += _revive_lines(p)
    return lines


def _revive_lines(policy: GroupPolicy) -> list[tuple[str, str]]:
    """Which broker service revives the group's un-acked pops and what it does when a revive fails or the group is
    gone (§5.9); the keys appear only on brokers that have them."""
    from rocketmq_retry.engine.pop_revive import (
        POP_REVIVE_MAX_ATTEMPT_TIMES,
        kv_revive_give_up_after_ms,
        pop_revive_skip_if_group_absent,
        revive_skipped_when_group_absent,
    )
    from rocketmq_retry.engine.versions import POP_CONSUMER_KV_SERVICE_SINCE, POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE

    p = policy
    lines: list[tuple[str, str]] = []
    if p.broker_version >= POP_CONSUMER_KV_SERVICE_SINCE:
        if p.pop_consumer_kv_service_enable:
            # the record's invisible time: the pop's (remoting POP, SimpleConsumer); a gRPC push nack sets its own
            mode = p.consume_mode.value
            invisible = {"pop": p.pop_invisible_time_ms, "simple": p.invisible_duration_ms}.get(mode)
            when = (
                f", {format_duration(kv_revive_give_up_after_ms(invisible))} after the first failure"
                if invisible is not None
                else ""
            )
            note = (
                f"true (PopConsumerService on RocksDB; a revive failing {POP_REVIVE_MAX_ATTEMPT_TIMES} times is "
                f"dropped{when})"
            )
        else:
            note = "false (PopReviveService, checkpoints in the revive log topic)"
        lines.append(("pop_consumer_kv_service_enable", note))
    if p.broker_version >= POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE:
        skip = str(pop_revive_skip_if_group_absent(p)).lower()
        lost = revive_skipped_when_group_absent(p)
        what = "un-acked pops are dropped" if lost else "un-acked pops are still revived"
        lines.append(("pop_revive_skip_if_group_absent", f"{skip} (once the group's config is gone, {what})"))
    return lines


def _level_cell(hop: object) -> str:
    level = hop.delay_level  # type: ignore[attr-defined]
    if level is None:
        return "-"
    asked = getattr(hop, "requested_delay_level", None)
    # The store clamps levels above maxDelayLevel (§3.2): show what was asked so the clamping is visible.
    return f"{level} (asked {asked})" if asked is not None and asked != level else str(level)


def _topic_cell(hop: object) -> str:
    if hop.topic is None:  # type: ignore[attr-defined]
        return "(local retry in the client)"
    topic = str(hop.topic)  # type: ignore[attr-defined]
    if hop.queue_id is not None and topic == SCHEDULE_TOPIC:  # type: ignore[attr-defined]
        topic += f" q{hop.queue_id}"  # type: ignore[attr-defined]
    destination = getattr(hop, "destination_topic", None)
    return f"{topic} -> {destination}" if destination and destination != hop.topic else topic  # type: ignore[attr-defined]


def render_schedule_table(path: object, policy: GroupPolicy, limit: int | None = None) -> str:
    """The group's settings as the engine reads them, the retries (the first ``limit``), then the final state."""
    rows, final = schedule_rows(path, limit)
    header = ("hop", "reconsume_times", "delay_level", "delay", "cumulative", "topic")
    hops = [step.next for step in path.steps if not step.next.terminal]  # type: ignore[attr-defined]
    table = (
        [header]
        + [
            (
                str(r["hop"]),
                str(r["reconsume_times"]),
                _level_cell(hop),
                format_duration(int(r["delay_ms"])),  # type: ignore[arg-type]
                format_duration(int(r["cumulative_ms"])),  # type: ignore[arg-type]
                _topic_cell(hop),
            )
            for r, hop in zip(rows, hops[: len(rows)], strict=True)
        ]
    )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    settings = schedule_settings(policy)
    key_width = max(len(key) for key, _ in settings)
    out = [f"Expected path for consumer group '{policy.group}'"]
    out += [f"  {key.ljust(key_width)}  {value}" for key, value in settings]
    out.append("")
    for row in table:
        cells = [row[i].rjust(widths[i]) if i < 5 else row[i] for i in range(len(row))]
        out.append("  ".join(cells).rstrip())
    deliveries = int(final["deliveries"])  # type: ignore[call-overload]
    noun = "delivery" if deliveries == 1 else "deliveries"
    if final["final"] == FinalState.RETRYING_FOREVER:
        summary = (
            f"final: RETRYING_FOREVER (first {deliveries} {noun} shown; the message is never dead-lettered"
            f"{' and blocks its queue' if policy.consume_mode.value == 'orderly' else ''})"
        )
    else:
        where = f" in {final['topic']}" if final["topic"] else ""
        retries = [step for step in path.steps if not step.next.terminal]  # type: ignore[attr-defined]
        total = retries[-1].cumulative_ms if retries else 0
        summary = f"final: {final['final']}{where} after {deliveries} {noun}, {format_duration(total)} of retry delays"
        hidden = len(retries) - len(rows)
        if hidden > 0:
            summary = f"({hidden} more {'retry' if hidden == 1 else 'retries'} not shown: --limit {limit})\n" + summary
        last = path.steps[-1].next if path.steps else None  # type: ignore[attr-defined]
        if last is not None and last.terminal and last.delay_ms:
            via = f" (waiting in {last.topic})" if last.topic and last.topic != final["topic"] else ""
            outcome = "is stored there" if final["final"] == FinalState.DEAD_LETTERED else "is dropped"
            summary += f"; the message {outcome} {format_duration(last.delay_ms)} after its last failure{via}"
    out += ["", summary]
    return "\n".join(out)
