"""Find the files each configured source names for a date and read them as numbered text lines.

Line numbers must be exact and stable (with the file's content fingerprint and the line's own text they make
``event_id``, see ``ingest.parse.events_of``), for plain and gzip files alike, and however Spark would otherwise
split a large file. We read with one input partition per file (split size and
file-open cost set far above any file size), so within a partition rows are the file's lines in order and
``monotonically_increasing_id()``'s low 33 bits are the 0-based line index. ``spark.read.text`` strips ``\\n``
and ``\\r\\n`` and decompresses by extension; it keeps invalid UTF-8 bytes as they are, which the parser then
detects with ``is_valid_utf8`` instead of losing them to replacement characters.
"""

from __future__ import annotations

import glob
import os
import pathlib
import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_retry import contract
from rocketmq_retry.errors import InputError, UserError
from rocketmq_retry.spark_session import local_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from rocketmq_retry.config import Config

# Zones RocketMQ's own patterns fix, whatever the host zone (docs/rocketmq-rules.md §6.1, §12).
FIXED_ZONES = {
    "broker": "Etc/GMT-8",
    "broker-stats": "Etc/GMT-8",
    "rocketmq-client-5x": "Etc/GMT-8",
    "rocketmq-grpc-client": "Etc/GMT-8",
}
_ONE_FILE_PER_SPLIT = str(1 << 40)  # 1 TiB: no file is split and no two files share a partition
_READ_CONF = {
    "spark.sql.files.maxPartitionBytes": _ONE_FILE_PER_SPLIT,
    "spark.sql.files.openCostInBytes": _ONE_FILE_PER_SPLIT,
    # Above 32 paths Spark lists them with a distributed job: a cold job costs more than listing a day's files.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}


# Hadoop's LineRecordReader cap, which Spark's text source passes on as a read option: a longer line is skipped
# with bounded memory instead of being built in the heap (ingest.check finds those lines and the job counts them).
LINE_CAP_OPTION = "mapreduce.input.linerecordreader.line.maxlength"
REFUSED_OUTSIDE_ROOT = "real path leaves the landing root (symbolic link)"


@dataclass(frozen=True)
class Refused:
    """A matched path that is not read: its real path leaves the landing root (a link, or a link above it)."""

    rel: str  # the path as matched under the landing root (never the link's target)
    source: str
    reason: str


@dataclass(frozen=True)
class SourceFile:
    path: str  # absolute path
    rel: str  # path relative to the landing root: ``source_file`` (event_id uses the content's fingerprint)
    source: str  # format name
    timezone: str
    consumer_group: str | None
    instance: str = "."  # the application instance (host) the file belongs to, see ``instance_of``


def instance_of(rel: str, depth: int) -> str:
    """The first ``depth`` folders of a file's path under the landing root: the files of one application
    instance (its log, rotated and .gz siblings, its RocketMQ client log) share them; ``.`` for none."""
    folders = pathlib.PurePosixPath(rel).parts[:-1][:depth]
    return "/".join(folders) or "."


def resolve_files(config: Config, landing: str | os.PathLike[str], ds: str) -> tuple[list[SourceFile], list[str]]:
    """Expand each source's glob under ``landing``; a file matched by two sources is read by the first only.

    Returns the files and notes for the operator (globs that matched nothing, files claimed twice, files refused:
    see ``resolve_inputs``, which also returns those).
    """
    files, notes, _ = resolve_inputs(config, landing, ds)
    return files, notes


def resolve_inputs(
    config: Config, landing: str | os.PathLike[str], ds: str
) -> tuple[list[SourceFile], list[str], list[Refused]]:
    """``resolve_files`` plus the matched paths it refuses.

    A path whose real path is not under the landing root's real path is refused, whatever made it so: a link to
    a file elsewhere, or a link to a directory (a day folder, an instance folder) above it. This runs when the
    job reads the day, so a folder swapped for a link after the sensor saw it is caught here.
    """
    if not config.sources:
        raise UserError(
            "no sources configured: add a `sources:` list to the config (format + path glob under --landing, "
            "see DESIGN §6) or pass --config"
        )
    root = pathlib.Path(landing)
    if not root.is_dir():
        raise InputError(f"landing directory not found: {root}")
    root = root.resolve()
    seen: dict[str, str] = {}
    files: list[SourceFile] = []
    notes: list[str] = []
    refused: list[Refused] = []
    refused_seen: set[str] = set()
    for entry in config.sources:
        pattern = entry.glob_for(ds)
        # the landing root is a path, not a pattern (it may hold '[' or '*')
        matched = sorted(
            p for p in glob.glob(os.path.join(glob.escape(str(root)), pattern), recursive=True) if os.path.isfile(p)
        )
        if not matched:
            notes.append(f"source {entry.format} {pattern!r}: no files")
        zone = FIXED_ZONES.get(entry.format) or entry.timezone or config.timezone
        for p in matched:
            real = pathlib.Path(p).resolve()
            if not real.is_relative_to(root):
                as_matched = os.path.relpath(p, root)
                if as_matched not in refused_seen:
                    refused_seen.add(as_matched)
                    refused.append(Refused(as_matched, entry.format, REFUSED_OUTSIDE_ROOT))
                    notes.append(f"{as_matched}: refused, {REFUSED_OUTSIDE_ROOT}")
                continue
            resolved = str(real)
            if resolved in seen:
                # a specific entry before a catch-all of the same format is the usual layering: say nothing
                if seen[resolved] != entry.format:
                    notes.append(
                        f"{os.path.relpath(resolved, root)}: already read as {seen[resolved]}, not as {entry.format}"
                    )
                continue
            if not os.access(resolved, os.R_OK):
                raise InputError(f"cannot read input file: {resolved}")
            seen[resolved] = entry.format
            rel = os.path.relpath(resolved, root)
            files.append(
                SourceFile(
                    resolved, rel, entry.format, zone, entry.consumer_group, instance_of(rel, entry.instance_depth)
                )
            )
    return files, notes, refused


def _uri_keys(uri: str) -> list[str]:
    """Spark's spellings of a file URI: ``inputFiles()`` has ``file:///p``, ``_metadata.file_path`` ``file:/p``."""
    keys = [uri]
    if uri.startswith("file:///"):
        keys.append("file:/" + uri[len("file:///") :])
    return keys


def _glob_literal(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark expands every path it reads as a glob pattern, so a
    file named ``app[1].log`` or a directory with a backslash would otherwise not be found."""
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def _skip_thresholds(skipped: list[int]) -> list[int] | None:
    """``s_k - k`` for the sorted 1-based skipped line numbers (see ``read_lines``); None for none."""
    return [s - k for k, s in enumerate(sorted(skipped), 1)] or None


def _catalog(spark: SparkSession, rows: list[tuple[str, str, str, str, str | None, list[int] | None]]) -> DataFrame:
    """``path_key, source, source_file, tz, group_hint, gaps`` as a local table: the plan holds the rows, so the
    broadcast is built on the driver."""
    names = ("path_key", "source", "source_file", "tz", "group_hint")
    return local_frame(spark, rows, contract.struct_of([*((n, "string") for n in names), ("gaps", "array<bigint>")]))


def instance_table(
    spark: SparkSession, files: list[SourceFile], fingerprints: dict[str, str] | None = None
) -> DataFrame:
    """``source_file, instance`` of ``files`` as a local table (joined to the few event and binding rows), and
    ``fingerprint`` when ``fingerprints`` (``source_file`` -> ``ingest.check`` fingerprint) is given: the file
    part of ``event_id``, joined here rather than carried on every line read (null for a file not read)."""
    rows: list[tuple[str | None, ...]]
    if fingerprints is None:
        rows, names = [(f.rel, f.instance) for f in files], ("source_file", "instance")
    else:
        rows = [(f.rel, f.instance, fingerprints.get(f.rel)) for f in files]
        names = ("source_file", "instance", "fingerprint")
    return local_frame(spark, rows, contract.struct_of((n, "string") for n in names))


def read_lines(
    spark: SparkSession,
    files: list[SourceFile],
    max_line_bytes: int | None = None,
    skipped: dict[str, list[int]] | None = None,
) -> DataFrame:
    """``source, source_file, line_no (1-based), line, tz, group_hint`` for every line of ``files``.

    ``max_line_bytes``: Hadoop's line cap; a line of that many bytes or more (line end included) is skipped by
    the reader. ``skipped``: per file path, the 1-based numbers of the lines the cap skips (``ingest.check``):
    the lines after them are renumbered so that ``line_no`` stays the line's number in the file.

    Each line finds its file by the URI string Spark itself attaches (``_metadata.file_path``), matched against
    the URIs Spark lists for the read: a hash lookup per line instead of decoding every line's path. A line whose
    URI is in neither form stops the job with the URI in the message rather than being dropped by the join.
    """
    from pyspark.sql import functions as F

    if not files:
        names = ("source", "source_file", "line_no", "line", "tz", "group_hint")
        return local_frame(spark, [], contract.struct_of((n, "bigint" if n == "line_no" else "string") for n in names))
    for key, value in _READ_CONF.items():
        spark.conf.set(key, value)
    reader = spark.read
    if max_line_bytes is not None:
        reader = reader.option(LINE_CAP_OPTION, str(max_line_bytes))
    text = reader.text([_glob_literal(f.path) for f in files])
    by_path = {f.path: f for f in files}
    rows = []
    for uri in text.inputFiles():
        f = by_path.get(urllib.parse.unquote(urllib.parse.urlsplit(uri).path))
        if f is None:
            raise InputError(f"Spark listed an input file that no source names: {uri}")
        gaps = _skip_thresholds((skipped or {}).get(f.path, []))
        rows += [(key, f.source, f.rel, f.timezone, f.consumer_group, gaps) for key in _uri_keys(uri)]
    catalog = _catalog(spark, rows)
    raw = text.select(
        F.col("value").alias("line"),
        F.col("_metadata.file_path").alias("path_key"),
        # one file per partition (see module doc): the low 33 bits count rows within the file
        (F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1)) + 1).alias("row_no"),
    )
    unmatched = F.raise_error(F.concat(F.lit("ingest: no source for input file "), F.col("path_key")))
    # Row r of a file is line r + (lines skipped before it): the k-th skip (1-based line s_k) precedes row r when
    # s_k - k < r. Only the rare file with a skipped line pays for the lambda.
    line_no = F.when(F.col("gaps").isNull(), F.col("row_no")).otherwise(
        F.col("row_no") + F.size(F.filter(F.col("gaps"), lambda g: g < F.col("row_no")))
    )
    return raw.join(F.broadcast(catalog), "path_key", "left").select(
        F.coalesce(F.col("source"), unmatched.cast("string")).alias("source"),
        "source_file",
        line_no.alias("line_no"),
        "line",
        "tz",
        "group_hint",
    )
