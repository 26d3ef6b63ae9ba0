"""Inputs: paths (files, directories, globs), ``-`` (stdin), bytes, file objects, parsed documents.

A byte stream is sniffed once: JSON (one document, or JSON Lines: one document per line), gzip,
or OTLP protobuf (a bare request, or the file exporter's length-prefixed messages).
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Final, TypeAlias, cast

from toolspan.bridge.model import Span
from toolspan.bridge.readers._detect import iter_document
from toolspan.bridge.readers._json_parse import loads_function
from toolspan.bridge.readers._otlp_json import iter_request
from toolspan.bridge.readers._otlp_proto import (
    iter_length_prefixed,
    iter_proto_request,
    looks_length_prefixed,
    read_upto,
)
from toolspan.bridge.readers._report import BridgeReadError, Ctx, ReadReport
from toolspan.bridge.readers._writable import may_hold_surrogates, writable_copy, writable_document

# Files a directory contributes (explicitly named files are read whatever their name).
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".proto", ".bin", ".otlp", ".gz")
_GLOB_CHARS = frozenset("*?[")
_FLUSH_BYTES = 1 << 20
_PROBE = 1 << 16  # bytes sniffed to tell the format
_CHUNK = 1 << 20
_PREVIEW = 16
_BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"
_TEXT_BYTES = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F) + b"\t\n\r"
# The largest single record read (a JSON line, a framed protobuf message, a whole JSON document or
# protobuf request): memory stays bounded whatever the input claims.
MAX_RECORD_BYTES = 256 << 20
NOT_A_TRACE = (
    "not a trace file (expected OTLP JSON or JSON Lines, Jaeger, Tempo or Phoenix JSON, OTLP protobuf, "
    "or gzip of one)"
)

OnBytes = Callable[[int], None]

Source: TypeAlias = (
    "str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | IO[str] | dict[str, Any]"
)
"""One input of the readers: a path, a directory or a glob (``-``: stdin), bytes, a binary or text file
object, or a parsed JSON document."""
Sources: TypeAlias = "Source | Iterable[Source]"
"""One input, or several."""


class _Prepend(io.RawIOBase):
    """A binary stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        super().__init__()
        self._head = head
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(view))
        view[: len(data)] = data
        return len(data)


def _prepend(head: bytes, stream: IO[bytes]) -> IO[bytes]:
    return io.BufferedReader(_Prepend(head, stream), 1 << 16)


# Every JSON document and JSON line toolspan's views write starts with this key (``--indent`` or not, one
# document or an array of them); no trace format the readers take starts with it.
_OUTPUT_START: Final = re.compile(rb'\A\s*\[?\s*\{\s*"schema_version"\s*:')


