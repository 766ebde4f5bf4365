"""spark-submit entry for the reconstruction job (docs/reconstruction.md):
``spark-submit --properties-file spark/spark-defaults.conf spark/reconstruct.py --date D --warehouse WH``.

``spark/`` of a checkout and ``rocketmq_retry/spark_apps/`` of an installed package hold the same files
(tests/test_spark_settings.py)."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("SPARK_SUBMIT", "1")  # the master comes from spark-submit, not from the config
    from rocketmq_retry.jobs.reconstruct.job import cli

    sys.exit(cli(sys.argv[1:]))
