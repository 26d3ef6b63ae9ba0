"""What a trace backend loses or changes in a span, measured: ``losses(sent, got)`` compares the spans an
application sent (the Collector's file export of the same run) with what a backend gives back, field by
field, and counts every difference under a named kind. ``jaeger_v1(span)`` is the documented rule of
Jaeger's query API v1 (``/api/traces/{id}``), applied to a sent span: what the tests expect back from it.

Jaeger API v1 (the Jaeger JSON model, as Jaeger v2.12 translates OTLP into it):
- times are whole microseconds: ``startTime`` = start // 1000, ``duration`` = (end - start) // 1000, so
  the end read back is start_us + duration_us (up to 1 us before the real end); event times // 1000;
- an array or map attribute (span, event or resource) becomes its JSON text (a string tag);
- a link keeps its trace and span id only: its attributes become ``opentracing.ref_type``
  (``follows_from``, or ``child_of`` when the link said so), and a same-trace link of a root span is
  read as its parent (the Jaeger model's parent is a reference).
API v3 (``/api/v3/traces/{id}``, OTLP JSON) gives back what was sent, but for one field neither API keeps
(measured on Jaeger v2.12's memory store): the instrumentation scope's schema URL (``schemaUrl``, which
toolspan's tracer sets to the semantic conventions it follows) comes back empty. ``jaeger_v3(span)`` is that
rule; ``jaeger_v1`` applies it too.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from toolspan.bridge.model import Span, SpanEvent, SpanLink

REF_TYPE = "opentracing.ref_type"
SUB_US = "sub-microsecond times"
ARRAYS = "array and map attributes (as JSON text)"
LINK_ATTRS = "link attributes"
MISSING = "spans missing"
EXTRA = "spans added"
SCHEMA_URL = "the scope's schema URL"
OTHER = "other fields"


def _text(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)  # Go's encoding
    return value


def _texts(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _text(v) for k, v in attrs.items()}


def jaeger_v3(span: Span) -> Span:
    """``span`` as Jaeger's API v3 gives it back: all of it but its scope's schema URL."""
    return dataclasses.replace(span, scope_schema_url="")


def jaeger_v1(span: Span) -> Span:
    """``span`` as Jaeger's API v1 gives it back (the rule of the module docstring)."""
    start_us = span.start_ns // 1000
    end = None if span.end_ns is None else (start_us + (span.end_ns - span.start_ns) // 1000) * 1000
    links = [SpanLink(ln.trace_id, ln.span_id, {REF_TYPE: _ref_type(ln)}) for ln in span.links]
    parent = span.parent_span_id
    if parent is None:
        same = [i for i, ln in enumerate(links) if ln.trace_id == span.trace_id]
        if same:
            parent = links.pop(same[0]).span_id
    return dataclasses.replace(
        span,
        parent_span_id=parent,
        start_ns=start_us * 1000,
        end_ns=end,
        attributes=_texts(span.attributes),
        events=tuple(SpanEvent(e.name, e.time_ns // 1000 * 1000, _texts(e.attributes)) for e in span.events),
        links=tuple(links),
        resource=_texts(span.resource),
        origin="",
        scope_schema_url="",
    )


def _ref_type(link: SpanLink) -> str:
    return "child_of" if link.attributes.get(REF_TYPE) == "child_of" else "follows_from"


def _kinds(sent: Span, got: Span) -> set[str]:
    found: set[str] = set()
    for field in dataclasses.fields(Span):
        if field.name == "origin":
            continue
        a, b = getattr(sent, field.name), getattr(got, field.name)
        if a == b:
            continue
        if field.name in ("start_ns", "end_ns"):
            found.add(
                SUB_US if a is not None and b is not None and a // 1000 - b // 1000 in (0, 1) else OTHER
            )
        elif field.name in ("attributes", "resource"):
            found.add(ARRAYS if _texts(a) == b else OTHER)
        elif field.name == "events":
            found |= _event_kinds(a, b)
        elif field.name == "scope_schema_url":
            found.add(SCHEMA_URL if b == "" else OTHER)
        elif field.name == "links":
            same_ids = [(ln.trace_id, ln.span_id) for ln in a] == [(ln.trace_id, ln.span_id) for ln in b]
            found.add(LINK_ATTRS if same_ids else OTHER)
        else:
            found.add(OTHER)
    return found


def _event_kinds(sent: tuple[SpanEvent, ...], got: tuple[SpanEvent, ...]) -> set[str]:
    if [e.name for e in sent] != [e.name for e in got]:
        return {OTHER}
    found: set[str] = set()
    for a, b in zip(sent, got, strict=True):
        if a.time_ns != b.time_ns:
            found.add(SUB_US if a.time_ns // 1000 == b.time_ns // 1000 else OTHER)
        if a.attributes != b.attributes:
            found.add(ARRAYS if _texts(a.attributes) == b.attributes else OTHER)
    return found


def losses(sent: Iterable[Span], got: Iterable[Span]) -> dict[str, int]:
    """How many spans show each kind of difference between ``sent`` and ``got`` (empty: nothing lost)."""
    # A span's pending record (no end) and its ended record share ids: told apart by the end.
    by_id = {(s.trace_id, s.span_id, s.end_ns is None): s for s in sent}
    back = {(s.trace_id, s.span_id, s.end_ns is None): s for s in got}
    counts: Counter[str] = Counter()
    counts[MISSING] = len(by_id.keys() - back.keys())
    counts[EXTRA] = len(back.keys() - by_id.keys())
    for key in by_id.keys() & back.keys():
        counts.update(_kinds(by_id[key], back[key]))
    return {k: v for k, v in sorted(counts.items()) if v}
