"""Late files: re-ingesting a date parses only the files that are new or changed since its last commit.

A host's logs often land after its date ran (a collector that was down). Re-running the date then reuses, for every
file whose content is unchanged, the rows the last run wrote for it (``events``, ``quarantine``, ``ingest_report``
and ``bindings`` are all keyed by ``source_file``), parses only the new and changed files, and drops the rows of
files no longer in the landing. The outputs are those of a full run (docs/ingest.md "Late files").

Why reuse is safe, file by file: every step of the parse is a function of one file's lines (the screen is per line,
continuation lines, traces and the L-P1 pairing are windows partitioned by ``source_file``, and a continuation line
before a file's first head line is quarantined rather than joined to another file's last record); ``event_id`` is
made of the file's instance and first-line fingerprint, the line number, the record index and the line's own text
(``parse.event_id_of``), none of which depends on another file or on the order files are read in. The one step that
looks across files is the de-duplication of the same content read twice (``parse.shared_fingerprints``): a file
whose instance and fingerprint another file shares, in this run or the last, is parsed again with its partners.

What is compared (``InputManifest``, committed with the four tables as ``ingest_report/dt=D/_inputs.json``):

* per file: its path under the landing, format, zone, configured group, instance, size and the SHA-256 of its bytes
  as stored. The whole content is hashed, not its size or mtime: a collector that copies with ``rsync -a`` keeps a
  file's mtime, and a file rewritten in place may keep its size. With SHA instructions (x86 SHA-NI, ARMv8) OpenSSL
  hashes at 1-2 GB/s, so the pass costs ~1 s per 1.5 GB of stored logs;
* ``parse_key``: a hash of the parser's code (``jobs/ingest``, ``logformats``, ``contract.py``), the Spark version
  and the parts of the config ingest reads (``timezone``, ``sources``, ``ingest``, ``causes.framework_packages``):
  any change there parses every file again.

The content is hashed before the file is checked and read: a file that grows while it is read is stored with the
hash of its older content, so the next run sees it changed and parses it again (never the reverse).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rocketmq_retry.warehouse.partition_fs import parse_json, resolve

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from rocketmq_retry.config import Config
    from rocketmq_retry.jobs.ingest.read import SourceFile

# Bumped when the manifest's meaning changes; a manifest of another version is not reused.
MANIFEST_VERSION = 1
MANIFEST_FILE = "_inputs.json"  # in ingest_report/dt=D: committed with the tables, invisible to Parquet readers
MANIFEST_TABLE = "ingest_report"
# The config sections ingest reads (tests/test_ingest_late_files.py holds the job to them).
CONFIG_KEYS = ("timezone", "sources", "ingest", "causes.framework_packages")
# The packages whose code decides what a line becomes, relative to the rocketmq_retry package.
_CODE = ("jobs/ingest", "logformats", "contract.py")
_CHUNK = 8 << 20


@dataclass(frozen=True)
class FileEntry:
    """One landing file as the manifest records it."""

    source_file: str
    source: str
    timezone: str
    consumer_group: str | None
    instance: str
    size: int
    sha256: str
    fingerprint: str | None  # ingest.check's first-line fingerprint (the file part of event_id); None if not read
    status: str  # read | quarantined (a damaged file, quarantined whole)

    def same_input(self, other: FileEntry) -> bool:
        return (self.source_file, self.source, self.timezone, self.consumer_group, self.instance, self.sha256) == (
            other.source_file,
            other.source,
            other.timezone,
            other.consumer_group,
            other.instance,
            other.sha256,
        )


@dataclass(frozen=True)
class InputManifest:
    parse_key: str
    files: dict[str, FileEntry]  # by source_file
    refused: tuple[str, ...] = ()
    version: int = MANIFEST_VERSION

    def to_json(self) -> str:
        data = {
            "version": self.version,
            "parse_key": self.parse_key,
            "files": [asdict(f) for _, f in sorted(self.files.items())],
            "refused": sorted(self.refused),
        }
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InputManifest | None:
        if data.get("version") != MANIFEST_VERSION:
            return None
        files = {f["source_file"]: FileEntry(**f) for f in data["files"]}
        return cls(data["parse_key"], files, tuple(data.get("refused", ())))


@dataclass(frozen=True)
class Digest:
    size: int
    sha256: str


def digest_file(path: str) -> Digest | None:
    """Size and SHA-256 of a file's bytes as stored (a ``.gz`` is not expanded: a recompressed file is parsed
    again, which costs time, never correctness). None when it cannot be read: it is then always parsed (and the
    check says why it cannot be read)."""
    try:
        # O_NOFOLLOW as ingest.check: the path was resolved inside the landing root
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    h = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb", buffering=0) as fh:
        try:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)  # releases the GIL for large buffers
                size += len(chunk)
        except OSError:
            return None
    return Digest(size, h.hexdigest())


def digest_files(files: Iterable[SourceFile]) -> dict[str, Digest | None]:
    """``source_file`` -> its digest, every file once."""
    return {f.rel: digest_file(f.path) for f in files}


def _code_digest() -> str:
    """SHA-256 over the parser's modules, read as the interpreter imports them: from the installed package or
    from the zip spark-submit ships (``--py-files``), hence ``importlib.resources`` rather than paths."""
    root = importlib.resources.files("rocketmq_retry")
    h = hashlib.sha256()

    def walk(node: Traversable, name: str) -> None:
        if node.is_dir():
            for child in sorted(node.iterdir(), key=lambda c: c.name):
                walk(child, f"{name}/{child.name}")
        elif name.endswith(".py"):
            h.update(name.encode() + b"\0" + node.read_bytes() + b"\0")

    for part in _CODE:
        node = root
        for piece in part.split("/"):
            node = node.joinpath(piece)
        walk(node, part)
    return h.hexdigest()


def config_part(config: Config) -> dict[str, Any]:
    """The values of ``CONFIG_KEYS`` (a dotted key is one field of a section)."""
    dumped = config.model_dump(mode="json")
    out: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        value: Any = dumped
        for name in key.split("."):
            value = value[name]
        out[key] = value
    return out


def parse_key(config: Config) -> str:
    """What, besides a file's own bytes, decides its rows: the parser's code, Spark's version and the config ingest
    reads. Two runs with equal keys parse an unchanged file to the same rows."""
    import pyspark

    data = {"code": _code_digest(), "spark": pyspark.__version__, "config": config_part(config)}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def manifest_path(partition: Any) -> Any:
    return partition / MANIFEST_FILE


def read_manifest(partition: Any) -> InputManifest | None:
    """The manifest committed in ``partition`` (an ``ingest_report/dt=D``), None if there is none."""
    fs, path = resolve(partition)
    target = manifest_path(path)
    try:
        text = fs.read_text(target)
    except OSError:
        return None
    data = parse_json(target, text)
    return None if data is None else InputManifest.from_json(data)


def write_manifest(partition: Any, manifest: InputManifest) -> None:
    fs, path = resolve(partition)
    fs.write_atomic(manifest_path(path), manifest.to_json())


@dataclass
class Plan:
    """Which files a run parses and which it takes from the last commit."""

    parse: list[SourceFile] = field(default_factory=list)
    reuse: list[str] = field(default_factory=list)  # source_file of the files whose rows are copied
    removed: list[str] = field(default_factory=list)  # files of the last commit no longer in the landing
    why: dict[str, int] = field(default_factory=dict)  # reason -> files parsed for it
    prior: InputManifest | None = None

    def note(self, reason: str) -> None:
        self.why[reason] = self.why.get(reason, 0) + 1

    def summary(self) -> str:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(self.why.items()))
        return (
            f"{len(self.reuse)} file(s) reused, {len(self.parse)} parsed"
            + (f" ({why})" if why else "")
            + (f", {len(self.removed)} removed" if self.removed else "")
        )


NEW, CHANGED, NO_MANIFEST, KEY_CHANGED, SHARED, UNREADABLE, ASKED = (
    "new",
    "changed",
    "no reusable last run",
    "config or parser changed",
    "same first line as another file (de-duplicated together)",
    "not hashed",
    "--reparse",
)


def plan(
    prior: InputManifest | None,
    files: list[SourceFile],
    digests: dict[str, Digest | None],
    key: str,
    reuse: bool = True,
) -> Plan:
    """Sort ``files`` into reused and parsed. The de-duplication partners are settled later (``demote_shared``):
    a new file's fingerprint is only known once it has been checked."""
    out = Plan(prior=prior)
    current = {f.rel for f in files}
    if prior is not None:
        out.removed = sorted(set(prior.files) - current)
    usable = reuse and prior is not None and prior.parse_key == key
    for f in files:
        d = digests.get(f.rel)
        old = prior.files.get(f.rel) if prior is not None else None
        if not reuse:
            out.note(ASKED)
        elif prior is None:
            out.note(NO_MANIFEST)
        elif not usable:
            out.note(KEY_CHANGED)
        elif old is None:
            out.note(NEW)
        elif d is None:
            out.note(UNREADABLE)
        elif not old.same_input(entry(f, d, old.fingerprint, old.status)):
            out.note(CHANGED)
        else:
            out.reuse.append(f.rel)
            continue
        out.parse.append(f)
    return out


