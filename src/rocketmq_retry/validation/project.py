"""The Great Expectations file data context under ``expectations/``: datasource, suites, validation definitions,
checkpoints.

The committed project holds everything a run needs, built from ``suites.py`` with the default configuration
(``python -m rocketmq_retry.validation.project`` rewrites it; a test keeps it in step with the code). At run time
``open_project`` only *reads* those objects; it writes a suite back only when the deployment's configuration
(drift tolerance, severities, groups) makes it differ, so a default run leaves the committed files untouched.
Results and Data Docs go to ``gx/uncommitted/`` (ignored by git).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
from typing import TYPE_CHECKING, Any

from rocketmq_retry.config_sections import gx_template
from rocketmq_retry.errors import InputError
from rocketmq_retry.validation.settings import ValidationSettings
from rocketmq_retry.validation.suites import TABLES, expectations_for, suite_name

if TYPE_CHECKING:
    import great_expectations as gx

    from rocketmq_retry.config import Config

DATASOURCE = "warehouse"
BATCH_DEFINITION = "partition"
DOCS_SITE = "local_site"

_DOCS = "rocketmq_retry.validation.docs_site"
# GX's site builder with this project's renderers and views (validation/docs_site.py): pages that load nothing from
# the internet, statuses and severities in words, example rows, links to the run's pages.
DOCS_SITE_CONFIG: dict[str, Any] = {
    "class_name": "SiteBuilder",
    "show_how_to_buttons": False,
    "store_backend": {
        "class_name": "TupleFilesystemStoreBackend",
        "base_directory": "uncommitted/data_docs/local_site/",
    },
    "site_index_builder": {
        "module_name": _DOCS,
        "class_name": "OperatorSiteIndexBuilder",
        "show_cta_footer": False,
        "renderer": {"module_name": _DOCS, "class_name": "OperatorIndexPageRenderer"},
        "view": {"module_name": _DOCS, "class_name": "OfflineIndexPageView"},
    },
    "site_section_builders": {
        "expectations": {"view": {"module_name": _DOCS, "class_name": "OfflinePageView"}},
        "validations": {
            "renderer": {"module_name": _DOCS, "class_name": "OperatorValidationPageRenderer"},
            "view": {"module_name": _DOCS, "class_name": "OfflinePageView"},
        },
        "profiling": "None",  # no profiling here; GX's default section would bring its CDN templates back
    },
}

PROGRESS_BARS = {"globally": False, "metric_calculations": False}

# The columns that name a failing row in each table, so a failing column expectation lists which messages failed
# (GX's unexpected_index_column_names); unattributed rows have no message, their source file and type say enough.
INDEX_COLUMNS = {
    "events": ["event_id", "consumer_group", "msg_id"],
    "transitions": ["consumer_group", "msg_id", "hop"],
    "lifecycles": ["consumer_group", "msg_id"],
    "dead_letters": ["consumer_group", "msg_id"],
    "unattributed": ["source_file", "event_type"],
    "failures": ["consumer_group", "msg_id", "reconsume_times"],
    "failure_causes": ["consumer_group", "fingerprint"],
    "incidents": ["consumer_group", "incident_id"],
}


def result_format(table: str) -> dict[str, Any]:
    return {
        "result_format": "SUMMARY",
        "partial_unexpected_count": 20,
        "unexpected_index_column_names": INDEX_COLUMNS[table],
        "return_unexpected_index_query": False,
    }


def validation_definition_name(table: str) -> str:
    return f"rocketmq_retry_{table}_partition"


def checkpoint_name(table: str) -> str:
    # One checkpoint per table: a checkpoint hands the same batch parameters to all its validation
    # definitions, and each table is its own DataFrame.
    return f"rocketmq_retry_{table}"


def _fingerprint(expectations: list[Any]) -> str:
    """What makes two suites equivalent: every expectation's configuration without GE's generated ids."""
    rows = []
    for expectation in expectations:
        cfg = expectation.configuration.to_json_dict()
        cfg.pop("id", None)
        cfg.pop("rendered_content", None)
        cfg.setdefault("severity", str(getattr(expectation, "severity", "critical")))
        rows.append(cfg)
    return json.dumps(rows, sort_keys=True, default=str)


def _get_or_none(getter: Any, name: str) -> Any:
    try:
        return getter(name)
    except Exception:  # GE raises a different not-found type per store
        return None


def _seed(root: pathlib.Path) -> None:
    """A new working project starts as a copy of the committed one (its great_expectations.yml turns analytics
    off and names the Data Docs site), never as GE's own default project."""
    if (root / "gx" / "great_expectations.yml").is_file():
        return
    template = gx_template()
    if template is None:
        raise InputError(
            f"no Great Expectations project at {root}, and no committed project to start it from "
            "(an installed package): set validation.context_root or $ROCKETMQ_RETRY_GX_ROOT to a copy of the "
            "repository's expectations/ folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template, root, ignore=shutil.ignore_patterns("uncommitted"), dirs_exist_ok=True)


def open_project(config: Config, settings: ValidationSettings) -> gx.data_context.FileDataContext:
    """The file data context with everything ``run`` needs in place (created on first use, else reused)."""
    import great_expectations as gx

    root = settings.gx_root
    _seed(root)
    context = gx.get_context(mode="file", project_root_dir=str(root))
    if (context.variables.data_docs_sites or {}).get(DOCS_SITE) != DOCS_SITE_CONFIG:
        # A project seeded before the offline Data Docs: its site still names GX's CDN templates.
        sites = dict(context.variables.data_docs_sites or {})
        sites[DOCS_SITE] = DOCS_SITE_CONFIG
        context.variables.data_docs_sites = sites
        context.variables.save()

    if dict(context.variables.progress_bars or {}) != PROGRESS_BARS:
        # GX draws a "Calculating Metrics" bar on stderr for every suite: in a task log, red lines of noise.
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context.variables.progress_bars = ProgressBarsConfig(**PROGRESS_BARS)
        context.variables.save()

    # persist=False: run.py decides which frames are cached. GE's default persists every frame it validates, so a
    # large partition, left uncached on purpose (run.CACHE_BELOW_BYTES), was copied into memory whole by GE instead.
    datasource = _get_or_none(context.data_sources.get, DATASOURCE) or context.data_sources.add_spark(
        name=DATASOURCE, persist=False
    )
    if datasource.persist:  # a project seeded before
        datasource.persist = False
        datasource = context.update_datasource(datasource)
    for table in TABLES:
        asset = _get_or_none(datasource.get_asset, table) or datasource.add_dataframe_asset(name=table)
        batch_definition = _get_or_none(asset.get_batch_definition, BATCH_DEFINITION)
        if batch_definition is None:
            batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION)

        wanted = expectations_for(table, config, settings)
        suite = _get_or_none(context.suites.get, suite_name(table))
        if suite is None:
            suite = gx.ExpectationSuite(name=suite_name(table), meta={"table": table})
            for expectation in wanted:
                suite.add_expectation(expectation)
            suite = context.suites.add(suite)
        elif _fingerprint(suite.expectations) != _fingerprint(wanted):
            # Same suite object (same id) so the validation definitions that point at it stay valid.
            for expectation in list(suite.expectations):
                suite.delete_expectation(expectation)
            for expectation in wanted:
                suite.add_expectation(expectation)
            suite.save()

        vd = _get_or_none(context.validation_definitions.get, validation_definition_name(table))
        if vd is None:
            vd = context.validation_definitions.add(
                gx.ValidationDefinition(name=validation_definition_name(table), data=batch_definition, suite=suite)
            )
        checkpoint = _get_or_none(context.checkpoints.get, checkpoint_name(table))
        if checkpoint is None:
            # No UpdateDataDocsAction: it would render the raw sample values before they are escaped
            # (validation/docs_safety.py); run.py publishes each result's page once it is safe.
            context.checkpoints.add(
                gx.Checkpoint(
                    name=checkpoint_name(table),
                    validation_definitions=[vd],
                    actions=[],
                    result_format=result_format(table),
                )
            )
        elif checkpoint.actions or checkpoint.result_format != result_format(table):
            # A project created before the pages were escaped, or before they listed example rows.
            checkpoint.actions = []
            checkpoint.result_format = result_format(table)
            checkpoint.save()
    return context


def main(argv: list[str] | None = None) -> int:
    """Create or refresh the project's stored objects from the code (default config unless --config)."""
    import argparse

    from rocketmq_retry.config import load_config
    from rocketmq_retry.validation.settings import load_validation_settings

    parser = argparse.ArgumentParser(prog="python -m rocketmq_retry.validation.project", description=main.__doc__)
    parser.add_argument("--config", help="config file (default: built-in defaults, which is what is committed)")
    ns = parser.parse_args(argv)
    if ns.config:
        settings = load_validation_settings(ns.config)  # the project that config's runs use
    else:
        # The committed project itself: the template every working project is seeded from.
        template = gx_template()
        if template is None:
            raise SystemExit("no source checkout: the committed GE project exists only in the repository")
        settings = ValidationSettings(context_root=str(template))
    context = open_project(load_config(ns.config) if ns.config else _default_config(), settings)
    print(f"project ready at {pathlib.Path(context.root_directory)}")
    return 0


def _default_config() -> Config:
    from rocketmq_retry.config import Config

    return Config()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
