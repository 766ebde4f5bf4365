"""The ``rocketmq_retry`` package as a zip for ``spark-submit --py-files``, so executors import the same code.

Built at task run time (never at parse time), named by a hash of its content and written by rename, so
concurrent tasks and re-runs share one file and never see a partial one.
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import zipfile

import rocketmq_retry

_FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entries carry no build time: same code, same bytes, same name


def _sources(package_dir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(
        p
        for p in package_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".yaml", ".typed", ".json")
    )


def build_package_zip(out_dir: str | os.PathLike[str]) -> pathlib.Path:
    package_dir = pathlib.Path(rocketmq_retry.__file__).resolve().parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in _sources(package_dir):
            info = zipfile.ZipInfo(f"rocketmq_retry/{path.relative_to(package_dir).as_posix()}", _FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:16]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"rocketmq_retry-{rocketmq_retry.__version__}-{digest}.zip"
    if not target.exists():
        tmp = out / f".{target.name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        tmp.replace(target)
    return target
