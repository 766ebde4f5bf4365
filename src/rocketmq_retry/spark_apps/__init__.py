"""The installed package's copy of the checkout's top-level ``spark/``: the files ``spark-submit`` runs
(``ingest.py``, ``reconstruct.py``) and their ``spark-defaults.conf``, so that a wheel has them too.

A checkout runs ``spark/`` itself (``config_sections.spark_apps_default``); tests/test_spark_settings.py keeps the two
folders byte for byte the same. Nothing imports this package."""
