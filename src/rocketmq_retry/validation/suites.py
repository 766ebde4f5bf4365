"""The expectation suites for events, transitions, lifecycles, dead_letters, unattributed, failures,
failure_causes and incidents (DESIGN §4), as declarative GE expectations, one function per table.

Suites are built from code plus configuration (drift tolerance, each group's max reconsume times, severities),
so one definition serves every deployment; ``rocketmq_retry.validation.project`` stores them in the file data
context under ``expectations/``. Every expectation carries ``meta.check``: the id that severities are
configured by and that summaries report.

GE substitutes ``{batch}`` with ``str.format``, so the SQL below must not contain any other brace. A check that
compares two tables of the date reads the other one through its temp view (``view``), which ``run.py`` registers
for every table of ``TABLES`` before any suite runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
TABLES = (
    "events", "transitions", "lifecycles", "dead_letters", "unattributed", "failures", "failure_causes", "incidents"
)  # fmt: skip

# Column sets, event types, final states and anomaly codes come from the data contract, so the suites check what
# the writers write (tests/test_contract.py holds the writers to the same contract).
COLUMNS = {table: contract.columns(table) for table in TABLES}
EVENT_TYPES = contract.EVENT_TYPES
FINAL_STATES = contract.FINAL_STATES
ANOMALY_CODES = contract.ANOMALY_CODES

# The cause code of a failure the evidence does not explain.
UNKNOWN_CAUSE = contract.CauseCode.UNKNOWN
# failures.source of a failure no line or record gave (its cause came from a counter or the broker alone): its own
# group in the coverage check, next to the formats.
NO_SOURCE = "(no line)"
# failures.cause: a fingerprint is sha2's lowercase hex cut to 32 (jobs/ingest/causes.py)
FINGERPRINT_LENGTH = 32

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


def _sql_list(values: Iterable[str]) -> str:
    return ", ".join(_sql_str(v) for v in values)


def view(table: str) -> str:
    """The temp view through which a check reads another table of the same date (registered by ``run.py``)."""
    if table not in TABLES:
        raise ValueError(f"no view for table {table!r}")
    return f"{SUITE_PREFIX}dt_{table}"


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


def _key_unique(gxe: Any, table: str, key: tuple[str, ...] = contract.KEY) -> Check:
    return Check(f"{table}.key_unique", gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key)))


def _allowed(gxe: Any, table: str, column: str, values: Iterable[str]) -> Check:
    """``column`` holds only the contract's ``values`` (null passes: a lifecycle that never failed has no kind)."""
    return Check(f"{table}.{column}_allowed", gxe.ExpectColumnValuesToBeInSet(column=column, value_set=list(values)))


def _kinds_allowed(gxe: Any, table: str) -> list[Check]:
    return [
        _allowed(gxe, table, "failure_kind", contract.FAILURE_KINDS),
        _allowed(gxe, table, "kind_rule", contract.KIND_RULES),
    ]


def _failed_on_d(alias: str) -> str:
    """SQL true for a row of ``alias`` (keyed by group and msg_id) whose message has a failure among the date's
    failures. Only such a row's last failure, and so its incident and its cause's failure_causes row, is of this
    date: a lifecycle carried over from an earlier date, or a dead letter whose last failure came before the date,
    names what that earlier date wrote (docs/airflow.md "Great Expectations")."""
    return (
        f"EXISTS (SELECT 1 FROM {view('failures')} f WHERE f.consumer_group = {alias}.consumer_group "
        f"AND f.msg_id = {alias}.msg_id)"
    )


def _incident_exists(gxe: Any, table: str, only_failed_on_d: bool) -> Check:
    scope = f" AND {_failed_on_d('r')}" if only_failed_on_d else ""
    key = "r.msg_id, r.failed_at" if table == "failures" else "r.msg_id"
    when = " (checked for a row whose message failed on the date; an earlier last failure's incident is that date's)"
    return Check(
        f"{table}.incident_exists",
        gxe.UnexpectedRowsExpectation(
            description="every incident_id names an incident of the same group in the date's incidents"
            + (when if only_failed_on_d else ""),
            unexpected_rows_query=(
                f"SELECT r.consumer_group, {key}, r.incident_id FROM {{batch}} r WHERE r.incident_id IS NOT NULL"
                f"{scope} AND NOT EXISTS (SELECT 1 FROM {view('incidents')} i "
                "WHERE i.consumer_group = r.consumer_group AND i.incident_id = r.incident_id)"
            ),
        ),
    )


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
        *_kinds_allowed(gxe, "lifecycles"),
        _incident_exists(gxe, "lifecycles", only_failed_on_d=True),
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
        *_kinds_allowed(gxe, "dead_letters"),
        _allowed(gxe, "dead_letters", "redrive_advice", contract.REDRIVE_ADVICE),
        Check(
            "dead_letters.cause_in_failure_causes",
            gxe.UnexpectedRowsExpectation(
                description="a dead letter's cause has its row in failure_causes for its group (a dead letter "
                "whose message failed on the date; an earlier last failure is counted on its own date)",
                unexpected_rows_query=(
                    f"SELECT d.consumer_group, d.msg_id, d.cause_fingerprint FROM {{batch}} d "
                    f"WHERE d.cause_fingerprint IS NOT NULL AND {_failed_on_d('d')} "
                    f"AND NOT EXISTS (SELECT 1 FROM {view('failure_causes')} c "
                    "WHERE c.consumer_group = d.consumer_group AND c.fingerprint = d.cause_fingerprint)"
                ),
            ),
        ),
        _incident_exists(gxe, "dead_letters", only_failed_on_d=True),
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


