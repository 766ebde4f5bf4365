"""Event types are spelled through the data contract: a renamed or misspelt type fails where it is written."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_retry import contract
from rocketmq_retry.logformats import statements


def test_event_type_accepts_the_contract_and_refuses_anything_else() -> None:
    assert contract.EventType("DEAD_LETTERED") is contract.EventType.DEAD_LETTERED == "DEAD_LETTERED"
    assert contract.EVENT_TYPES[0] == "PUBLISHED" and len(contract.EVENT_TYPES) == len(set(contract.EVENT_TYPES)) == 25
    with pytest.raises(ValueError, match="'DLQ_ARRIVED' is not a valid EventType"):
        contract.EventType("DLQ_ARRIVED")


def test_group_and_counter_types_are_disjoint_contract_types() -> None:
    assert set(contract.GROUP_EVENT_TYPES) <= set(contract.EVENT_TYPES)
    assert set(contract.COUNTER_EVENT_TYPES) == {
        "SEND_BACK_COUNT",
        "DLQ_COUNT",
        "DLQ_PUT_COUNT",
        "CONSUME_FAILED_COUNT",
    }
    assert not set(contract.GROUP_EVENT_TYPES) & set(contract.COUNTER_EVENT_TYPES)


def test_statement_with_an_event_type_outside_the_contract_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    statements._check_catalogue()  # the real catalogue passes
    renamed = dataclasses.replace(statements.L_B7, event_type="DLQ_ARRIVED")
    monkeypatch.setattr(statements, "CATALOGUE", (*statements.CATALOGUE, renamed))
    with pytest.raises(ValueError, match=r"statement L-B7: event_type 'DLQ_ARRIVED' is not in contract.EVENT_TYPES"):
        statements._check_catalogue()


def test_ingest_sql_writes_only_contract_event_types() -> None:
    import re

    from rocketmq_retry.jobs.ingest.dump import dump_event_sql
    from rocketmq_retry.jobs.ingest.event import EVENT_FIELDS
    from rocketmq_retry.jobs.ingest.revive import revive_events_sql
    from rocketmq_retry.jobs.ingest.trace import trace_records_sql

    sql = dump_event_sql(EVENT_FIELDS) + trace_records_sql("b", "NULL", "'trace'", EVENT_FIELDS)
    sql += revive_events_sql(EVENT_FIELDS)
    written = set(re.findall(r"THEN '([A-Z_]+)'|ELSE '([A-Z_]+)'", sql))
    types = {t for pair in written for t in pair if t}
    assert types == {"DEAD_LETTERED", "RETRY_ENQUEUED", "SEND_BACK", "PUBLISHED", "PUBLISH_FAILED", "DELIVERED",
                     "CONSUME_OK", "CONSUME_FAILED", "POP_CHECKPOINT", "POP_ACK"}  # fmt: skip
