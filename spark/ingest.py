"""spark-submit entry for the ingest job (docs/ingest.md):
``spark-submit --properties-file spark/spark-defaults.conf spark/ingest.py --date D --landing L --warehouse W``.

``spark/`` of a checkout and ``rocketmq_retry/spark_apps/`` of an installed package hold the same files
(tests/test_spark_settings.py)."""

from __future__ import annotations

import sys

from rocketmq_retry.jobs.ingest.job import cli

if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
