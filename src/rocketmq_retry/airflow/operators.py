"""Operators of the ``rocketmq_retry_daily`` DAG. Each resolves its run's paths from the ``resolve_run`` task's
XCom (validated there) and hands the work on: to SparkSubmitHook through SparkSubmitOperator (a hook that owns the
``spark_default`` connection), or to ``rocketmq_retry.validation.run`` in the worker (no connection involved, so no
hook: the GE project is a folder the config names).

Constructors do nothing but store arguments: DAG parsing must stay cheap.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import pathlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator, BaseSensorOperator

from rocketmq_retry.airflow.assets import emit_partitions
from rocketmq_retry.airflow.links import DataDocsLink, docs_url
from rocketmq_retry.urls import RESOLVE_TASK, XCOM_DOCS_PATH


def run_paths(context: Any) -> dict[str, str]:
    """The ``resolve_run`` task's validated paths for this run (ds, landing, landing_template, warehouse, config)."""
    paths = context["ti"].xcom_pull(task_ids=RESOLVE_TASK)
    if not paths:
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(f"no paths from task {RESOLVE_TASK!r}: it must run before this task")
    return dict(paths)


# Rendered when the task starts, before the OpenLineage listener asks for the start event's facets (which are asked
# of the operator without a context): the run's resolved paths, as JSON.
LINEAGE_PATHS_TEMPLATE = "{{ ti.xcom_pull(task_ids='" + RESOLVE_TASK + "') | tojson }}"


class RunLineageMixin:
    """OpenLineage facets from the run's paths (``rocketmq_retry.airflow.lineage``): the start event names what
    the task will read and write; the complete (or failure) event adds what it found."""

    lineage_paths: str = ""
    _lineage_facts: dict[str, Any]

    def _run_paths_for_lineage(self) -> dict[str, str] | None:
        try:
            paths = json.loads(self.lineage_paths or "null")
        except ValueError:  # not rendered (a facets call outside a task run)
            return None
        return paths if isinstance(paths, dict) and paths.get("ds") else None

    def lineage(self, *, finished: bool) -> Any:
        from airflow.providers.openlineage.extractors import OperatorLineage

        paths = self._run_paths_for_lineage()
        if paths is None:
            return OperatorLineage()
        inputs, outputs, facts = self.lineage_datasets(paths, finished=finished)
        return OperatorLineage(inputs=inputs, outputs=outputs, run_facets=facts)

    def lineage_datasets(self, paths: dict[str, str], *, finished: bool) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """(inputs, outputs, run facets) of one run: each operator that mixes this in names its own."""
        raise NotImplementedError(f"{type(self).__name__} mixes in RunLineageMixin without naming its datasets")

    def get_openlineage_facets_on_start(self) -> Any:
        return self.lineage(finished=False)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return self.lineage(finished=True)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        # what the task would have written was not committed: the start event's datasets, no counts
        return self.lineage(finished=False)


