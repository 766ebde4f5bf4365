"""Reconstruction facts of the committed example day that the scenario tests cannot show (they have no dumps)."""

from __future__ import annotations

import pathlib

import duckdb
import pytest

from rocketmq_retry.contract import partition_dir

pytestmark = pytest.mark.spark
DS = "2026-11-20"


def test_pop_retry_hops_name_the_business_topic(example_day: pathlib.Path) -> None:
    """The engine's schedule is one per group, with a placeholder for the business topic; every lifecycle's
    INVISIBLE hop names its own %RETRY%<group>_<topic> (§2.4)."""
    transitions = partition_dir(example_day, "transitions", DS)
    rows = duckdb.sql(
        "SELECT DISTINCT consumer_group, physical_topic FROM read_parquet(?) WHERE to_state = 'INVISIBLE' "
        "ORDER BY 1, 2",
        params=[str(transitions / "*.parquet")],
    ).fetchall()
    assert rows, "the example day has gRPC groups whose retries wait invisible"
    assert not [r for r in rows if r[1] is None or "<" in r[1]], rows
    assert ("GID_audit_simple", "%RETRY%GID_audit_simple_AUDIT_EVENT") in rows, rows
