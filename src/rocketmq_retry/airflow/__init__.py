"""The one room that imports Airflow: operators, task callables, settings and the plugin (docs/DESIGN.md §2)."""
