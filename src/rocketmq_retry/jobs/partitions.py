"""Atomic replacement of one ``<warehouse>/<table>/dt=D`` partition on a local (POSIX) file system.

Spark writes into a hidden sibling; only a complete write is swapped in, by two renames. A crash during the
Spark write leaves the previous partition untouched. A crash between the two renames leaves the previous
partition as ``.dt=D.old-*``, which ``recover`` (run before every write) puts back.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _local(path: str | os.PathLike[str]) -> pathlib.Path:
    text = str(path)
    if "://" in text and not text.startswith("file://"):
        raise NotImplementedError(f"atomic partition swap is implemented for local paths only: {text}")
    return pathlib.Path(text.removeprefix("file://"))


def recover(table_dir: pathlib.Path, ds: str) -> None:
    final = table_dir / f"dt={ds}"
    olds = sorted(table_dir.glob(f".dt={ds}.old-*"))
    if not final.exists() and olds:
        olds[-1].rename(final)
        olds = olds[:-1]
    for stale in [*olds, *table_dir.glob(f".dt={ds}.tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)


def write_partition(df: DataFrame, warehouse: str | os.PathLike[str], table: str, ds: str) -> pathlib.Path:
    """Write ``df`` as Parquet to ``<warehouse>/<table>/dt=<ds>``, replacing what was there atomically."""
    table_dir = _local(warehouse) / table
    table_dir.mkdir(parents=True, exist_ok=True)
    recover(table_dir, ds)
    token = uuid.uuid4().hex[:12]
    tmp = table_dir / f".dt={ds}.tmp-{token}"
    df.write.mode("errorifexists").parquet(str(tmp))
    final = table_dir / f"dt={ds}"
    old = table_dir / f".dt={ds}.old-{token}"
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final
