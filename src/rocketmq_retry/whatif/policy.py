"""The new retry policy of a what-if: the group's configured settings with some replaced, checked by the very
validators that check a config file (``config.GroupConfig``, ``config.BrokerConfig``, which call the engine's own
checks: ``DelayLevelTable.parse``, ``check_invisible_duration_ms``, the POP invisible-time range), so a policy the
broker or the client would refuse is refused here with the same reason, and nothing is checked twice."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from rocketmq_retry.config import Config, parse_config
from rocketmq_retry.dates import parse_duration_ms
from rocketmq_retry.engine import GroupPolicy, effective_max_reconsume_times, policy_settings
from rocketmq_retry.errors import ConfigError, UserError
from rocketmq_retry.whatif.model import Setting


class PolicyRefused(UserError):
    """The proposed policy is one the broker or the client would refuse (or the config cannot hold)."""


@dataclasses.dataclass(frozen=True)
class PolicyChange:
    """The settings a what-if replaces; ``None`` keeps the group's configured value. Each is a key of the group's
    (or its broker's) config section, docs/configuration.md."""

    max_reconsume_times: int | None = None  # groups.<g>.max_reconsume_times (remoting consumers)
    retry_max_times: int | None = None  # groups.<g>.retry_max_times (gRPC consumers: maxAttempts - 1)
    delay_levels: str | None = None  # brokers.<b>.message_delay_level
    retry_policy: dict[str, Any] | None = None  # groups.<g>.retry_policy (gRPC consumers)
    delay_level_when_next_consume: int | None = None  # groups.<g>.delay_level_when_next_consume
    invisible_duration_ms: int | None = None  # groups.<g>.invisible_duration_ms (gRPC SimpleConsumer)
    pop_invisible_time_ms: int | None = None  # groups.<g>.pop_invisible_time_ms (remoting POP)

    def group_keys(self) -> dict[str, Any]:
        names = (
            "max_reconsume_times",
            "retry_max_times",
            "retry_policy",
            "delay_level_when_next_consume",
            "invisible_duration_ms",
            "pop_invisible_time_ms",
        )
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    @property
    def empty(self) -> bool:
        return not self.group_keys() and self.delay_levels is None


_MS = re.compile(r"(\d+)ms")
_ORIGIN = "(the what-if policy)"


def duration_ms(text: str, what: str) -> int:
    """``250ms`` or one of the project's durations (``10s``, ``5m``, ``1h30m``, plain seconds)."""
    found = _MS.fullmatch(text.strip())
    return int(found.group(1)) if found else parse_duration_ms(text, what=what)


def parse_retry_policy(text: str) -> dict[str, Any]:
    """``customized [D …]`` (no durations: CustomizedRetryPolicy's built-in list) or
    ``exponential [initial=D] [max=D] [multiplier=X]``, as the ``retry_policy`` config section holds it."""
    words = text.split()
    if not words or words[0] not in ("customized", "exponential"):
        raise UserError(
            f"--retry-policy {text!r}: use 'customized [1s 5s 10s …]' or "
            "'exponential [initial=5s] [max=2h] [multiplier=2]'"
        )
    kind, rest = words[0], words[1:]
    if kind == "customized":
        return {"type": kind, "next": [duration_ms(w, "--retry-policy") for w in rest] if rest else None}
    out: dict[str, Any] = {"type": kind}
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq or key not in ("initial", "max", "multiplier"):
            raise UserError(f"--retry-policy: {word!r} is not initial=D, max=D or multiplier=X")
        try:
            out[key] = float(value) if key == "multiplier" else duration_ms(value, f"--retry-policy {key}")
        except ValueError:
            raise UserError(f"--retry-policy: multiplier {value!r} is not a number") from None
    return out


def proposed_policy(config: Config, group: str, change: PolicyChange) -> GroupPolicy:
    """The engine's view of ``group`` with ``change`` applied; a ``PolicyRefused`` naming the key and the reason
    when the config's (and so the engine's) checks refuse it."""
    settings = config.group_config(group)
    broker_name = settings.broker
    broker = config.brokers[broker_name].model_dump(mode="json")
    if change.delay_levels is not None:
        broker["message_delay_level"] = change.delay_levels
    section = {**settings.model_dump(mode="json", exclude_none=True), **change.group_keys()}
    # Only this group and its broker: the rest of the config plays no part in its policy.
    data = {"timezone": config.timezone, "brokers": {broker_name: broker}, "groups": {group: section}}
    try:
        candidate = parse_config(data, origin=_ORIGIN)
        return candidate.group_policy(group)
    except ConfigError as exc:
        reason = str(exc).removeprefix(f"invalid config {_ORIGIN}: ")
        raise PolicyRefused(f"the new policy is refused: {reason}") from None
    except ValueError as exc:  # GroupPolicy's own checks (engine/model.py)
        raise PolicyRefused(f"the new policy is refused: {exc}") from None


def changed_settings(current: GroupPolicy, proposed: GroupPolicy, broker: str) -> tuple[Setting, ...]:
    """The engine settings that differ, plus the effective max when it moved (or did not although a max did)."""
    old, new = policy_settings(current), policy_settings(proposed)
    out = []
    for key in old:
        if old[key] == new[key] or key == "effective_max_reconsume_times":
            continue
        note = ""
        top = proposed.delay_levels.max_level
        if key == "message_delay_level":
            note = f"a setting of broker {broker!r}: every group on it would get this table"
            note += f"; a level above {top} is stored at {top} (§3.2)"
        elif key == "delay_level_when_next_consume" and proposed.delay_level_when_next_consume > top:
            note = f"above the table's {top} levels: not refused, the store clamps it to {top} (§3.2)"
        out.append(Setting(key, old[key], new[key], note))
    eff_old, eff_new = effective_max_reconsume_times(current), effective_max_reconsume_times(proposed)
    if out and eff_old == eff_new and any(s.name in ("max_reconsume_times", "retry_max_times") for s in out):
        out.append(
            Setting(
                "effective_max_reconsume_times",
                eff_old,
                eff_new,
                f"unchanged: a {new['protocol']} {new['consume_mode']} consumer does not read the max that changed "
                "(remoting: maxReconsumeTimes, gRPC: the group's retryMaxTimes, §1.4, §5.2)",
            )
        )
    elif eff_old != eff_new:
        out.append(Setting("effective_max_reconsume_times", eff_old, eff_new))
    return tuple(out)