def entry(f: SourceFile, d: Digest, fingerprint: str | None, status: str) -> FileEntry:
    return FileEntry(f.rel, f.source, f.timezone, f.consumer_group, f.instance, d.size, d.sha256, fingerprint, status)


def shared_keys(entries: Iterable[tuple[str, str, str | None]]) -> set[str]:
    """Of ``(source_file, instance, fingerprint)``, the files whose instance and fingerprint another one shares."""
    by: dict[tuple[str, str], list[str]] = {}
    for rel, instance, fp in entries:
        if fp:
            by.setdefault((instance, fp), []).append(rel)
    return {rel for rels in by.values() if len(rels) > 1 for rel in rels}


def demote_shared(p: Plan, files: list[SourceFile], fingerprints: dict[str, str]) -> list[SourceFile]:
    """Move to ``parse`` the reused files that share their instance and first-line fingerprint with another file,
    now (``fingerprints`` of the parsed files) or in the last commit: their rows depend on which copy is kept.
    Returns the files moved (they still need their check)."""
    assert p.prior is not None or not p.reuse
    by_rel = {f.rel: f for f in files}
    now = [(f.rel, f.instance, fingerprints.get(f.rel)) for f in p.parse]
    now += [(rel, p.prior.files[rel].instance, p.prior.files[rel].fingerprint) for rel in p.reuse if p.prior]
    before = [(e.source_file, e.instance, e.fingerprint) for e in p.prior.files.values()] if p.prior else []
    hit = shared_keys(now) | shared_keys(before)
    moved = [by_rel[rel] for rel in p.reuse if rel in hit]
    for f in moved:
        p.reuse.remove(f.rel)
        p.parse.append(f)
        p.note(SHARED)
    return moved