def is_toolspan_output(path: Path) -> bool:
    """Whether ``path`` is a file toolspan's views wrote (``convert -o``, the timeline exporter, ``audit
    --to json``): in a directory given as input it is skipped, not read as a trace that is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False  # reading it reports the error
    return _OUTPUT_START.match(head) is not None


def resolve_inputs(inputs: list[str | os.PathLike[str]]) -> list[Path | str]:
    """Expand paths: ``-`` stays, a directory gives its trace files recursively (sorted; toolspan's own
    output files in it are left out, see ``is_toolspan_output``), a glob its matches (sorted). A path that
    does not exist and matches nothing raises ``BridgeReadError``."""
    out: list[Path | str] = []
    for item in inputs:
        text = os.fspath(item)
        if text == "-":
            out.append("-")
            continue
        path = Path(text)
        if path.is_dir():
            out.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and not p.name.startswith(".")
                and p.name.lower().endswith(TRACE_SUFFIXES)
                and not is_toolspan_output(p)
            )
        elif path.exists():
            out.append(path)
        elif _GLOB_CHARS.intersection(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise BridgeReadError(f"{text}: no file matches this pattern")
            for m in matches:
                out.extend(resolve_inputs([m]))
        else:
            raise BridgeReadError(f"{text}: no such file or directory")
    return out


def iter_path(
    path: Path | str, lenient: bool, report: ReadReport, on_bytes: OnBytes | None
) -> Iterator[Span]:
    """Spans of one resolved input (a file path or ``-``)."""
    if path == "-":
        yield from iter_stream(sys.stdin.buffer, "<stdin>", lenient, report, on_bytes)
        return
    name = str(path)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, the generator may be abandoned
    except OSError as e:
        raise BridgeReadError(f"{name}: cannot open: {e.strerror or e}") from None
    try:
        yield from iter_stream(f, name, lenient, report, on_bytes)
    except OSError as e:
        raise BridgeReadError(f"{name}: read failed: {e}") from None
    finally:
        f.close()


# Files people pass by mistake, named by their first bytes.
_MAGIC: Final = (
    (
        b"SQLite format 3\0",
        "an SQLite database (toolspan serve's store? read its traces over the server's API)",
    ),
    (b"\x89PNG", "a PNG image"),
    (b"PK\x03\x04", "a zip archive (unzip it first)"),
    (b"%PDF", "a PDF document"),
    (b"\x7fELF", "an executable"),
)
_PREVIEW_TEXT = 40


def _preview(data: bytes) -> str:
    """What the input is, in words a person reads: a known kind of file, its first text, or its first
    bytes in hex (never a Python bytes literal)."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return f"it is {what}"
    if _looks_like_text(data):
        text = data[:_PREVIEW_TEXT].decode("utf-8", "ignore")
        more = "..." if len(data) > _PREVIEW_TEXT else ""
        return f"it starts with the text {json.dumps(text, ensure_ascii=False)}{more}"
    more = "..." if len(data) > _PREVIEW else ""
    return f"it starts with the bytes {data[:_PREVIEW].hex(' ')}{more}"


def _not_a_trace(ctx: Ctx, data: bytes) -> None:
    ctx.fail("", f"{NOT_A_TRACE}; {_preview(data)}")


def _looks_like_text(data: bytes) -> bool:
    """UTF-8 without control bytes but tab, newline and carriage return in the first 256 bytes
    (protobuf has some: field tags and lengths)."""
    sample = data[:256]
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(sample) - 3 or e.reason != "unexpected end of data":
            return False
    return not sample.translate(None, _TEXT_BYTES)


