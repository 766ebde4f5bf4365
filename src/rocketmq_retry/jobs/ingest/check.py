"""Check every input file in Python, in bounded memory, before Spark reads it (docs/ingest.md, "Hostile files").

Spark's text reader cannot survive some files: a gzip member that expands to one 200 MB line builds that line
in the driver's or an executor's heap (``OutOfMemoryError``), and a truncated or non-gzip ``.gz`` fails the
task with an ``IOException`` that fails the whole job. So each file is streamed here first:

* a ``.gz`` file is decompressed member by member with ``zlib`` (its CRC and length trailers checked by zlib),
  stopping past ``max_expanded_bytes``; a file that fails is quarantined as a whole and not given to Spark;
* every file's lines are measured exactly as Hadoop's ``LineRecordReader`` will split them (``\\n``, ``\\r`` and
  ``\\r\\n`` end a line; a UTF-8 byte-order mark at the start is not counted), and the lines that the read cap
  (``mapreduce.input.linerecordreader.line.maxlength``, which Spark's text source takes as a read option) will
  make Hadoop skip are recorded with their line number, byte offset and first bytes. Hadoop skips such a line
  without a trace; the job puts it back as a quarantined line and renumbers the lines after it;
* the file's content fingerprint is taken on the way (``FileCheck.fingerprint``, see ``_FirstLine``): the file
  half of every ``event_id``, so a file keeps its ids when it is renamed, gzipped or collected again.

The scan never iterates line by line in Python: it jumps from one window of ``max_line_bytes`` to the next with
``bytes.rfind``, so a file costs a few C-level searches per megabyte.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO

from rocketmq_retry.jobs.ingest import patterns as P

# A line of this many bytes or more (with its line end) is skipped by the reader and quarantined.
DEFAULT_MAX_LINE_BYTES = P.MAX_LINE_CHARS
# A .gz file that expands to more than this is quarantined unread (a day's rolled client log is well under it).
DEFAULT_MAX_EXPANDED_BYTES = 4 << 30
_CHUNK = 8 << 20  # bytes read or expanded per step: the scan's memory bound
_RAW_BYTES = 4 * P.RAW_CAP  # enough bytes for RAW_CAP characters of UTF-8
_BOM = b"\xef\xbb\xbf"
_CR_TO_LF = bytes.maketrans(b"\r", b"\n")
# Bytes of the first non-blank line that the fingerprint hashes: enough to tell files apart by their first
# timestamped line, bounded for a file that opens with a huge line (event_id also hashes each line's own text).
FINGERPRINT_BYTES = 4096
_CONTENT = re.compile(rb"[^ \t\f\v\r\n]")  # the first byte of a file's content (see _FirstLine)


@dataclass(frozen=True)
class LongLine:
    line_no: int  # 1-based, as the job numbers lines
    byte_offset: int  # of the line's first byte in the (expanded) file
    size: int  # bytes of the line with its line end
    head: bytes  # its first bytes, for quarantine.raw


@dataclass
class FileCheck:
    lines: int = 0  # lines Hadoop's reader sees, skipped ones included
    expanded_bytes: int = 0
    long_lines: list[LongLine] = field(default_factory=list)
    damage: str | None = None  # why the whole file is quarantined
    damage_offset: int | None = None  # byte offset in the file as stored (compressed) where it was found
    fingerprint: str = ""  # 32 hex: the file's identity by content (``_FirstLine``), whatever its path or name


class _FirstLine:
    """The fingerprint of a file's content, taken from the expanded bytes as they stream by: SHA-256 of the file
    from its first non-blank character (a UTF-8 BOM at the start not counted, as Hadoop does not) to the end of
    that line, at most ``FINGERPRINT_BYTES`` of it.

    That line is written once and never changes while the file grows, rotates (``stats.log`` -> ``stats.log.1``
    -> ``.gz``) or is copied into another day's folder, so every collection of a file gets the same fingerprint
    (log shippers, e.g. Vector's ``checksum`` fingerprint, identify a file across renames the same way). Leading
    blank lines are skipped because many files open with one (a stdout log); a file of blank lines only has no
    event whose id would need a fingerprint. Two files that open with the same line (two hosts printing the same
    banner) share a fingerprint: ``event_id`` also hashes each line's own text for that (docs/ingest.md).
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.done = False
        self.at_start = True  # no byte seen yet: a BOM here is not content
        self.in_line = False  # the first non-blank character has been seen

    def feed(self, data: bytes) -> None:
        i = 0
        if self.at_start and data:
            self.at_start = False
            if data.startswith(_BOM):
                i = len(_BOM)
        if not self.in_line:
            m = _CONTENT.search(data, i)  # a regex, not a Python loop: a file may open with a million blank lines
            if m is None:
                return
            self.in_line, i = True, m.start()
        ends = [e for e in (data.find(b"\n", i), data.find(b"\r", i)) if e >= 0]
        j = min(ends, default=len(data))
        self.buf += data[i : min(j, i + FINGERPRINT_BYTES - len(self.buf))]
        self.done = bool(ends) or len(self.buf) >= FINGERPRINT_BYTES

    def digest(self) -> str:
        return hashlib.sha256(bytes(self.buf)).hexdigest()[:32]


class _LineScanner:
    """Feeds on a byte stream in chunks; counts lines and finds the long ones as ``LineRecordReader`` does."""

    def __init__(self, max_line_bytes: int, out: FileCheck) -> None:
        self.cap = max_line_bytes
        self.out = out
        self.offset = 0  # absolute offset of the next byte fed
        self.cur_len = 0  # bytes of the current, unfinished line seen so far (no line end)
        self.cur_start = 0  # absolute offset of the current line
        self.cur_head = b""
        self.in_line = False
        self.pending_cr = False  # the last chunk ended with \r: \r\n or \r alone depends on the next byte
        self.first = _FirstLine()

    def _end(self, term: int) -> None:
        out = self.out
        size = self.cur_len + term
        if out.lines == 0 and self.cur_head.startswith(_BOM):
            size -= len(_BOM)  # LineRecordReader strips the BOM and does not count it
        out.lines += 1
        if size >= self.cap:
            out.long_lines.append(LongLine(out.lines, self.cur_start, size, self.cur_head))
        self.cur_len, self.cur_head, self.in_line = 0, b"", False

    def _extend(self, buf: bytes, i: int, j: int) -> None:
        """Bytes ``buf[i:j]`` (no line end) belong to the current line."""
        if not self.in_line:
            self.in_line, self.cur_start = True, self.offset + i
        if len(self.cur_head) < _RAW_BYTES:
            self.cur_head += buf[i : min(j, i + _RAW_BYTES - len(self.cur_head))]
        self.cur_len += j - i

    def feed(self, buf: bytes) -> None:
        n = len(buf)
        if not n:
            return
        if not self.first.done:
            self.first.feed(buf)
        # Most logs have no \r at all: one memchr tells, and spares the translation and two of _count's three
        # passes over the chunk (the 10 M-line day: 6.9 -> 2.5 s on the driver before Spark reads a line, docs/scale.md)
        crs = b"\r" in buf
        t = buf.translate(_CR_TO_LF) if crs else buf  # every line end is now \n (\r\n is two of them, see _count)
        i = 0
        if self.pending_cr:
            self.pending_cr = False
            if buf[0] == 0x0A:
                i = 1
                self._end(2)
            else:
                self._end(1)
        window = self.cap - 2  # a line that ends inside a window this long is short whatever its line end
        while i < n:
            if not self.in_line and window > 0:
                # Fast path: every line that ends inside [i, i + window) is short; count them all at once.
                r = t.rfind(b"\n", i, min(n, i + window))
                if r >= 0 and buf[r] == 0x0D and r + 1 < n and buf[r + 1] == 0x0A:
                    r += 1
                if r >= 0 and not (buf[r] == 0x0D and r + 1 == n):
                    # (a BOM only makes the first line shorter: a line in the window stays short)
                    self.out.lines += self._count(buf, i, r + 1) if crs else buf.count(b"\n", i, r + 1)
                    i = r + 1
                    continue
            # Slow path, one line: it starts at i (or continues from an earlier chunk) and may be long.
            j = t.find(b"\n", i)
            if j < 0:
                self._extend(buf, i, n)
                break
            self._extend(buf, i, j)
            if buf[j] == 0x0D:
                if j + 1 == n:
                    self.pending_cr = True
                    break
                term = 2 if buf[j + 1] == 0x0A else 1
            else:
                term = 1
            self._end(term)
            i = j + term
        self.offset += n

    @staticmethod
    def _count(buf: bytes, i: int, j: int) -> int:
        """Line ends in ``buf[i:j]``: each \\n, and each \\r not followed by \\n."""
        return buf.count(b"\n", i, j) + buf.count(b"\r", i, j) - buf.count(b"\r\n", i, j)

    def finish(self) -> None:
        if self.pending_cr:
            self.pending_cr = False
            self._end(1)
        elif self.in_line:
            self._end(0)


def check_file(
    path: str,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
    gzip: bool | None = None,
) -> FileCheck:
    """Stream ``path`` once: gzip integrity and expanded size (``.gz`` files), line count, long lines and the
    content fingerprint."""
    out = FileCheck()
    scanner = _LineScanner(max_line_bytes, out)
    is_gz = path.endswith(".gz") if gzip is None else gzip
    # O_NOFOLLOW: the path was resolved and checked inside the landing root; a link swapped in since is refused
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb", buffering=0) as fh:
        if not is_gz:
            while chunk := fh.read(_CHUNK):
                scanner.feed(chunk)
                out.expanded_bytes += len(chunk)
            scanner.finish()
        else:
            _scan_gzip(fh, scanner, out, max_expanded_bytes)
    out.fingerprint = scanner.first.digest()
    return out


def _scan_gzip(fh: BinaryIO, scanner: _LineScanner, out: FileCheck, max_expanded: int) -> None:
    """Every member of a gzip file (``cat a.gz b.gz`` is a valid gzip file, and Hadoop reads all its members)."""
    read_total = 0  # bytes of the stored file read so far: where a damage is reported (to within one chunk)
    d = None
    data = b""
    member = 0
    while True:
        if not data:
            data = fh.read(_CHUNK)
            read_total += len(data)
            if not data:
                break
        if d is None:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip wrapper only: a zlib or raw stream is not gzip
            member += 1
        try:
            while data:
                piece = d.decompress(data, _CHUNK)  # at most _CHUNK expanded bytes at a time
                data = d.unconsumed_tail
                out.expanded_bytes += len(piece)
                if out.expanded_bytes > max_expanded:
                    out.damage = f"gzip file expands past {max_expanded} bytes (ingest.max_expanded_bytes)"
                    out.damage_offset = read_total
                    return
                scanner.feed(piece)
                if d.eof:
                    break
        except zlib.error as exc:
            bad_magic = member == 1 and out.expanded_bytes == 0 and "header" in str(exc)
            out.damage = "not a gzip file" if bad_magic else f"corrupt gzip data in member {member} ({exc})"
            out.damage_offset = read_total
            return
        if d.eof:
            data, d = d.unused_data, None  # the next member starts right after this one's trailer
    if d is not None:
        out.damage = f"truncated gzip file (member {member} ends before its trailer)"
        out.damage_offset = read_total
        return
    scanner.finish()