class LandingSensor(BaseSensorOperator):
    """Waits until the run's landing folder holds data: the ready marker if one is configured, else any file.

    Deferrable: while waiting, a FileTrigger polls in the triggerer and no worker slot is held.

    A folder that exists but is not ready yet is still filling: the sensor waits up to its ``timeout``. A folder
    that does not exist at all once the date's data was due (the end of the date in the schedule's zone plus
    the timeout: when a run scheduled on time would have given up) fails the sensor at once, without retries.
    Waiting cannot bring a past date's data, and a run that waits holds one of the DAG's (or a backfill's)
    active runs for hours: a new deployment's first scheduled run (yesterday, which has no landing) would
    otherwise hold every triggered run behind it, and a backfill over a range with gaps would stall on each gap.
    """

    ui_color = "#c7e9c0"

    def __init__(
        self,
        *,
        ready_marker: str | None = None,
        deferrable: bool = True,
        schedule_timezone: str = "UTC",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.ready_marker = ready_marker
        self.deferrable = deferrable
        self.schedule_timezone = schedule_timezone

    def _target(self, context: Any) -> pathlib.Path:
        paths = run_paths(context)
        landing = pathlib.Path(paths["landing"])
        # {ds} in the marker (e.g. _READY_{ds}) tells dates apart when every date shares one landing folder
        return landing / self.ready_marker.replace("{ds}", paths["ds"]) if self.ready_marker else landing

    def data_due(self, ds: str) -> dt.datetime:
        """When the date's data was due: its end in the schedule's zone (a scheduled run's start) + the timeout."""
        from zoneinfo import ZoneInfo

        day_end = dt.datetime.combine(
            dt.date.fromisoformat(ds) + dt.timedelta(days=1), dt.time(), ZoneInfo(self.schedule_timezone)
        )
        return day_end + dt.timedelta(seconds=self.timeout)

    def _refuse_missing_overdue(self, context: Any) -> None:
        paths = run_paths(context)
        landing = pathlib.Path(paths["landing"])
        if landing.exists():
            return  # still filling, or ready: the timeout decides
        due = self.data_due(paths["ds"])
        if dt.datetime.now(dt.UTC) < due:
            return  # not due yet: the collector may still create it
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(
            f"no landing folder for {paths['ds']} at {landing}, and its data was due by {due.isoformat()} (the end "
            f"of the date in {self.schedule_timezone} + airflow.sensor_timeout_minutes): waiting cannot bring it. "
            "Put the date's files there, then clear this task (or backfill the date with reprocess behaviour "
            "'Missing and Errored Runs')"
        )

    def poke(self, context: Any) -> bool:
        self._refuse_missing_overdue(context)
        target = self._target(context)
        self.log.info("Waiting for landing data at %s", target)
        if self.ready_marker:
            return target.is_file()
        if not target.is_dir():
            return False
        return any(files for _, _, files in os.walk(target))

    def execute(self, context: Any) -> None:
        if not self.deferrable:
            super().execute(context)
            return
        if self.poke(context):
            return
        from airflow.providers.standard.triggers.file import FileTrigger

        self.defer(
            trigger=FileTrigger(filepath=str(self._target(context)), recursive=True, poke_interval=self.poke_interval),
            method_name="execute_complete",
            timeout=dt.timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Any, event: Any = None) -> None:
        if not event:
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException(f"no landing data at {self._target(context)}")
        self.log.info("Landing data found at %s", self._target(context))


class RocketMQSparkJobOperator(RunLineageMixin, SparkSubmitOperator):
    """``spark-submit spark/<job>.py --date D --warehouse W [--landing L [--landing-template T]] [--config C]``
    for this run.

    The master comes from the Spark connection (``local[*]`` or any ``spark://``, ``yarn``, ``k8s://`` URL);
    the package is shipped to executors with ``--py-files``. A connection of type ``spark_connect`` runs the job
    here instead, as a client of that (warm) Spark Connect server.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "lineage_paths")

    def __init__(
        self,
        *,
        job: str,
        apps_dir: str,
        package_dir: str | None = None,
        extra_conf: dict[str, str] | None = None,
        needs_landing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(application=str(pathlib.Path(apps_dir) / f"{job}.py"), name=f"rocketmq-retry-{job}", **kwargs)
        self.job = job
        self.package_dir = package_dir
        self.extra_conf = dict(extra_conf or {})
        self.needs_landing = needs_landing
        self.lineage_paths = LINEAGE_PATHS_TEMPLATE

    def lineage_datasets(self, paths: dict[str, str], *, finished: bool) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """ingest: the date's landing folder in, its tables out; reconstruct: events and bindings in (the date and
        its look-back window), its tables out. Each output carries the partition written."""
        from rocketmq_retry.airflow import lineage
        from rocketmq_retry.warehouse.partitions import JOB_TABLES

        tables = JOB_TABLES.get(self.job, ())
        warehouse, ds = paths["warehouse"], paths["ds"]
        if self.needs_landing:
            inputs = [lineage.landing_input(paths["landing"])]
        else:
            inputs = [lineage.table_dataset(warehouse, t) for t in lineage.JOB_INPUTS.get(self.job, ())]
        outputs = [lineage.output_partition(warehouse, t, ds) for t in tables]
        facts = lineage.job_facts(self.job, paths) if finished else {}
        facet = lineage.run_facet(self.task_id, paths, tables if finished else (), **facts)
        return inputs, outputs, {lineage.RUN_FACET: facet}

    def execute(self, context: Any) -> None:
        paths = run_paths(context)
        connect_url = spark_connect_url(self._conn_id)
        if connect_url:
            self._run_on_connect(paths, connect_url)
        else:
            self._submit(context, paths)
        # the job committed its tables of the date: their asset events (recorded when this task succeeds) say so
        emit_partitions(context, paths)

    def _submit(self, context: Any, paths: dict[str, str]) -> None:
        self.prepare(paths)
        from airflow.exceptions import AirflowException
        from airflow.sdk.exceptions import AirflowFailException

        from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE

        try:
            super().execute(context)
        except AirflowException as exc:
            # The job says a retry cannot help (bad config or input, see rocketmq_retry.errors): fail now.
            if getattr(getattr(self._hook, "_submit_sp", None), "returncode", None) == NOT_RETRYABLE_EXIT_CODE:
                raise AirflowFailException(
                    f"{self.job}: spark-submit exited {NOT_RETRYABLE_EXIT_CODE} (not retryable: fix the config or "
                    f"input, then clear the task); {exc}"
                ) from None
            raise

    def job_args(self, paths: dict[str, str]) -> list[str]:
        """The job's own arguments for one run: the same for spark-submit and for a Spark Connect server."""
        args = ["--date", paths["ds"], "--warehouse", paths["warehouse"]]
        if self.needs_landing:
            args += ["--landing", paths["landing"]]
            # With the template, ingest also catches up the look-back dates whose landing has files but whose
            # events are not committed, so a date's reconstruction never depends on the order dates ran. A
            # resolve_run XCom written before the template existed has no such key: that run reads D alone.
            template = paths.get("landing_template") or ""
            if "{ds}" in template:
                args += ["--landing-template", template]
        if paths["config"]:
            args += ["--config", paths["config"]]
        return args

    def _run_on_connect(self, paths: dict[str, str], url: str) -> None:
        """The job's entry (``cli``) in this worker as a Spark Connect client of an already warm server: no JVM starts
        here and none compiles Spark's code again (docs/airflow.md "A warm Spark Connect server"). The outputs
        and their commit are the same as under spark-submit; the warehouse must be a path the server sees."""
        import importlib

        from airflow.exceptions import AirflowException
        from airflow.sdk.exceptions import AirflowFailException

        from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE

        # the job's spark-submit entry (``cli``): a user error is the same exit code on both paths, one rule here
        job_cli = importlib.import_module(f"rocketmq_retry.jobs.{self.job}.job").cli
        args = self.job_args(paths)
        self.log.info("%s on the Spark Connect server %s: %s", self.job, url.split(";")[0], " ".join(args))
        with spark_connect_client(url):
            code = job_cli(args)
        if code == NOT_RETRYABLE_EXIT_CODE:  # the job printed the reason
            raise AirflowFailException(f"{self.job} exited {code} (not retryable: fix the config or input)")
        if code:
            raise AirflowException(f"{self.job} exited {code}")

    def prepare(self, paths: dict[str, str]) -> None:
        """Set the submit's arguments, conf, ``--py-files`` zip and environment for one run's paths: what
        ``execute`` hands to SparkSubmitHook (tests/test_spark_cluster.py submits the same to a cluster)."""
        from airflow.sdk.exceptions import AirflowFailException

        from rocketmq_retry.airflow.package import build_package_zip
        from rocketmq_retry.config import load_config
        from rocketmq_retry.spark_session import JAVA_OPTIONS, driver_java_options

        if not pathlib.Path(self.application).is_file():
            raise AirflowFailException(f"spark-submit entry {self.application} not found (job {self.job!r})")
        config = load_config(paths["config"] or None)
        self.application_args = self.job_args(paths)
        defaults = pathlib.Path(self.application).with_name("spark-defaults.conf")
        own_flags: dict[str, str] = {}
        if defaults.is_file() and not self.properties_file:
            # The jobs' own tuning (JVM flags, ...); --master and the --conf below still take precedence.
            self.properties_file = str(defaults)
            # the driver runs here: its flags with this machine's class archive, when set-up wrote one (no file
            # can name a path of the machine it lands on); a deployment's spark.conf still wins
            driver_flags = driver_java_options()
            if driver_flags != JAVA_OPTIONS:  # the properties file holds JAVA_OPTIONS already
                own_flags["spark.driver.extraJavaOptions"] = driver_flags
        home = os.environ.get("AIRFLOW_HOME") or str(pathlib.Path.home() / "airflow")
        self.py_files = str(build_package_zip(self.package_dir or pathlib.Path(home) / "rocketmq-retry" / "dist"))
        self.conf = {
            "spark.driver.memory": config.spark.driver_memory,
            "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": "false",  # the UI would listen on all interfaces of the worker
            "spark.log.level": "WARN",
            **own_flags,
            **config.spark.conf,
            **self.extra_conf,
        }
        # The driver runs here (client mode): its Python must be the one that has this package installed.
        self.env_vars = {
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "PYSPARK_DRIVER_PYTHON": os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable),
            **(self.env_vars or {}),
        }


