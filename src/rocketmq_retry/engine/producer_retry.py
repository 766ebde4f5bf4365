"""Producer-side retries (§5.6): remoting ``DefaultMQProducerImpl.sendDefaultImpl`` / ``MQClientAPIImpl``
and the gRPC SDK's ``ProducerImpl.send0``. Given the outcome of each attempt, plan when each attempt happens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rocketmq_retry.engine.model import ExponentialPolicy
from rocketmq_retry.engine.retry_policy import ExponentialBackoffRetryPolicy
from rocketmq_retry.engine.versions import Version, format_version, version_for_major

# ResponseCode values (remoting/.../protocol/ResponseCode.java, RemotingSysResponseCode).
SYSTEM_ERROR = 1
SYSTEM_BUSY = 2
SERVICE_NOT_AVAILABLE = 14
NO_PERMISSION = 16
TOPIC_NOT_EXIST = 17
NO_BUYER_ID = 204
NOT_IN_CURRENT_UNIT = 205
GO_AWAY = 1500

# DefaultMQProducer.retryResponseCodes (client/.../producer/DefaultMQProducer.java), by *client* version (§5.6):
# - 4.9.4, 4.9.8, 5.0.0, 5.1.0 … 5.1.4, 5.2.0: the six codes below;
# - 5.3.0 adds ResponseCode.SYSTEM_BUSY (commit e5b357c3df "[ISSUE #5838] retry to send when broker returns
#   SYSTEM_BUSY", first tag rocketmq-all-5.3.0);
# - 5.3.1 adds ResponseCode.GO_AWAY (commit 0b0f8ec946 "[ISSUE #8599] Fix send fail without retry when get GO_AWAY
#   twice", first tag rocketmq-all-5.3.1), still so in 5.3.3.
RETRY_RESPONSE_CODES_4 = frozenset(
    {TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT}
)
SYSTEM_BUSY_RETRIED_SINCE: Version = (5, 3, 0)
GO_AWAY_RETRIED_SINCE: Version = (5, 3, 1)
# The newest set (5.3.1 on); the name predates per-version sets.
RETRY_RESPONSE_CODES_5 = RETRY_RESPONSE_CODES_4 | {SYSTEM_BUSY, GO_AWAY}

DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED = 2
DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED = 2
DEFAULT_SEND_MSG_TIMEOUT_MS = 3_000
# ProxyConfig grpcClientProducer* (§5.2), which the SDK inherits (inheritBackoff keeps its own maxAttempts).
GRPC_PRODUCER_MAX_ATTEMPTS = 3
GRPC_PRODUCER_BACKOFF = ExponentialPolicy(initial_ms=10, max_ms=1_000, multiplier=2)


class SendMode(StrEnum):
    SYNC = "SYNC"
    ASYNC = "ASYNC"
    ONEWAY = "ONEWAY"


class SendOutcome(StrEnum):
    """How one send attempt ended."""

    SEND_OK = "SEND_OK"
    NOT_STORE_OK = "NOT_STORE_OK"  # SendResult with FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE
    REMOTING_ERROR = "REMOTING_ERROR"  # RemotingException: connect / send-request failure / response timeout
    CLIENT_ERROR = "CLIENT_ERROR"  # MQClientException (e.g. no route, broker address not found)
    BROKER_ERROR = "BROKER_ERROR"  # MQBrokerException: the broker answered with ``response_code``
    TOO_MANY_REQUESTS = "TOO_MANY_REQUESTS"  # RemotingTooMuchRequestException / gRPC TooManyRequestsException
    INTERRUPTED = "INTERRUPTED"


@dataclass(frozen=True)
class SendAttemptResult:
    outcome: SendOutcome
    response_code: int | None = None  # for BROKER_ERROR
    rt_ms: int = 0  # how long the attempt took


@dataclass(frozen=True)
class PlannedAttempt:
    attempt: int  # 1-based
    at_ms: int  # when the attempt starts
    delay_before_ms: int  # back-off waited before it (0 = "resend at once")
    result: SendAttemptResult
    retried: bool  # whether another attempt follows


@dataclass(frozen=True)
class SendPlan:
    attempts: tuple[PlannedAttempt, ...]
    succeeded: bool  # the last attempt returned a SendResult (SEND_OK, or NOT_STORE_OK handed back as is)
    reason: str
    rule: str


def retry_response_codes(client_version: Version | int) -> frozenset[int]:
    """The producer's ``retryResponseCodes`` for a client release. A bare major (the older call form) stands for the
    newest release of that major (``versions.LATEST_RELEASE``: 4 → 4.9.8, 5 → 5.3.3)."""
    version = version_for_major(client_version) if isinstance(client_version, int) else client_version
    codes = set(RETRY_RESPONSE_CODES_4)
    if version >= SYSTEM_BUSY_RETRIED_SINCE:
        codes.add(SYSTEM_BUSY)
    if version >= GO_AWAY_RETRIED_SINCE:
        codes.add(GO_AWAY)
    return frozenset(codes)


def _take(results: Sequence[SendAttemptResult], index: int) -> SendAttemptResult:
    if index >= len(results):
        raise ValueError(f"the plan needs the outcome of attempt {index + 1}, but only {len(results)} were given")
    return results[index]


def plan_remoting_send(
    results: Sequence[SendAttemptResult],
    *,
    mode: SendMode = SendMode.SYNC,
    client_major: int | None = None,
    client_version: Version | None = None,
    retry_times_when_send_failed: int = DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    retry_times_when_send_async_failed: int = DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
    send_msg_timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS,
    retry_another_broker_when_not_store_ok: bool = False,
    start_ms: int = 0,
) -> SendPlan:
    """Remoting producer (§5.6): immediate resends, no back-off, within one ``sendMsgTimeout`` budget.

    - SYNC: ``timesTotal = 1 + retryTimesWhenSendFailed``; RemotingException (incl. too-many-requests, a subclass)
      and MQClientException are retried, MQBrokerException only for ``retryResponseCodes``, an interrupt never;
      a non-SEND_OK result only with ``retryAnotherBrokerWhenNotStoreOK``; before each attempt the loop stops
      ("sendDefaultImpl call timeout") once the elapsed time exceeds the timeout.
    - ASYNC: ``MQClientAPIImpl.onExceptionImpl`` retries while ``curTimes <= retryTimesWhenSendAsyncFailed`` and
      time is left, and only transport failures (``needRetry``): not broker responses, not too-many-requests.
    - ONEWAY: one attempt.

    ``client_version`` is the producer's client release (it decides ``retryResponseCodes``); the older
    ``client_major`` stands for the newest release of that major. Neither: a 4.x client, as before.
    """
    if client_version is None:
        client_version = version_for_major(4 if client_major is None else client_major)
    elif client_major is not None and client_major != client_version[0]:
        raise ValueError(f"client_major {client_major} contradicts client_version {format_version(client_version)}")
    codes = retry_response_codes(client_version)
    if mode == SendMode.SYNC:
        total = 1 + retry_times_when_send_failed
    elif mode == SendMode.ASYNC:
        total = 1 + retry_times_when_send_async_failed
    else:
        total = 1
    rule = f"§5.6 remoting {mode}: up to {total} attempts, resend at once"
    attempts: list[PlannedAttempt] = []
    at = start_ms
    for index in range(total):
        elapsed = at - start_ms
        if index > 0 and (elapsed > send_msg_timeout_ms if mode == SendMode.SYNC else elapsed >= send_msg_timeout_ms):
            # SYNC: `if (timeout < costTime) { callTimeout = true; break; }`; ASYNC: `timeoutMillis - cost > 0`.
            return SendPlan(tuple(attempts), False, f"send timeout: {elapsed} ms spent of {send_msg_timeout_ms}", rule)
        result = _take(results, index)
        more = index + 1 < total
        if result.outcome == SendOutcome.SEND_OK:
            retry, reason = False, "SEND_OK"
        elif result.outcome == SendOutcome.NOT_STORE_OK:
            retry = mode == SendMode.SYNC and retry_another_broker_when_not_store_ok
            reason = "non-SEND_OK status returned to the caller"
        elif result.outcome == SendOutcome.INTERRUPTED:
            retry, reason = False, "interrupted: thrown at once"
        elif result.outcome == SendOutcome.BROKER_ERROR:
            retry = mode == SendMode.SYNC and result.response_code in codes
            reason = f"broker response code {result.response_code} " + (
                "is in retryResponseCodes" if result.response_code in codes else "is not retried"
            )
        elif result.outcome == SendOutcome.TOO_MANY_REQUESTS:
            retry = mode == SendMode.SYNC  # async: needRetry = !(throwable instanceof RemotingTooMuchRequestException)
            reason = "too many requests"
        else:
            retry, reason = mode != SendMode.ONEWAY, str(result.outcome)
        attempts.append(PlannedAttempt(index + 1, at, 0, result, retry and more))
        at += result.rt_ms
        if not (retry and more):
            ok = result.outcome in (SendOutcome.SEND_OK, SendOutcome.NOT_STORE_OK)
            if not ok and retry:
                reason = f"Send [{total}] times, still failed"
            return SendPlan(tuple(attempts), ok, reason, rule)
    raise AssertionError("unreachable")  # pragma: no cover


def plan_grpc_send(
    results: Sequence[SendAttemptResult],
    *,
    max_attempts: int = GRPC_PRODUCER_MAX_ATTEMPTS,
    backoff: ExponentialPolicy = GRPC_PRODUCER_BACKOFF,
    settings_received: bool = True,
    start_ms: int = 0,
) -> SendPlan:
    """gRPC ``ProducerImpl.send0`` (§5.6): any failure is retried up to ``maxAttempts``; immediately, except
    ``TooManyRequestsException``, which waits ``getNextAttemptDelay(nextAttempt)`` — the index of the attempt
    about to be made, so the first throttled resend waits 20 ms, not 10 ms (read in rocketmq-clients HEAD).
    Before the server settings arrive the policy is ``immediatelyRetryPolicy`` (no wait at all)."""
    policy = (
        ExponentialBackoffRetryPolicy(max_attempts, backoff.initial_ms, backoff.max_ms, backoff.multiplier)
        if settings_received
        else ExponentialBackoffRetryPolicy.immediately_retry_policy(max_attempts)
    )
    rule = f"§5.6 gRPC producer: maxAttempts {max_attempts}, back-off only on TooManyRequests"
    attempts: list[PlannedAttempt] = []
    at = start_ms
    wait = 0
    for attempt in range(1, max_attempts + 1):
        at += wait
        result = _take(results, attempt - 1)
        if result.outcome in (SendOutcome.SEND_OK, SendOutcome.NOT_STORE_OK):
            attempts.append(PlannedAttempt(attempt, at, wait, result, False))
            return SendPlan(tuple(attempts), True, str(result.outcome), rule)
        more = attempt < max_attempts
        attempts.append(PlannedAttempt(attempt, at, wait, result, more))
        at += result.rt_ms
        if not more:
            return SendPlan(tuple(attempts), False, "run out of attempt times", rule)
        wait = policy.get_next_attempt_delay_ms(attempt + 1) if result.outcome == SendOutcome.TOO_MANY_REQUESTS else 0
    raise AssertionError("unreachable")  # pragma: no cover