class _Counting(io.RawIOBase):
    """A readable stream counting the bytes read through it (where a decompression error happened)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self._read = getattr(stream, "read1", stream.read)  # at most one step: data before an error
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


def iter_stream(
    stream: IO[bytes], name: str, lenient: bool, report: ReadReport, on_bytes: OnBytes | None = None
) -> Iterator[Span]:
    """Spans of a binary stream of any supported format; anything else is a read error at its byte 0."""
    report.sources_read += 1
    ctx = Ctx(name, lenient, report)
    read1 = getattr(stream, "read1", None) or stream.read
    head = read1(_PROBE)
    if head[:3] == _BOM:
        head = head[3:]
    blank_lines = 0
    while head and not head.lstrip(_WS):  # leading blank lines: counted, not kept
        blank_lines += head.count(b"\n")
        head = read1(_PROBE)
    if not head:
        return  # empty input: no spans
    if head[:2] == b"\x1f\x8b" and not blank_lines:
        report.sources_read -= 1
        yield from _iter_gzip(_prepend(head, stream), ctx, on_bytes)
        return
    if head[:4] == b"\x28\xb5\x2f\xfd":
        ctx.fail("", "zstd-compressed input: decompress it first (zstd -d)")
        return
    body = head.lstrip(_WS)
    if body[:1] in (b"{", b"["):
        blank_lines += head[: len(head) - len(body)].count(b"\n")
        yield from _iter_json(_prepend(body, stream), blank_lines, ctx, on_bytes)
        return
    if blank_lines or len(head) < 5:
        _not_a_trace(ctx, body)
        return
    if _looks_like_text(head):
        _not_a_trace(ctx, body)
        return
    if head[0] == 0x0A:  # field 1 of an ExportTraceServiceRequest: a bare request body
        data = head + read_upto(stream, MAX_RECORD_BYTES + 1 - len(head))
        if on_bytes is not None:
            on_bytes(len(data))
        if len(data) > MAX_RECORD_BYTES:
            ctx.fail("", f"a protobuf request over the {MAX_RECORD_BYTES:,}-byte record limit")
            return
        yield from iter_proto_request(data, ctx)
        return
    if looks_length_prefixed(head, MAX_RECORD_BYTES):
        yield from iter_length_prefixed(_prepend(head, stream), ctx, on_bytes, MAX_RECORD_BYTES)
        return
    _not_a_trace(ctx, head)


def _iter_gzip(stream: IO[bytes], ctx: Ctx, on_bytes: OnBytes | None) -> Iterator[Span]:
    """Spans of gzip-compressed input; corrupt or cut data is a read error (lenient: counted, skipped)."""
    counter = _Counting(cast(IO[bytes], gzip.GzipFile(fileobj=stream, mode="rb")))
    try:
        yield from iter_stream(
            io.BufferedReader(counter, _PROBE), ctx.source, ctx.lenient, ctx.report, on_bytes
        )
    except EOFError:
        ctx.fail("", f"gzip data cut off after {counter.count:,} decompressed bytes")
    except (gzip.BadGzipFile, zlib.error) as e:
        ctx.fail("", f"corrupt gzip data after {counter.count:,} decompressed bytes: {e}")


def _lines_of(stream: IO[bytes], limit: int) -> Iterator[bytes | int]:
    """The lines of ``stream``; a line over ``limit`` bytes is skipped and given as its length."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = stream.readline(_CHUNK)
            if not line:
                break
            size += len(line)
        yield size


def _iter_json(stream: IO[bytes], blank_lines: int, ctx: Ctx, on_bytes: OnBytes | None) -> Iterator[Span]:
    loads = loads_function()
    limit = MAX_RECORD_BYTES
    lineno = blank_lines + 1
    first = stream.readline(limit + 1)
    if len(first) > limit and not first.endswith(b"\n"):  # one huge line: JSON Lines reports it
        yield from _lines(_prepend(first, stream), lineno - 1, ctx, on_bytes)
        return
    try:
        doc = loads(first)
    except (ValueError, RecursionError):
        doc = None
    if doc is None:
        # Not a complete line: a (pretty-printed) single document, or JSON Lines with a bad first line.
        rest = read_upto(stream, limit + 1 - len(first))
        whole = first + rest
        looks_lines = first.endswith(b"\n") and first.rstrip().endswith((b"}", b"]"))
        if len(whole) > limit:
            if looks_lines:
                yield from _lines(_prepend(whole, stream), lineno - 1, ctx, on_bytes)
                return
            ctx.line = lineno
            ctx.fail("", f"a JSON document over the {limit:,}-byte record limit")
            return
        if on_bytes is not None:
            on_bytes(len(whole))
        try:
            doc = loads(whole)
        except (ValueError, RecursionError) as e:
            documents = _concatenated(whole)
            if documents is not None:  # pretty-printed documents one after the other (the SDK's console)
                for line, each in documents:
                    ctx.line = lineno + line
                    yield from iter_document(each, ctx)
                return
            if not (looks_lines and rest.strip()):
                if isinstance(e, json.JSONDecodeError):
                    line = e.lineno + lineno - 1
                    if not whole.endswith(b"\n") and e.pos >= len(whole.rstrip()):
                        ctx.warn("", f"input cut off mid-document (line {line}): {e.msg}", 1)
                        return
                    ctx.fail("", f"invalid JSON at line {line} column {e.colno}: {e.msg}")
                else:
                    ctx.fail("", f"invalid JSON: {e}")
                return
            yield from _lines(io.BytesIO(whole), lineno - 1, ctx, None)
            return
        ctx.line = None
        yield from iter_document(doc, ctx)
        return
    ctx.line = lineno
    if on_bytes is not None:
        on_bytes(len(first))
    yield from _one(doc, ctx)
    yield from _lines(stream, lineno, ctx, on_bytes)