def _failures_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    floor = settings.cause_coverage_floor
    source = f"coalesce(source, {_sql_str(NO_SOURCE)})"
    return [
        *_not_null(gxe, "failures", ("consumer_group", "msg_id", "failed_at", "cause", "cause_evidence")),
        Check(
            "failures.cause_known",
            gxe.UnexpectedRowsExpectation(
                description="a cause is a fingerprint (32 lowercase hex) or one of the contract's cause codes",
                unexpected_rows_query=(
                    "SELECT consumer_group, msg_id, failed_at, cause FROM {batch} WHERE NOT (cause IN ("
                    + _sql_list(contract.CAUSE_CODES)
                    + f") OR (length(cause) = {FINGERPRINT_LENGTH} AND cause RLIKE '^[0-9a-f]+$'))"
                ),
            ),
        ),
        _allowed(gxe, "failures", "cause_evidence", contract.CAUSE_EVIDENCE),
        *_kinds_allowed(gxe, "failures"),
        _incident_exists(gxe, "failures", only_failed_on_d=False),
        Check(
            "failures.cause_coverage",
            gxe.UnexpectedRowsExpectation(
                description=(
                    f"per source format ({NO_SOURCE} for a failure no line gave), at least "
                    f"validation.cause_coverage_floor = {floor:g} of the failures have a cause other than "
                    f"{UNKNOWN_CAUSE}; each row is a source below it"
                ),
                unexpected_rows_query=(
                    "SELECT source, failures, known_cause, round(known_cause / failures, 3) AS share FROM ("
                    f"SELECT {source} AS source, count(*) AS failures, "
                    f"count_if(cause <> {_sql_str(UNKNOWN_CAUSE)}) AS known_cause FROM {{batch}} GROUP BY {source}) "
                    f"WHERE known_cause < {floor!r} * failures"
                ),
            ),
        ),
    ]


def _failure_causes_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    dead_letters = view("dead_letters")
    return [
        *_not_null(gxe, "failure_causes", ("consumer_group", "fingerprint", "failures", "messages", "dead_letters")),
        _key_unique(gxe, "failure_causes", ("consumer_group", "fingerprint")),
        *_kinds_allowed(gxe, "failure_causes"),
        Check(
            "failure_causes.failures_match",
            gxe.UnexpectedRowsExpectation(
                description="per group and cause, failure_causes.failures equals the date's failures rows with "
                "that cause (so per group too)",
                unexpected_rows_query=(
                    "SELECT coalesce(c.consumer_group, f.consumer_group) AS consumer_group, "
                    "coalesce(c.fingerprint, f.cause) AS cause, c.failures AS in_failure_causes, "
                    "f.failures AS in_failures FROM (SELECT consumer_group, fingerprint, sum(failures) AS failures "
                    "FROM {batch} GROUP BY consumer_group, fingerprint) c FULL OUTER JOIN ("
                    f"SELECT consumer_group, cause, count(*) AS failures FROM {view('failures')} "
                    "GROUP BY consumer_group, cause) f "
                    "ON c.consumer_group <=> f.consumer_group AND c.fingerprint <=> f.cause "
                    "WHERE coalesce(c.failures, 0) <> coalesce(f.failures, 0)"
                ),
            ),
        ),
        Check(
            "failure_causes.dead_letters_match",
            gxe.UnexpectedRowsExpectation(
                description="per group and cause, failure_causes.dead_letters equals the date's dead letters with "
                "that cause_fingerprint whose message failed on the date",
                unexpected_rows_query=(
                    "SELECT coalesce(c.consumer_group, d.consumer_group) AS consumer_group, "
                    "coalesce(c.fingerprint, d.fingerprint) AS cause, c.dead_letters AS in_failure_causes, "
                    "d.dead_letters AS in_dead_letters FROM (SELECT consumer_group, fingerprint, "
                    "sum(dead_letters) AS dead_letters FROM {batch} GROUP BY consumer_group, fingerprint) c "
                    "FULL OUTER JOIN (SELECT d.consumer_group, d.cause_fingerprint AS fingerprint, "
                    f"count(*) AS dead_letters FROM {dead_letters} d WHERE d.cause_fingerprint IS NOT NULL "
                    f"AND {_failed_on_d('d')} GROUP BY d.consumer_group, d.cause_fingerprint) d "
                    "ON c.consumer_group <=> d.consumer_group AND c.fingerprint <=> d.fingerprint "
                    "WHERE coalesce(c.dead_letters, 0) <> coalesce(d.dead_letters, 0)"
                ),
            ),
        ),
    ]


def _incidents_checks(gxe: Any, config: Config, settings: ValidationSettings) -> list[Check]:
    return [
        *_not_null(gxe, "incidents", ("consumer_group", "incident_id", "fingerprint", "started_at", "state", "rule")),
        Check("incidents.incident_id_unique", gxe.ExpectColumnValuesToBeUnique(column="incident_id")),
        _allowed(gxe, "incidents", "state", contract.INCIDENT_STATES),
        _allowed(gxe, "incidents", "rule", contract.KIND_RULES),
    ]


# Each table's expectations after its schema check, one function per table (gxe is passed in: GE is imported
# only when a suite is built).
_TABLE_CHECKS: dict[str, Callable[[Any, Config, ValidationSettings], list[Check]]] = {
    "events": _events_checks,
    "transitions": _transitions_checks,
    "lifecycles": _lifecycles_checks,
    "dead_letters": _dead_letters_checks,
    "unattributed": _unattributed_checks,
    "failures": _failures_checks,
    "failure_causes": _failure_causes_checks,
    "incidents": _incidents_checks,
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
