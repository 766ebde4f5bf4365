"""spark-submit entry for the reconstruction job:
``spark-submit src/rocketmq_retry/spark_apps/reconstruct.py --date D --warehouse WH``."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("SPARK_SUBMIT", "1")  # the master comes from spark-submit, not from the config
    from rocketmq_retry.jobs.reconstruct import cli

    sys.exit(cli(sys.argv[1:]))
