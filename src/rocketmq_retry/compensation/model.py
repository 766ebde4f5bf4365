"""What a compensation handler sees, the ledger's states, and how handlers report failure."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import re
import time
import uuid
from typing import Any

from rocketmq_retry import contract

# A fixed namespace: the idempotency key of a dead letter must never change between releases,
# because downstream systems deduplicate on it.
_KEY_NAMESPACE = uuid.UUID("6f1c2a4e-93b1-5d1e-8c0a-7a52e4d0b3c9")


class State(enum.StrEnum):
    PENDING = "PENDING"  # registered, never claimed (or reset by an operator)
    CLAIMED = "CLAIMED"  # a worker holds the lease until lease_expires_at
    DONE = "DONE"  # the handler's effect happened; terminal
    FAILED = "FAILED"  # a retryable failure; claimable again while attempts < max_attempts
    GAVE_UP = "GAVE_UP"  # permanent failure or attempts exhausted; only an operator re-drive reopens it
    SKIPPED = "SKIPPED"  # no route (or an undefined handler); only an operator re-drive reopens it
    # Registered but never handed to a handler: its business key was compensated compensation.max_loops times on
    # earlier dates and dead-lettered again (a re-drive loop); only an operator re-drive reopens it.
    HELD_FOR_REVIEW = "HELD_FOR_REVIEW"


# What an operator may send back to PENDING. DONE never: its effect already happened (DESIGN §8).
REOPENABLE = frozenset({State.FAILED, State.GAVE_UP, State.SKIPPED, State.HELD_FOR_REVIEW})


class Reason(enum.StrEnum):
    """The normalised outcome of the last attempt on a ledger row (column ``reason``, docs/compensation.md
    "Outcome reasons"), decided where the outcome is known (the handler's exception type or HTTP status), never
    read back out of the error text. ``handler_exception:<class>`` is built by ``exception_reason``."""

    OK = "ok"  # DONE: the handler returned (HTTP 2xx or 409, row inserted or already present)
    HTTP_4XX = "http_4xx"  # a 4xx other than 408 and 429: permanent
    HTTP_408 = "http_408"  # the receiver timed the request out: retried
    HTTP_429 = "http_429"  # the receiver is rate-limiting: retried
    HTTP_5XX = "http_5xx"
    TIMEOUT = "timeout"  # no answer within timeout_seconds (http request, python call)
    CONNECTION_REFUSED = "connection_refused"  # nothing listens at the target (ECONNREFUSED)
    CONNECTION_ERROR = "connection_error"  # any other failure to connect (DNS, TLS, reset)
    DB_UNAVAILABLE = "db_unavailable"  # sql: locked, cancelled by statement_timeout, unreachable
    DB_REJECTED = "db_rejected"  # sql: the insert broke a constraint other than the idempotency key
    DB_ERROR = "db_error"  # sql: any other driver error
    ROUTE_MISSING = "route_missing"  # SKIPPED: no route matched the topic and group (routing.handler_for)
    BODY_MISSING = "body_missing"  # raised by a handler that needs the message body the logs did not carry
    APPROVAL_REJECTED = "approval_rejected"  # an approver refused the compensation
    LEASE_EXPIRED = "lease_expired"  # GAVE_UP: the last attempt's worker was lost
    REDRIVEN = "redriven"  # reopened by an operator; the previous reason is in last_error
    REDRIVE_LOOP = "redrive_loop"  # HELD_FOR_REVIEW: see State.HELD_FOR_REVIEW


HANDLER_EXCEPTION = "handler_exception:"
REASON_MAX = 128
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def normalise_reason(value: str) -> str:
    """A reason as stored: an identifier (letters, digits, ``_ . : -``), at most REASON_MAX characters, so that
    whatever a python handler names stays one filterable token."""
    return _REASON_UNSAFE.sub("_", value.strip())[:REASON_MAX] or "unknown"


def exception_reason(exc: BaseException) -> str:
    """The reason of a failure: the one the raiser gave (``HandlerFailure.reason``), else the exception's class."""
    given = getattr(exc, "reason", None)
    if isinstance(given, str) and given:
        return normalise_reason(given)
    return normalise_reason(HANDLER_EXCEPTION + type(exc).__name__)


class HandlerFailure(Exception):
    """A handler's failure with its normalised reason (``Reason`` or any identifier the handler chooses)."""

    def __init__(self, *args: object, reason: str | None = None) -> None:
        super().__init__(*args)
        self.reason = reason


class PermanentFailure(HandlerFailure):
    """Raised by a handler when retrying cannot help (e.g. HTTP 4xx): the row goes to GAVE_UP."""


class RetryableFailure(HandlerFailure):
    """Raised by a handler for a transient failure (e.g. HTTP 5xx, timeout): the row goes to FAILED."""


def idempotency_key(consumer_group: str, msg_id: str) -> str:
    """Stable key derived from the ledger key: the same dead letter always gets the same value."""
    return str(uuid.uuid5(_KEY_NAMESPACE, f"{consumer_group}\x00{msg_id}"))


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    """One row of ``dead_letters/dt=D`` (DESIGN §4) plus what compensation derives from it."""

    consumer_group: str
    msg_id: str
    dlq_date: str  # the partition (YYYY-MM-DD) the row was read from
    original_topic: str | None = None
    dlq_at: dt.datetime | None = None
    reconsume_times: int | None = None
    keys: str | None = None
    tags: str | None = None
    business_key: str | None = None
    body: str | None = None

    @property
    def idempotency_key(self) -> str:
        return idempotency_key(self.consumer_group, self.msg_id)

    def to_json(self) -> dict[str, Any]:
        """The JSON document the http handler posts and the sql handler stores."""
        return {
            "idempotency_key": self.idempotency_key,
            "consumer_group": self.consumer_group,
            "msg_id": self.msg_id,
            "original_topic": self.original_topic,
            "dlq_date": self.dlq_date,
            "dlq_at": self.dlq_at.isoformat() if self.dlq_at else None,
            "reconsume_times": self.reconsume_times,
            "keys": self.keys,
            "tags": self.tags,
            "business_key": self.business_key,
            "body": self.body,
        }


# The fields read from a dead_letters row: each must be a column of the data contract, so a column renamed there
# fails here, at import, instead of reading None from every row.
ROW_FIELDS = tuple(f.name for f in dataclasses.fields(DeadLetter) if f.name != "dlq_date")
_NOT_IN_CONTRACT = sorted(set(ROW_FIELDS) - set(contract.columns("dead_letters")))
if _NOT_IN_CONTRACT:
    raise ImportError(f"DeadLetter fields {_NOT_IN_CONTRACT} are not dead_letters columns of rocketmq_retry.contract")


@dataclasses.dataclass(frozen=True)
class Registration:
    """A dead letter as first written to the ledger."""

    consumer_group: str
    msg_id: str
    dlq_date: str | None
    original_topic: str | None
    handler: str | None
    business_key: str | None
    skip_reason: str | None = None  # why no handler was found (recorded when the row is SKIPPED)


@dataclasses.dataclass(frozen=True)
class Claim:
    consumer_group: str
    msg_id: str
    token: str
    attempt: int
    lease_expires_at: dt.datetime  # database time
    # This worker's monotonic clock when the claim was won (after the database granted it, so never early):
    # what the worker measures its remaining lease against, free of any difference between the two clocks.
    won_at: float = dataclasses.field(default_factory=time.monotonic, compare=False)


@dataclasses.dataclass(frozen=True)
class LedgerRow:
    consumer_group: str
    msg_id: str
    state: State
    attempts: int
    handler: str | None
    business_key: str | None
    first_seen: dt.datetime
    last_attempt_at: dt.datetime | None
    completed_at: dt.datetime | None
    last_error: str | None
    airflow_run_id: str | None
    claimed_by: str | None
    lease_expires_at: dt.datetime | None
    dlq_date: str | None
    original_topic: str | None
    redrives: int
    result: str | None
    reason: str | None = None  # Reason of the last outcome (revision 0003)
    loops: int = 0  # earlier dates on which this business key was compensated (revision 0003)

    @classmethod
    def from_mapping(cls, row: Any) -> LedgerRow:
        values = {f.name: row[f.name] for f in dataclasses.fields(cls)}
        values["state"] = State(values["state"])
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = (
                value.isoformat() if isinstance(value, dt.datetime) else str(value) if f.name == "state" else value
            )
        return out
