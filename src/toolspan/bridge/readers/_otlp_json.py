"""OTLP JSON ``ExportTraceServiceRequest`` (also Tempo ``batches``, legacy ``instrumentationLibrarySpans``).

The span converter is one straight pass with a ``where`` marker updated before each field, so a
failure names its field without a second validating pass on the hot path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers._report import Ctx, join
from toolspan.bridge.readers._values import (
    HEX as _HEX,
)
from toolspan.bridge.readers._values import (
    KINDS,
    MAX_NS,
    ZERO_SPAN,
    FieldError,
    _short,
    _sub,
    attributes,
    end_nanos,
    in_range,
    kind,
    nanos,
    not_before,
    parent_id,
    span_id,
    status,
    trace_id,
)


def _events(items: Any) -> tuple[SpanEvent, ...]:
    if not items:
        return ()
    out = []
    for i, ev in enumerate(items):
        where = f"[{i}]"
        try:
            name = ev.get("name", "")
            if type(name) is not str:
                where = f"[{i}].name"
                raise FieldError("", f"not a string: {_short(name)}")
            where = f"[{i}].timeUnixNano"
            t = nanos(ev.get("timeUnixNano"))
            where = f"[{i}].attributes"
            attrs = attributes(ev.get("attributes"))
        except FieldError as e:
            raise FieldError(_sub(where, e.path), e.message) from None
        except (AttributeError, TypeError):
            raise FieldError(where, f"not an event object: {_short(ev)}") from None
        out.append(SpanEvent(name, t, attrs))
    return tuple(out)


def _links(items: Any) -> tuple[SpanLink, ...]:
    if not items:
        return ()
    out = []
    for i, ln in enumerate(items):
        where = f"[{i}]"
        try:
            where = f"[{i}].traceId"
            tid = trace_id(ln.get("traceId", ""))
            where = f"[{i}].spanId"
            sid = span_id(ln.get("spanId", ""))
            where = f"[{i}].attributes"
            attrs = attributes(ln.get("attributes"))
        except FieldError as e:
            raise FieldError(_sub(where, e.path), e.message) from None
        except (AttributeError, TypeError):
            raise FieldError(f"[{i}]", f"not a link object: {_short(ln)}") from None
        out.append(SpanLink(tid, sid, attrs))
    return tuple(out)


def span_from_json(raw: Any, resource: dict[str, Any], scope: str, origin: str, schema_url: str = "") -> Span:
    """One OTLP JSON span object as a ``Span``; raises ``FieldError`` naming the bad field.

    Common shapes take inline fast paths; anything else goes through the careful helpers.
    """
    where = ""
    try:
        get = raw.get
        where = "traceId"
        tid = get("traceId", "")
        if tid.__class__ is not str or len(tid) != 32 or tid.strip(_HEX):
            tid = trace_id(tid)
        where = "spanId"
        sid = get("spanId", "")
        if sid.__class__ is not str or len(sid) != 16 or sid.strip(_HEX):
            sid = span_id(sid)
        where = "parentSpanId"
        pid = get("parentSpanId")
        if pid.__class__ is not str or len(pid) != 16 or pid.strip(_HEX) or pid == ZERO_SPAN:
            pid = parent_id(pid)
        where = "name"
        name = get("name", "")
        if name.__class__ is not str:
            raise FieldError("", f"not a string: {_short(name)}")
        where = "startTimeUnixNano"
        start = get("startTimeUnixNano")
        if start is None:
            raise FieldError("", "missing")
        start = int(start) if start.__class__ is str and start.isdigit() else nanos(start)
        if start > MAX_NS:
            in_range(start)
        where = "endTimeUnixNano"
        end = get("endTimeUnixNano")
        end = (int(end) or None) if end.__class__ is str and end.isdigit() else end_nanos(end)
        if end is not None and (end < start or end > MAX_NS):
            not_before(in_range(end), start)
        where = "kind"
        k = get("kind")
        kname = KINDS.get(k) if k.__class__ is int or k.__class__ is str else None
        if kname is None:
            kname = kind(k)
        where = "status"
        st = get("status")
        code, message = status(st) if st else ("UNSET", "")
        where = "attributes"
        attrs = attributes(get("attributes"))
        where = "events"
        events = get("events")
        events = _events(events) if events else ()
        where = "links"
        links = get("links")
        links = _links(links) if links else ()
    except FieldError as e:
        raise FieldError(_sub(where, e.path), e.message) from None
    except (AttributeError, TypeError) as e:
        if where == "":
            raise FieldError("", f"not a span object: {_short(raw)}") from None
        raise FieldError(where, f"malformed: {e}") from None
    return Span(
        tid,
        sid,
        pid,
        name,
        start,
        end,
        kname,
        code,
        message,
        attrs,
        events,
        links,
        resource,
        scope,
        origin,
        schema_url,
    )


def _count(block: Any, keys: tuple[str, ...]) -> int:
    """How many span records a container we cannot read holds (1 if it cannot even be counted)."""
    try:
        n = 0
        for key in keys:
            for scope_block in block.get(key) or ():
                n += len(scope_block.get("spans") or ())
        return max(n, 1)
    except Exception:
        return 1


def iter_request(doc: dict[str, Any], ctx: Ctx, prefix: str = "") -> Iterator[Span]:
    """Spans of one OTLP JSON request (``resourceSpans``, or Tempo's ``batches``)."""
    key = "resourceSpans" if "resourceSpans" in doc else "batches"
    blocks = doc.get(key)
    if blocks is None:
        return
    path = join(prefix, key)
    if type(blocks) is not list:
        ctx.fail(path, f"not a list: {_short(blocks)}")
        return
    origin = ctx.origin
    for r, block in enumerate(blocks):
        rpath = f"{path}[{r}]"
        if type(block) is not dict:
            ctx.fail(rpath, f"not a resource spans object: {_short(block)}")
            continue
        scope_key = "scopeSpans" if "scopeSpans" in block else "instrumentationLibrarySpans"
        try:
            res = block.get("resource")
            if res is None:
                resource: dict[str, Any] = {}
            elif type(res) is dict:
                resource = attributes(res.get("attributes"))
            else:
                raise FieldError("", f"not a resource object: {_short(res)}")
        except FieldError as e:
            ctx.fail(_sub(f"{rpath}.resource.attributes", e.path), e.message, _count(block, (scope_key,)))
            continue
        scopes = block.get(scope_key)
        if scopes is None:
            continue
        if type(scopes) is not list:
            ctx.fail(f"{rpath}.{scope_key}", f"not a list: {_short(scopes)}")
            continue
        scope_name_key = "scope" if scope_key == "scopeSpans" else "instrumentationLibrary"
        for s, sblock in enumerate(scopes):
            spath = f"{rpath}.{scope_key}[{s}]"
            if type(sblock) is not dict:
                ctx.fail(spath, f"not a scope spans object: {_short(sblock)}")
                continue
            sc = sblock.get(scope_name_key)
            scope_name = "" if sc is None or type(sc) is not dict else sc.get("name", "")
            spans = sblock.get("spans")
            if type(scope_name) is not str or (sc is not None and type(sc) is not dict):
                ctx.fail(
                    f"{spath}.{scope_name_key}",
                    f"not a scope object: {_short(sc)}",
                    _count({"x": [sblock]}, ("x",)),
                )
                continue
            if spans is None:
                continue
            if type(spans) is not list:
                ctx.fail(f"{spath}.spans", f"not a list: {_short(spans)}")
                continue
            schema_url = sblock.get("schemaUrl", "")
            if type(schema_url) is not str:
                ctx.fail(f"{spath}.schemaUrl", f"not a string: {_short(schema_url)}", len(spans))
                continue
            for i, raw in enumerate(spans):
                try:
                    span = span_from_json(raw, resource, scope_name, origin, schema_url)
                except FieldError as e:
                    ctx.fail(_sub(f"{spath}.spans[{i}]", e.path), e.message)
                    continue
                yield span
