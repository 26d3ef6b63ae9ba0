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
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from toolspan.bridge.model import Span
from toolspan.bridge.readers._detect import iter_document
from toolspan.bridge.readers._json import loads_function
from toolspan.bridge.readers._otlp_json import iter_request
from toolspan.bridge.readers._otlp_proto import (
    iter_length_prefixed,
    iter_proto_request,
    looks_length_prefixed,
)
from toolspan.bridge.readers._report import BridgeReadError, Ctx, ReadReport

# Files a directory contributes (explicitly named files are read whatever their name).
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".proto", ".bin", ".otlp", ".gz")
_GLOB_CHARS = frozenset("*?[")
_FLUSH_BYTES = 1 << 20

OnBytes = Callable[[int], None]


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


def resolve_inputs(inputs: list[str | os.PathLike[str]]) -> list[Path | str]:
    """Expand paths: ``-`` stays, a directory gives its trace files recursively (sorted), a glob its
    matches (sorted). A path that does not exist and matches nothing raises ``BridgeReadError``."""
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
                if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(TRACE_SUFFIXES)
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


def iter_stream(
    stream: IO[bytes], name: str, lenient: bool, report: ReadReport, on_bytes: OnBytes | None = None
) -> Iterator[Span]:
    """Spans of a binary stream of any supported format."""
    report.sources_read += 1
    ctx = Ctx(name, lenient, report)
    consumed: list[bytes] = []
    stripped = b""
    while True:
        line = stream.readline()
        if not line:
            break
        consumed.append(line)
        stripped = line.lstrip()
        if stripped:
            break
    head = b"".join(consumed)
    if not head.strip():
        return  # empty input: no spans
    if head[:2] == b"\x1f\x8b":
        gz: IO[bytes] = io.BufferedReader(gzip.GzipFile(fileobj=_prepend(head, stream), mode="rb"))
        report.sources_read -= 1
        yield from iter_stream(gz, name, lenient, report, on_bytes)
        return
    if head[:4] == b"\x28\xb5\x2f\xfd":
        ctx.fail("", "zstd-compressed input: decompress it first (zstd -d)")
        return
    if stripped[:1] in (b"{", b"["):
        yield from _iter_json(stream, consumed, ctx, on_bytes)
        return
    if looks_length_prefixed(head):
        yield from iter_length_prefixed(_prepend(head, stream), ctx, on_bytes)
        return
    data = head + stream.read()
    if on_bytes is not None:
        on_bytes(len(data))
    yield from iter_proto_request(data, ctx)


def _iter_json(
    stream: IO[bytes], consumed: list[bytes], ctx: Ctx, on_bytes: OnBytes | None
) -> Iterator[Span]:
    loads = loads_function()
    lineno = len(consumed)
    first = consumed[-1]
    try:
        doc = loads(first)
    except (ValueError, RecursionError):
        doc = None
    if doc is None:
        # Not a complete line: a (pretty-printed) single document, or JSON Lines with a bad first line.
        rest = stream.read()
        whole = b"".join(consumed) + rest
        if on_bytes is not None:
            on_bytes(len(whole))
        try:
            doc = loads(whole)
        except (ValueError, RecursionError) as e:
            complete = first.rstrip().endswith((b"}", b"]")) and rest.strip()
            if not complete:
                if isinstance(e, json.JSONDecodeError):
                    if not whole.endswith(b"\n") and e.pos >= len(whole.rstrip()):
                        ctx.warn("", f"input cut off mid-document (line {e.lineno}): {e.msg}", 1)
                        return
                    ctx.fail("", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")
                else:
                    ctx.fail("", f"invalid JSON: {e}")
                return
            yield from _lines(io.BytesIO(whole).readlines(), lineno - 1, ctx, None)
            return
        ctx.line = None
        yield from iter_document(doc, ctx)
        return
    ctx.line = lineno
    yield from _one(doc, ctx)
    pending = sum(len(c) for c in consumed)
    yield from _lines(stream, lineno, ctx, on_bytes, pending)


def _one(doc: Any, ctx: Ctx) -> Iterator[Span]:
    if type(doc) is dict and "resourceSpans" in doc:
        return iter_request(doc, ctx)
    return iter_document(doc, ctx)


def _lines(lines: Any, lineno: int, ctx: Ctx, on_bytes: OnBytes | None, pending: int = 0) -> Iterator[Span]:
    """JSON Lines: one document per line; an unterminated, unparsable last line is reported as cut off."""
    loads = loads_function()
    for line in lines:
        lineno += 1
        if on_bytes is not None:
            pending += len(line)
            if pending >= _FLUSH_BYTES:
                on_bytes(pending)
                pending = 0
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
        yield from iter_document(source, Ctx("<document>", lenient, report))
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
