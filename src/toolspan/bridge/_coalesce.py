"""Merge and order span records so every view sees the same deterministic input.

Rules for records sharing ``(trace_id, span_id)``:

- one record never ended (``end_ns is None``, e.g. a durable act record written at tool start) and another
  ended: one span, the ended record, with attributes and events of the open record added where the ended one
  lacks them (an act record plus its completion);
- several records never ended and none ended (pending records of a tool still running, refreshed when it
  recorded an approval event): one open span, the record with the most events, with the attributes and
  events of the others added where it lacks them;
- identical records (equal apart from ``origin``): collapsed into one (the one with the smallest origin);
- conflicting records: all kept, in a deterministic order; every record after the first is a *duplicate*
  (``duplicate_flags`` marks it), none is lost.

The result is sorted by ``(start_ns, span_id, origin, trace_id)`` and, for records still equal on that,
by their full content, so any permutation of the input gives the same list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

from toolspan.bridge.model import Span, span_fields

__all__ = ["coalesce", "duplicate_flags", "sort_key"]


def sort_key(span: Span) -> tuple[int, str, str, str]:
    return (span.start_ns, span.span_id, span.origin, span.trace_id)


def _content_key(span: Span) -> str:
    # Total order for records equal on sort_key: their whole content as canonical JSON (trace id, span id
    # and start time left out: the sort key holds them).
    fields = span_fields(span)
    del fields[4]  # start_ns
    del fields[:2]  # trace_id, span_id
    return json.dumps(fields, sort_keys=True, default=repr)


def _same(a: Span, b: Span) -> bool:
    return a == b if a.origin == b.origin else replace(a, origin="") == replace(b, origin="")


def _absorb(first: Span, opened: list[Span]) -> Span:
    """``first`` with the attributes and events of ``opened`` added where it lacks them."""
    attrs: dict[str, Any] = {}
    for span in opened:
        attrs.update(span.attributes)
    attrs.update(first.attributes)
    events = list(first.events)
    for span in opened:
        events.extend(e for e in span.events if e not in events)
    if attrs.keys() == first.attributes.keys() and len(events) == len(first.events):
        return first
    events.sort(key=lambda e: e.time_ns)
    return replace(first, attributes=attrs, events=tuple(events))


def _merge_group(group: list[Span]) -> list[Span]:
    # Collapse identical records (keep the smallest origin).
    group.sort(key=lambda s: (s.origin, _content_key(s)))
    unique: list[Span] = []
    for span in group:
        if not any(_same(span, kept) for kept in unique):
            unique.append(span)
    if len(unique) == 1:
        return unique
    opened = [s for s in unique if s.end_ns is None]
    ended = [s for s in unique if s.end_ns is not None]
    if opened and ended:
        # The first ended record (in a stable order) absorbs every open record: act record + completion.
        ended.sort(key=lambda s: (s.start_ns, s.origin, _content_key(s)))
        return [_absorb(ended[0], opened), *ended[1:]]
    if len(opened) > 1 and len({(s.name, s.start_ns) for s in opened}) == 1:
        # Pending records of one running span: the most advanced one absorbs the others.
        opened.sort(key=lambda s: (-len(s.events), -len(s.attributes), s.origin, _content_key(s)))
        return [_absorb(opened[0], opened[1:])]
    return unique


def coalesce(spans: Iterable[Span]) -> list[Span]:
    """Deduplicate and merge records of the same span, then sort deterministically (see module doc)."""
    by_key: dict[tuple[str, str], Span | list[Span]] = {}
    multi = False
    for span in spans:
        key = (span.trace_id, span.span_id)
        seen = by_key.get(key)
        if seen is None:
            by_key[key] = span
        elif isinstance(seen, list):
            seen.append(span)
        else:
            by_key[key] = [seen, span]
            multi = True
    if not multi:
        result: list[Span] = cast("list[Span]", list(by_key.values()))
    else:
        result = []
        for value in by_key.values():
            if isinstance(value, list):
                result.extend(_merge_group(value))
            else:
                result.append(value)
    result.sort(key=sort_key)
    _break_ties(result)
    return result


def _break_ties(spans: list[Span]) -> None:
    i = 0
    n = len(spans)
    while i < n - 1:
        key = sort_key(spans[i])
        j = i + 1
        while j < n and sort_key(spans[j]) == key:
            j += 1
        if j - i > 1:
            spans[i:j] = sorted(spans[i:j], key=_content_key)
        i = j


def duplicate_flags(spans: Sequence[Span]) -> list[bool]:
    """For a coalesced list: ``True`` for every record whose ``(trace_id, span_id)`` appeared before it."""
    seen: set[tuple[str, str]] = set()
    flags = []
    for span in spans:
        key = (span.trace_id, span.span_id)
        flags.append(key in seen)
        seen.add(key)
    return flags