def spark_connect_url(conn_id: str | None) -> str | None:
    """The ``sc://`` URL when ``conn_id`` is a Spark Connect connection (conn type ``spark_connect``), else None
    (a spark-submit connection, or none at all: the validate task then starts its local session)."""
    if not conn_id:
        return None
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn_type = BaseHook.get_connection(conn_id).conn_type
    except AirflowNotFoundException:
        return None
    return SparkConnectHook(conn_id).get_connection_url() if conn_type == SparkConnectHook.conn_type else None


# PySpark's own switches: SPARK_REMOTE names the server; SPARK_CONNECT_MODE_ENABLED, set when a remote session is
# built, stays set after stop() and would turn every later classic session in the process into a remote one
# (dag.test() runs every task, and tests, in one process)
_CONNECT_ENV = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")


@contextlib.contextmanager
def spark_connect_client(url: str) -> Iterator[None]:
    """Inside: ``build_spark_session`` connects to ``url``. On the way out the session is stopped, so the server
    frees what the task left in it (checkpoints, caches), and the process's environment is as it was."""
    saved = {key: os.environ.get(key) for key in _CONNECT_ENV}
    os.environ["SPARK_REMOTE"] = url
    try:
        yield
    finally:
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        session = RemoteSession.getActiveSession()
        if session is not None:
            session.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class ValidatePartitionOperator(RunLineageMixin, BaseOperator):
    """Runs the Great Expectations checkpoints for the run's partition and updates Data Docs.

    Critical failures fail the task without retries (the data will not change by retrying) and so block
    everything downstream; warnings are logged and returned in the summary. The "Data Docs" button links to
    the run's page either way.
    """

    operator_extra_links = (DataDocsLink(),)
    template_fields: Sequence[str] = ("lineage_paths",)
    ui_color = "#fdd49e"

    def __init__(self, *, conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id  # the Spark jobs' connection: a Spark Connect one is used here too
        self.lineage_paths = LINEAGE_PATHS_TEMPLATE
        self._validation: dict[str, Any] | None = None  # the summary, for the lineage event (also on failure)

    def lineage_datasets(self, paths: dict[str, str], *, finished: bool) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """The partitions validated in (each table's dt=D); the status and every expectation's result as facets."""
        from rocketmq_retry.airflow import lineage

        summary = self._validation or {}
        inputs = [
            lineage.input_partition(paths["warehouse"], t, paths["ds"]) for t in sorted(summary.get("rows") or {})
        ]
        facets: dict[str, Any] = {
            lineage.RUN_FACET: lineage.run_facet(self.task_id, paths, (), validation=summary.get("status"))
        }
        if summary:
            facets.update(lineage.validation_facets(summary))
        return inputs, [], facets

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return self.lineage(finished=True)  # a critical failure is a result too: report it

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        from rocketmq_retry.config import load_config
        from rocketmq_retry.errors import UserError
        from rocketmq_retry.validation.run import run, run_page_path

        paths = run_paths(context)
        try:
            config = load_config(paths["config"] or None)  # read once; its validation: section is in it
            url = spark_connect_url(self.conn_id)
            with spark_connect_client(url) if url else contextlib.nullcontext():
                summary = run(paths["ds"], paths["warehouse"], config)
        except UserError as exc:
            raise AirflowFailException(str(exc)) from None
        self._validation = summary.as_dict()
        settings = config.validation
        page = run_page_path(settings.docs_dir, paths["ds"])
        relative = page.relative_to(settings.docs_dir).as_posix()
        context["ti"].xcom_push(key=XCOM_DOCS_PATH, value=relative)
        url = docs_url(relative)  # the Data Docs button's target: what a reader of the log opens
        for warning in summary.warning_failures:
            self.log.warning("validation warning: %s (%s) on %s", warning.check, warning.expectation, warning.table)
        self.log.info("%s", summary.render(url))  # last: its last line is the page's URL
        if not summary.success:
            failed = ", ".join(r.check for r in summary.critical_failures)
            raise AirflowFailException(f"critical expectations failed for dt={paths['ds']}: {failed}; see {url}")
        return summary.as_dict()
