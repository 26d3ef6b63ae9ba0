"""Recognise a parsed JSON document and hand it to the reader of its format."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from toolspan.bridge.model import Span
from toolspan.bridge.readers._console import iter_console_span, looks_like_console_span
from toolspan.bridge.readers._jaeger import from_jaeger, iter_envelope, iter_trace
from toolspan.bridge.readers._otlp_json import iter_request
from toolspan.bridge.readers._report import BridgeReadError, Ctx, join
from toolspan.bridge.readers._values import _short

_phoenix_cache: list[ModuleType | None] = []


def _phoenix() -> ModuleType | None:
    """The Arize Phoenix reader module if it is installed in this package (imported lazily)."""
    if not _phoenix_cache:
        try:
            _phoenix_cache.append(importlib.import_module("toolspan.bridge.readers._phoenix"))
        except ImportError:
            _phoenix_cache.append(None)
    return _phoenix_cache[0]


def _camel(value: Any) -> Any:
    """Proto field names (``resource_spans``) to the lowerCamelCase JSON names (``resourceSpans``)."""
    if type(value) is list:
        return [_camel(v) for v in value]
    if type(value) is not dict:
        return value
    out = {}
    for key, v in value.items():
        name = key
        if type(key) is str and "_" in key:
            head, *rest = key.split("_")
            name = head + "".join(part[:1].upper() + part[1:] for part in rest)
        out[name] = _camel(v)
    return out


def describe(doc: Any) -> str:
    """A short name of the format of a parsed document (for messages and tests)."""
    if type(doc) is list:
        return "Phoenix" if _is_phoenix(doc) else "JSON array"
    if type(doc) is not dict:
        return "not a JSON object"
    if "resourceSpans" in doc:
        return "OTLP JSON"
    if "batches" in doc:
        return "Tempo v1"
    if type(doc.get("result")) is dict:
        return "Jaeger v3"
    if type(doc.get("trace")) is dict:
        return "Tempo v2"
    if "data" in doc:
        return "Phoenix" if _is_phoenix(doc) else "Jaeger v1 envelope"
    if "spans" in doc and ("traceID" in doc or "processes" in doc):
        return "Jaeger v1 trace"
    if "resource_spans" in doc:
        return "OTLP JSON (proto field names)"
    if looks_like_console_span(doc):
        return "OpenTelemetry SDK console"
    return "Phoenix" if _is_phoenix(doc) else "unknown"


def _is_phoenix(doc: Any) -> bool:
    mod = _phoenix()
    return mod is not None and bool(mod.looks_like_phoenix(doc))


def _iter_phoenix(doc: Any, ctx: Ctx, prefix: str) -> Iterator[Span]:
    """Phoenix spans; in lenient mode span by span, so one bad span costs only itself."""
    mod = _phoenix()
    assert mod is not None
    if ctx.lenient and type(doc.get("data") if type(doc) is dict else doc) is list:
        items = doc["data"] if type(doc) is dict else doc
        where = "data" if type(doc) is dict else ""
        for i, item in enumerate(items):
            try:
                spans = mod.spans_from_phoenix(item, origin=ctx.origin)
            except BridgeReadError as e:
                path = join(join(prefix, f"{where}[{i}]"), e.issue.field if e.issue else "")
                ctx.fail(path, e.issue.message if e.issue else str(e))
                continue
            yield from spans
        return
    try:
        spans = mod.spans_from_phoenix(doc, origin=ctx.origin)
    except BridgeReadError as e:
        ctx.fail(join(prefix, e.issue.field if e.issue else ""), e.issue.message if e.issue else str(e))
        return
    yield from spans


def iter_document(doc: Any, ctx: Ctx, prefix: str = "") -> Iterator[Span]:
    """Spans of any supported parsed document; unknown documents are a read error."""
    if type(doc) is dict and "resourceSpans" in doc:
        yield from iter_request(doc, ctx, prefix)
        return
    if type(doc) is list:
        if _is_phoenix(doc):
            yield from _iter_phoenix(doc, ctx, prefix)
            return
        for i, item in enumerate(doc):
            yield from iter_document(item, ctx, join(prefix, f"[{i}]"))
        return
    if type(doc) is not dict:
        ctx.fail(prefix, f"not a JSON object: {_short(doc)}")
        return
    if "batches" in doc:
        yield from iter_request(doc, ctx, prefix)
    elif type(doc.get("result")) is dict:  # Jaeger API v3: what Jaeger changed undone where it can be
        for span in iter_document(doc["result"], ctx, join(prefix, "result")):
            yield from_jaeger(span)
    elif type(doc.get("trace")) is dict:
        yield from _tempo_v2(doc, ctx, prefix)
    elif "data" in doc and not _is_phoenix(doc):
        yield from iter_envelope(doc, ctx, prefix)
    elif type(doc.get("spans")) is list and ("traceID" in doc or "processes" in doc):
        yield from iter_trace(doc, ctx, prefix)
    elif "resource_spans" in doc:
        yield from iter_document(_camel(doc), ctx, prefix)
    elif looks_like_console_span(doc):
        yield from iter_console_span(doc, ctx, prefix)
    elif "error" in doc and len(doc) <= 2:
        err = doc["error"]
        msg = err.get("message", err) if type(err) is dict else err
        ctx.fail(join(prefix, "error"), f"the server returned an error instead of a trace: {_short(msg)}")
    elif not doc:
        return
    elif _is_phoenix(doc):
        yield from _iter_phoenix(doc, ctx, prefix)
    else:
        keys = ", ".join(sorted(str(k) for k in doc)[:6])
        ctx.fail(prefix, f"not a trace document of a known format (keys: {keys})")


def _tempo_v2(doc: dict[str, Any], ctx: Ctx, prefix: str) -> Iterator[Span]:
    status = doc.get("status")
    partial = status in ("PARTIAL", 1)
    trace_ids: set[str] = set()
    for span in iter_document(doc["trace"], ctx, join(prefix, "trace")):
        if partial:
            trace_ids.add(span.trace_id)
        yield span
    if partial:
        message = doc.get("message") or "the backend returned a partial trace"
        ids = sorted(trace_ids)
        ctx.report.partial_traces.extend(ids)
        ctx.warn(join(prefix, "status"), f"PARTIAL trace {', '.join(ids) or '(no spans)'}: {message}")
