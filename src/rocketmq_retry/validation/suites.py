"""The expectation suites for events, transitions, lifecycles, dead_letters and unattributed (DESIGN §4), as
declarative GE expectations, one function per table.

Suites are built from code plus configuration (drift tolerance, each group's max reconsume times, severities),
so one definition serves every deployment; ``rocketmq_retry.validation.project`` stores them in the file data
context under ``expectations/``. Every expectation carries ``meta.check``: the id that severities are
configured by and that summaries report.

GE substitutes ``{batch}`` with ``str.format``, so the SQL below must not contain any other brace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocketmq_retry import contract
from rocketmq_retry.contract import HopState
from rocketmq_retry.engine.model import DLQ_TOPIC_PREFIX
from rocketmq_retry.validation.settings import ValidationSettings

if TYPE_CHECKING:
    import great_expectations as gx

    from rocketmq_retry.config import Config

SUITE_PREFIX = "rocketmq_retry_"
TABLES = ("events", "transitions", "lifecycles", "dead_letters", "unattributed")

# Column sets, event types, final states and anomaly codes come from the data contract, so the suites check what
# the writers write (tests/test_contract.py holds the writers to the same contract).
COLUMNS = {table: contract.columns(table) for table in TABLES}
EVENT_TYPES = contract.EVENT_TYPES
FINAL_STATES = contract.FINAL_STATES
ANOMALY_CODES = contract.ANOMALY_CODES

# The hop that puts a message in %DLQ%<group>. substr, not LIKE: '%' is LIKE's own wildcard.
_IS_DLQ = (
    f"(to_state = '{HopState.DEAD_LETTERED}' OR "
    f"substr(coalesce(physical_topic, ''), 1, {len(DLQ_TOPIC_PREFIX)}) = '{DLQ_TOPIC_PREFIX}')"
)


@dataclass(frozen=True)
class Check:
    """One expectation and the id its severity is configured by."""

    id: str
    expectation: gx.expectations.Expectation


def _sql_str(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def max_reconsume_sql(config: Config) -> str:
    """SQL for each group's effective max reconsume times (the engine's rule): listed groups, else the default. A
    group whose listener asks for the DLQ on every failure (``delay_level_when_next_consume: -1``, §1.5) may reach
    it at any reconsume times: 0."""
    from rocketmq_retry.engine import effective_max_reconsume_times

    def threshold(group: str) -> int:
        policy = config.group_policy(group)
        return 0 if policy.delay_level_when_next_consume < 0 else effective_max_reconsume_times(policy)

    default = effective_max_reconsume_times(config.group_policy("\x00unlisted"))
    cases = [f"WHEN {_sql_str(group)} THEN {threshold(group)}" for group in sorted(config.groups)]
    if not cases:
        return str(default)
    return f"(CASE consumer_group {' '.join(cases)} ELSE {default} END)"


def local_attempt_dlq_sql(config: Config) -> str:
    """SQL true for a DEAD_LETTERED hop whose copy carries the broker's stored count, not the attempt count.

    gRPC FIFO consumers retry locally (§5.3): the stored copy's reconsumeTimes never advances, so the DLQ copy
    holds the stored count + 1 while the client counted maxAttempts deliveries.
    """
    groups = sorted(
        group
        for group in config.groups
        if config.group_policy(group).protocol == "grpc" and config.group_policy(group).consume_mode == "orderly"
    )
    if not groups:
        return "FALSE"
    listed = ", ".join(_sql_str(g) for g in groups)
    return f"(to_state = {_sql_str(HopState.DEAD_LETTERED)} AND consumer_group IN ({listed}))"


def _not_null(gxe: Any, table: str, columns: tuple[str, ...]) -> list[Check]:
    return [Check(f"{table}.not_null", gxe.ExpectColumnValuesToNotBeNull(column=c)) for c in columns]


def _key_unique(gxe: Any, table: str) -> Check:
    return Check(f"{table}.key_unique", gxe.ExpectCompoundColumnsToBeUnique(column_list=list(contract.KEY)))


def _events_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    return [
        *_not_null(gxe, "events", ("event_id", "event_time", "source", "source_file", "line_no", "event_type")),
        Check("events.event_id_unique", gxe.ExpectColumnValuesToBeUnique(column="event_id")),
        Check("events.event_type_allowed",
              gxe.ExpectColumnValuesToBeInSet(column="event_type", value_set=list(EVENT_TYPES))),
        Check("events.reconsume_times_non_negative",
              gxe.ExpectColumnValuesToBeBetween(column="reconsume_times", min_value=0)),
    ]  # fmt: skip


def _transitions_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    tol = settings.drift_tolerance_ms
    max_sql = max_reconsume_sql(config)
    return [
        # physical_topic stays null for states that are not in a topic (FAILED, SENT_BACK from the client side).
        *_not_null(gxe, "transitions", ("consumer_group", "msg_id", "hop", "from_state", "to_state")),
        Check(
            "transitions.hop_unique",
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["consumer_group", "msg_id", "hop"]),
        ),
        Check("transitions.hop_non_negative", gxe.ExpectColumnValuesToBeBetween(column="hop", min_value=0)),
        Check(
            "transitions.reconsume_times_increasing",
            gxe.UnexpectedRowsExpectation(
                description=(
                    "reconsume_times never decreases along a lifecycle (ordered by hop); a gRPC FIFO dead "
                    "letter is exempt: its copy carries the stored count, not the local attempts (§5.3)"
                ),
                unexpected_rows_query=(
                    "SELECT * FROM (SELECT consumer_group, msg_id, hop, to_state, reconsume_times, "
                    "LAG(reconsume_times) OVER (PARTITION BY consumer_group, msg_id ORDER BY hop) "
                    "AS previous_reconsume_times FROM {batch}) WHERE reconsume_times < previous_reconsume_times "
                    f"AND NOT {local_attempt_dlq_sql(config)}"
                ),
            ),
        ),
        Check(
            "transitions.drift_within_tolerance",
            gxe.ExpectColumnValuesToBeBetween(column="drift_ms", min_value=-tol, max_value=tol),
        ),
        Check(
            "transitions.dlq_at_max_or_override",
            gxe.UnexpectedRowsExpectation(
                description=(
                    "a message reaches %DLQ% only once reconsume_times reached its group's max reconsume "
                    "times, or when the consumer asked for it (delay level < 0)"
                ),
                unexpected_rows_query=(
                    f"SELECT consumer_group, msg_id, hop, reconsume_times, delay_level, physical_topic "
                    f"FROM {{batch}} WHERE {_IS_DLQ} AND coalesce(delay_level, 0) >= 0 "
                    f"AND reconsume_times < {max_sql} AND NOT {local_attempt_dlq_sql(config)}"
                ),
            ),
        ),
        Check(
            "transitions.nothing_delivered_after_dlq",
            gxe.UnexpectedRowsExpectation(
                description="no delivery after a message's first hop into %DLQ% (in hop order: clocks of "
                "brokers and clients disagree by milliseconds, the hop order does not)",
                unexpected_rows_query=(
                    "SELECT t.consumer_group, t.msg_id, t.hop, t.to_state, t.physical_topic FROM {batch} t "
                    "JOIN (SELECT consumer_group, msg_id, min(hop) AS dlq_hop FROM {batch} "
                    f"WHERE {_IS_DLQ} GROUP BY consumer_group, msg_id) d "
                    "ON t.consumer_group = d.consumer_group AND t.msg_id = d.msg_id "
                    f"WHERE t.hop > d.dlq_hop AND t.to_state = '{HopState.DELIVERED}'"
                ),
            ),
        ),
    ]


def _lifecycles_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    return [
        # deliveries stays null when no delivery was observed (e.g. gRPC lifecycles seen only at the DLQ).
        *_not_null(gxe, "lifecycles", ("consumer_group", "msg_id", "first_seen", "last_seen", "final_state")),
        _key_unique(gxe, "lifecycles"),
        Check(
            "lifecycles.final_state_allowed",
            gxe.ExpectColumnValuesToBeInSet(column="final_state", value_set=list(FINAL_STATES)),
        ),
        Check(
            "lifecycles.expected_final_state_allowed",
            gxe.ExpectColumnValuesToBeInSet(column="expected_final_state", value_set=list(FINAL_STATES)),
        ),
        Check(
            "lifecycles.anomaly_codes_allowed",
            gxe.UnexpectedRowsExpectation(
                description="every anomaly code is one DESIGN §4 documents",
                unexpected_rows_query=(
                    "SELECT consumer_group, msg_id, anomalies FROM {batch} WHERE size(filter(coalesce(anomalies, "
                    "array()), a -> NOT a IN (" + ", ".join(_sql_str(c) for c in ANOMALY_CODES) + "))) > 0"
                ),
            ),
        ),
        Check(
            "lifecycles.last_seen_not_before_first_seen",
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="last_seen", column_B="first_seen", or_equal=True),
        ),
        Check(
            "lifecycles.deliveries_non_negative",
            gxe.ExpectColumnValuesToBeBetween(column="deliveries", min_value=0),
        ),
        Check(
            "lifecycles.group_established",
            gxe.UnexpectedRowsExpectation(
                description="every lifecycle says how its consumer group was established, by a known method",
                unexpected_rows_query=(
                    "SELECT consumer_group, msg_id, attribution FROM {batch} WHERE size(coalesce(attribution, "
                    "array())) = 0 OR size(filter(attribution, a -> NOT a IN ("
                    + ", ".join(_sql_str(a) for a in contract.ATTRIBUTIONS)
                    + "))) > 0"
                ),
            ),
        ),
    ]


def _dead_letters_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    return [
        *_not_null(gxe, "dead_letters", ("consumer_group", "msg_id", "compensable")),
        _key_unique(gxe, "dead_letters"),
        Check(
            "dead_letters.compensable_established",
            gxe.UnexpectedRowsExpectation(
                description="a dead letter that compensation may act on has its group established by evidence "
                "or config and no review reason",
                unexpected_rows_query=(
                    "SELECT consumer_group, msg_id, attribution, review_reason FROM {batch} WHERE compensable "
                    "AND (size(coalesce(attribution, array())) = 0 OR review_reason IS NOT NULL)"
                ),
            ),
        ),
        Check(
            "dead_letters.none_held_for_review",
            gxe.UnexpectedRowsExpectation(
                description="no dead letter is held for review: each one's DLQ arrival was observed or its "
                "group's DLQ threshold was reached after an observed failure",
                unexpected_rows_query=(
                    "SELECT consumer_group, msg_id, review_reason FROM {batch} WHERE NOT compensable"
                ),
            ),
        ),
    ]


def _unattributed_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    return [
        Check(
            "unattributed.none",
            gxe.UnexpectedRowsExpectation(
                description="every consumer line's group is established (by the line, the source's "
                "consumer_group, a running container, the consume thread, the client log or the one declared "
                "gRPC group); each row here names the config key that would settle it",
                unexpected_rows_query=(
                    "SELECT source_file, event_type, topic, reason, lines, fix FROM {batch} WHERE lines > 0"
                ),
            ),
        ),
    ]


# Each table's expectations after its schema check, one function per table (gxe is passed in: GE is imported
# only when a suite is built).
_TABLE_CHECKS: dict[str, Callable[[Any, Config, ValidationSettings], list[Check]]] = {
    "events": _events_checks,
    "transitions": _transitions_checks,
    "lifecycles": _lifecycles_checks,
    "dead_letters": _dead_letters_checks,
    "unattributed": _unattributed_checks,
}


def _checks(table: str, config: Config, settings: ValidationSettings) -> list[Check]:
    import great_expectations.expectations as gxe

    if table not in _TABLE_CHECKS:
        raise ValueError(f"no suite for table {table!r}")
    schema = Check(
        f"{table}.schema",
        gxe.ExpectTableColumnsToMatchSet(column_set=list(COLUMNS[table]), exact_match=False),
    )
    return [schema, *_TABLE_CHECKS[table](gxe, config, settings)]


def suite_name(table: str) -> str:
    return SUITE_PREFIX + table


def expectations_for(table: str, config: Config, settings: ValidationSettings) -> list[gx.expectations.Expectation]:
    """Fresh expectation objects (owned by no suite) for ``table``, tagged with check id and severity."""
    out = []
    for check in _checks(table, config, settings):
        expectation = check.expectation
        expectation.meta = {**(expectation.meta or {}), "check": check.id}
        expectation.severity = settings.severity(check.id)  # type: ignore[assignment]
        out.append(expectation)
    return out
