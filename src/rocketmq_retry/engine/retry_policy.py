"""5.x retry policies, broker side and gRPC-client side (§5.1, §5.2), as the upstream tests pin them (§9).

Two families share the same shapes but index differently, which is why a gRPC push consumer's first retry comes
after about 1 s while a remoting consumer waits 10 s (§5.3):

- broker ``CustomizedRetryPolicy`` / ``ExponentialRetryPolicy.nextDelayDuration(reconsumeTimes)``;
- client ``CustomizedBackoffRetryPolicy`` / ``ExponentialBackoffRetryPolicy.getNextAttemptDelay(attempt)``,
  ``attempt`` starting at 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocketmq_retry.engine.model import CustomizedPolicy, ExponentialPolicy, GroupPolicy, RetryPolicy

_S, _M, _H = 1_000, 60_000, 3_600_000

# CustomizedRetryPolicy.next (§5.1): a constant of the class, the same 18 values as the stock messageDelayLevel.
DEFAULT_CUSTOMIZED_NEXT_MS: tuple[int, ...] = (
    1 * _S, 5 * _S, 10 * _S, 30 * _S,
    1 * _M, 2 * _M, 3 * _M, 4 * _M, 5 * _M, 6 * _M, 7 * _M, 8 * _M, 9 * _M, 10 * _M, 20 * _M, 30 * _M,
    1 * _H, 2 * _H,
)  # fmt: skip

# DefaultMQPushConsumerImpl.popDelayLevel (§1.7), in seconds, indexed from 0.
POP_DELAY_LEVEL_S: tuple[int, ...] = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)

_LONG_MAX = 2**63 - 1


def _wrap_long(value: int) -> int:
    value &= 0xFFFF_FFFF_FFFF_FFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def customized_next_delay_duration(reconsume_times: int, next_ms: Sequence[int] = DEFAULT_CUSTOMIZED_NEXT_MS) -> int:
    """Broker ``CustomizedRetryPolicy.nextDelayDuration``: ``next[r + 2]``, clamped to the last entry, r<0 as 0.

    The "+2" keeps compatibility with the old delay-level table (level ``3 + r`` is index ``2 + r``) (§5.1).
    """
    if not next_ms:
        raise ValueError("CustomizedRetryPolicy.next must not be empty")
    index = max(reconsume_times, 0) + 2
    return next_ms[min(index, len(next_ms) - 1)]


def exponential_next_delay_duration(reconsume_times: int, policy: ExponentialPolicy | None = None) -> int:
    """Broker ``ExponentialRetryPolicy.nextDelayDuration``: ``min(max, initial * (long) pow(multiplier, r))``.

    r is clamped to [0, 32] first (§5.1). The Java arithmetic is kept: ``(long) Math.pow`` saturates at
    Long.MAX_VALUE and the following multiplication wraps.
    """
    p = policy or ExponentialPolicy()
    r = min(max(reconsume_times, 0), 32)
    power = float(p.multiplier) ** r
    power_long = _LONG_MAX if power >= _LONG_MAX else int(power)
    return min(p.max_ms, _wrap_long(p.initial_ms * power_long))


def broker_next_delay_duration(policy: RetryPolicy, reconsume_times: int) -> int:
    """The group's ``GroupRetryPolicy`` as the broker/proxy applies it (e.g. the proxy's STOP_RENEW nack, §5.3)."""
    if isinstance(policy, ExponentialPolicy):
        return exponential_next_delay_duration(reconsume_times, policy)
    return customized_next_delay_duration(reconsume_times, policy.next_ms or DEFAULT_CUSTOMIZED_NEXT_MS)


def max_attempts(retry_max_times: int) -> int:
    """Proxy ``GrpcClientSettingsManager``: ``backoffPolicy.maxAttempts = retryMaxTimes + 1`` (§5.2; 3 → 4)."""
    return retry_max_times + 1


def _check_attempt(attempt: int) -> None:
    if attempt <= 0:
        # checkArgument(attempt > 0, "attempt must be positive") → IllegalArgumentException (§5.1, §9)
        raise ValueError("attempt must be positive")


@dataclass(frozen=True)
class ExponentialBackoffRetryPolicy:
    """rocketmq-clients ``ExponentialBackoffRetryPolicy`` (§5.1): no jitter."""

    max_attempts: int
    initial_backoff_ms: float
    max_backoff_ms: float
    backoff_multiplier: float

    @classmethod
    def immediately_retry_policy(cls, max_attempts: int) -> ExponentialBackoffRetryPolicy:
        return cls(max_attempts, 0, 0, 1)

    def get_next_attempt_delay_ms(self, attempt: int) -> int:
        """``min(initial * multiplier^(attempt-1), max)``; ``<= 0`` → 0. Computed in nanoseconds like the SDK."""
        _check_attempt(attempt)
        delay_nanos = min(
            self.initial_backoff_ms * 1_000_000 * float(self.backoff_multiplier) ** (attempt - 1),
            self.max_backoff_ms * 1_000_000,
        )
        if delay_nanos <= 0:
            return 0
        return int(delay_nanos) // 1_000_000


@dataclass(frozen=True)
class CustomizedBackoffRetryPolicy:
    """rocketmq-clients ``CustomizedBackoffRetryPolicy`` (§5.1): ``durations[attempt-1]``, last entry reused."""

    durations_ms: tuple[int, ...]
    max_attempts: int

    def get_next_attempt_delay_ms(self, attempt: int) -> int:
        _check_attempt(attempt)
        if not self.durations_ms:
            raise ValueError("CustomizedBackoffRetryPolicy needs at least one duration")
        return self.durations_ms[min(attempt, len(self.durations_ms)) - 1]


ClientRetryPolicy = ExponentialBackoffRetryPolicy | CustomizedBackoffRetryPolicy


def consumer_retry_policy(policy: GroupPolicy) -> ClientRetryPolicy:
    """The policy a gRPC consumer ends up with: the proxy's ``mergeSubscriptionData`` output, taken whole by
    ``fromProtobuf`` (maxAttempts included) in ``PushSubscriptionSettings.sync`` (§5.1, §5.2)."""
    attempts = max_attempts(policy.retry_max_times)
    rp = policy.retry_policy
    if isinstance(rp, ExponentialPolicy):
        return ExponentialBackoffRetryPolicy(attempts, rp.initial_ms, rp.max_ms, rp.multiplier)
    assert isinstance(rp, CustomizedPolicy)
    return CustomizedBackoffRetryPolicy(rp.next_ms or DEFAULT_CUSTOMIZED_NEXT_MS, attempts)


def pop_delay_seconds(index: int) -> int:
    """``popDelayLevel[index]``, index clamped to the last entry (§1.7). A negative index throws in the client."""
    if index < 0:
        raise IndexError(f"popDelayLevel[{index}]: ArrayIndexOutOfBoundsException in the client")
    return POP_DELAY_LEVEL_S[min(index, len(POP_DELAY_LEVEL_S) - 1)]