def _concatenated(data: bytes) -> list[tuple[int, Any]] | None:
    """The JSON documents of ``data`` written one after the other (each with the 0-based line it starts
    on), as the OpenTelemetry SDK's ``ConsoleSpanExporter`` prints spans; ``None`` unless all of ``data``
    is two or more JSON objects and whitespace."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    mend = may_hold_surrogates(text)
    found: list[tuple[int, Any]] = []
    at, end, line = 0, len(text), 0
    while True:
        start = at
        while at < end and text[at] in " \t\r\n":
            at += 1
        line += text.count("\n", start, at)
        if at == end:
            return found if len(found) > 1 else None
        if text[at] != "{":
            return None
        try:
            doc, stop = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return None
        found.append((line, writable_document(doc) if mend else doc))
        line += text.count("\n", at, stop)
        at = stop


def _one(doc: Any, ctx: Ctx) -> Iterator[Span]:
    if type(doc) is dict and "resourceSpans" in doc:
        return iter_request(doc, ctx)
    return iter_document(doc, ctx)


def _lines(stream: IO[bytes], lineno: int, ctx: Ctx, on_bytes: OnBytes | None) -> Iterator[Span]:
    """JSON Lines: one document per line; an unterminated, unparsable last line is reported as cut off;
    a line over the record limit is a bad record (skipped unread)."""
    loads = loads_function()
    limit = MAX_RECORD_BYTES
    pending = 0
    for line in _lines_of(stream, limit):
        lineno += 1
        if on_bytes is not None:
            pending += line if isinstance(line, int) else len(line)
            if pending >= _FLUSH_BYTES:
                on_bytes(pending)
                pending = 0
        if isinstance(line, int):
            ctx.line = lineno
            ctx.fail("", f"a line over the {limit:,}-byte record limit ({line:,} bytes)")
            continue
        try:
            doc = loads(line)
        except (ValueError, RecursionError) as e:
            if not line.strip():
                continue
            ctx.line = lineno
            if not line.endswith(b"\n"):
                ctx.warn("", f"last line cut off mid-write: {e}", 1)
            else:
                ctx.fail("", f"invalid JSON: {e}")
            continue
        ctx.line = lineno
        if type(doc) is dict and "resourceSpans" in doc:
            yield from iter_request(doc, ctx)
        else:
            yield from iter_document(doc, ctx)
    if on_bytes is not None and pending:
        on_bytes(pending)


def iter_source(
    source: Any, lenient: bool, report: ReadReport, on_bytes: OnBytes | None = None
) -> Iterator[Span]:
    """Spans of any supported input object."""
    if isinstance(source, (str, os.PathLike)):
        for path in resolve_inputs([source]):
            yield from iter_path(path, lenient, report, on_bytes)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        yield from iter_stream(io.BytesIO(bytes(source)), "<bytes>", lenient, report, on_bytes)
    elif isinstance(source, dict):
        report.sources_read += 1
        yield from iter_document(writable_copy(source), Ctx("<document>", lenient, report))
    elif hasattr(source, "read"):
        name = str(getattr(source, "name", "<stream>"))
        if isinstance(source, io.TextIOBase):
            buffer = getattr(source, "buffer", None)
            stream: IO[bytes] = buffer if buffer is not None else io.BytesIO(source.read().encode("utf-8"))
        else:
            stream = source
        yield from iter_stream(stream, name, lenient, report, on_bytes)
    elif isinstance(source, (list, tuple)):
        for item in source:
            yield from iter_source(item, lenient, report, on_bytes)
    else:
        raise TypeError(f"cannot read spans from {type(source).__name__}")
