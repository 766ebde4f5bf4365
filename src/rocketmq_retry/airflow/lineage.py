"""OpenLineage for the daily DAG's operators: what each task read and wrote, and what the run found.

The OpenLineage provider (``apache-airflow-providers-openlineage``) calls an operator's
``get_openlineage_facets_on_start()`` before it runs and ``get_openlineage_facets_on_complete(ti)`` (or
``_on_failure``) after, and sends one event each time through the transport Airflow's configuration names
(``[openlineage] transport``; none configured: the provider is off and none of this runs). docs/airflow.md "Lineage".

Datasets follow OpenLineage's naming for files (namespace ``file``, name the absolute path), which is also what
Airflow makes of the tables' Assets (``file://<warehouse root>/<table>``, airflow/assets.py), so the Assets view and a
lineage backend name a table the same way:

- ingest reads the run's landing folder (``<landing root>/<ds>``), the input;
- each table is one dataset (``<warehouse>/<table>``); the partition a task committed (``dt=<ds>``) is the output's
  standard ``subset`` facet (a partition condition), so every date adds a version of the same dataset instead of
  a new dataset per day;
- the run facet ``rocketmqRetry`` carries the date and what the task found (lines read, lifecycles, dead letters,
  the validation's status), and validate's results are the standard ``test`` run facet, one entry per expectation.

Nothing here is imported at DAG parse time, and nothing here may fail a task: the provider catches and logs
whatever a facets method raises, and the counts are read from the committed partitions with pyarrow (metadata and
one small column), never with Spark.
"""

from __future__ import annotations

import pathlib
from typing import Any

import attr
from openlineage.client.event_v2 import Dataset, InputDataset, OutputDataset
from openlineage.client.facet_v2 import RunFacet
from openlineage.client.generated import base_subset_dataset as subset
from openlineage.client.generated import test_run

from rocketmq_retry.contract import partition_dir

NAMESPACE = "file"  # OpenLineage's namespace for a local (or mounted) file system path
RUN_FACET = "rocketmqRetry"
# A custom facet must name its schema; this URN names the facet below (documented in docs/airflow.md "Lineage").
RUN_FACET_SCHEMA = "urn:rocketmq-retry:openlineage:RocketMQRetryRunFacet:1"
# The tables a Spark job reads (ingest reads the landing folder): reconstruct reads events and bindings of the date
# and of its look-back window (jobs/reconstruct/job.py, attribution.py), so no one partition is named.
JOB_INPUTS: dict[str, tuple[str, ...]] = {"reconstruct": ("events", "bindings")}


@attr.define
class RocketMQRetryRunFacet(RunFacet):
    """What one task of the daily DAG found for its date (absent: not this task's to say)."""

    ds: str
    task: str
    partitions: list[str] = attr.field(factory=list)
    linesRead: int | None = None  # OpenLineage facets' fields are camelCase
    events: int | None = None
    lifecycles: int | None = None
    deadLetters: int | None = None
    validation: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return RUN_FACET_SCHEMA


def table_dataset(warehouse: str, table: str) -> Dataset:
    return Dataset(namespace=NAMESPACE, name=str(pathlib.Path(warehouse) / table))


def _partition(ds: str) -> Any:
    return subset.PartitionSubsetCondition(partitions=[subset.Partition(dimensions={"dt": ds}, identifier=f"dt={ds}")])


def output_partition(warehouse: str, table: str, ds: str) -> OutputDataset:
    """The table as an output, with the partition written as its ``subset`` facet."""
    return OutputDataset(
        namespace=NAMESPACE,
        name=str(pathlib.Path(warehouse) / table),
        outputFacets={"subset": subset.OutputSubsetOutputDatasetFacet(outputCondition=_partition(ds))},
    )


def input_partition(warehouse: str, table: str, ds: str) -> InputDataset:
    return InputDataset(
        namespace=NAMESPACE,
        name=str(pathlib.Path(warehouse) / table),
        inputFacets={"subset": subset.InputSubsetInputDatasetFacet(inputCondition=_partition(ds))},
    )


def landing_input(landing: str) -> InputDataset:
    return InputDataset(namespace=NAMESPACE, name=str(pathlib.Path(landing)))


def _rows(path: pathlib.Path) -> int | None:
    """Rows of a committed partition from the Parquet footers; None when it is not there."""
    if not path.is_dir():
        return None
    import pyarrow.dataset as pads

    return int(pads.dataset(str(path), format="parquet").count_rows())


def _sum(path: pathlib.Path, column: str) -> int | None:
    if not path.is_dir():
        return None
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    total = pc.sum(pads.dataset(str(path), format="parquet").to_table(columns=[column])[column]).as_py()
    return int(total or 0)


def job_facts(job: str, paths: dict[str, str]) -> dict[str, int | None]:
    """The counts a Spark job's run facet carries, from the partitions it committed."""
    from rocketmq_retry.warehouse.partitions import committed

    warehouse, ds = paths["warehouse"], paths["ds"]
    if job == "ingest":
        return {
            "linesRead": _sum(committed(warehouse, "ingest_report", ds), "lines_read"),
            "events": _rows(committed(warehouse, "events", ds)),
        }
    if job == "reconstruct":
        return {
            "lifecycles": _rows(committed(warehouse, "lifecycles", ds)),
            "deadLetters": _rows(committed(warehouse, "dead_letters", ds)),
        }
    return {}


def run_facet(task: str, paths: dict[str, str], tables: tuple[str, ...], **facts: Any) -> RocketMQRetryRunFacet:
    return RocketMQRetryRunFacet(
        ds=paths["ds"],
        task=task,
        partitions=[str(partition_dir(paths["warehouse"], t, paths["ds"])) for t in tables],
        **facts,
    )


def validation_facets(summary: dict[str, Any]) -> dict[str, Any]:
    """validate's results as OpenLineage's ``test`` run facet: one test per expectation, with its severity."""
    tests = [
        test_run.TestExecution(
            name=r["check"],  # already "<table>.<check>" (events.schema)
            status="pass" if r["success"] else "fail",
            severity=r["severity"],
            type=r["expectation"],
        )
        for r in summary.get("results") or []
    ]
    return {"test": test_run.TestRunFacet(tests=tests)}
