"""spark-submit entry for the ingest job:
``spark-submit src/rocketmq_retry/spark_apps/ingest.py --date D --landing L --warehouse W``."""

from __future__ import annotations

import sys

from rocketmq_retry.jobs.ingest import cli

if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
