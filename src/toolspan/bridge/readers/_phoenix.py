"""Read the span documents of the Arize Phoenix REST API into the neutral model.

Shapes read (as served by Phoenix 20.x; ``phoenix.client`` returns the same span objects):

- ``GET /v1/projects/{project}/spans``: ``{"data": [span...], "next_cursor": ...}`` where a span is
  ``{id, name, context: {trace_id, span_id}, span_kind, parent_id, start_time, end_time, status_code,
  status_message, attributes: {flat dotted keys}, events: [{name, timestamp, attributes}]}``;
  a bare list of those spans, or one span;
- ``GET /v1/projects/{project}/spans/otlpv1``: the same envelope around OTLP-like spans with snake_case
  fields (``trace_id``, ``start_time_unix_nano``, ``attributes: [{key, value: {string_value...}}]``).

What Phoenix keeps, and so what these spans carry: Phoenix stores times as microsecond datetimes (the
ISO times are read exactly; the ``otlpv1`` nanoseconds, which Phoenix derives through a float, are
rounded back to the microsecond it stored). It keeps no span kind (``kind`` is ``UNSPECIFIED``), no links,
no resource and no scope. It moves ``openinference.span.kind`` out of ``attributes`` into ``span_kind``
(put back here unless it is ``UNKNOWN``). It parses the OpenInference attributes that hold JSON text
(``tool.parameters``, ``metadata``, ``llm.prompt_template.variables``) and returns them flattened
(``tool.parameters.city``): they are folded back into one JSON text here. It adds OpenInference
attributes it derives from ``gen_ai.*`` ones (``tool.parameters``, ``tool.id``, ``session.id``,
``llm.input_messages.*`` ...); those are kept as Phoenix returned them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final, NoReturn

from toolspan import semconv as sc
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.readers import _values as v
from toolspan.bridge.readers._report import BridgeReadError, ReadIssue

__all__ = ["looks_like_phoenix", "spans_from_phoenix"]

_UNKNOWN_KIND: Final = "UNKNOWN"
# OpenInference attributes whose value is JSON text, which Phoenix parses and serves flattened.
_JSON_TEXT_KEYS: Final = (sc.OI_TOOL_PARAMETERS, sc.OI_METADATA, sc.OI_PROMPT_TEMPLATE_VARIABLES)
_NS_PER_US: Final = 1000
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ISO: Final = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|z|[+-]\d\d:?\d\d)?"
)
# snake_case AnyValue keys of the otlpv1 shape -> the OTLP JSON names the shared value reader knows.
_ANY_KEYS: Final = {
    "string_value": "stringValue",
    "bool_value": "boolValue",
    "int_value": "intValue",
    "double_value": "doubleValue",
    "bytes_value": "bytesValue",
    "array_value": "arrayValue",
    "kvlist_value": "kvlistValue",
}


def _is_span(item: Any) -> bool:
    if type(item) is not dict:
        return False
    context = item.get("context")
    if type(context) is dict:
        return "span_id" in context and "trace_id" in context and "start_time" in item
    return "span_id" in item and "trace_id" in item and "start_time_unix_nano" in item


def looks_like_phoenix(doc: object) -> bool:
    """Whether a parsed JSON document is a Phoenix span document (envelope, list of spans, or one span)."""
    if type(doc) is list:
        return bool(doc) and all(_is_span(item) for item in doc)
    if type(doc) is not dict:
        return False
    data = doc.get("data")
    if type(data) is list:
        if not data:
            return "next_cursor" in doc
        return all(_is_span(item) for item in data)
    if set(doc) == {"detail"}:  # a Phoenix (FastAPI) error response
        return True
    return _is_span(doc)


def spans_from_phoenix(doc: object, *, origin: str = "") -> list[Span]:
    """The spans of a Phoenix span document; ``BridgeReadError`` names the JSON path of a bad field."""
    if type(doc) is dict and set(doc) == {"detail"}:
        _fail(origin, "detail", f"Phoenix returned an error instead of spans: {v._short(doc['detail'])}")
    if type(doc) is list:
        items: Any = doc
        path = "[{}]"
    elif type(doc) is dict and "data" in doc:
        items = doc["data"]
        path = "data[{}]"
        if type(items) is not list:
            _fail(origin, "data", f"not a list: {v._short(items)}")
    else:
        items = [doc]
        path = ""
    out: list[Span] = []
    for i, item in enumerate(items):
        try:
            out.append(_span(item, origin))
        except v.FieldError as e:
            _fail(origin, _join(path.format(i), e.path), e.message)
    return out


def _fail(origin: str, path: str, message: str) -> NoReturn:
    issue = ReadIssue(origin or "<phoenix>", None, path, message)
    raise BridgeReadError(str(issue), issue)


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def _at(path: str, conv: Any, value: Any) -> Any:
    """``conv(value)``, with a ``FieldError`` re-rooted under ``path``."""
    try:
        return conv(value)
    except v.FieldError as e:
        raise v.FieldError(_join(path, e.path), e.message) from None


def _span(raw: Any, origin: str) -> Span:
    if type(raw) is not dict:
        raise v.FieldError("", f"not a span object: {v._short(raw)}")
    if type(raw.get("context")) is dict or "start_time" in raw:
        return _rest_span(raw, origin)
    return _otlp_span(raw, origin)


# --- GET /v1/projects/{project}/spans -------------------------------------------------------------


def _rest_span(raw: dict[str, Any], origin: str) -> Span:
    context = raw.get("context")
    if type(context) is not dict:
        raise v.FieldError("context", f"not an object: {v._short(context)}")
    tid = _at("context.trace_id", v.trace_id, context.get("trace_id"))
    sid = _at("context.span_id", v.span_id, context.get("span_id"))
    parent = _at("parent_id", v.parent_id, raw.get("parent_id"))
    name = _string(raw, "name")
    start = _at("start_time", _iso_ns, raw.get("start_time"))
    end_raw = raw.get("end_time")
    end = None if end_raw is None else _at("end_time", lambda e: v.not_before(_iso_ns(e), start), end_raw)
    code = raw.get("status_code") or "UNSET"
    status = v.STATUSES.get(code) if type(code) is str else None
    if status is None:
        raise v.FieldError("status_code", f"unknown status code: {v._short(code)}")
    message = raw.get("status_message") or ""
    if type(message) is not str:
        raise v.FieldError("status_message", f"not a string: {v._short(message)}")
    attrs = _at("attributes", _flat_attributes, raw.get("attributes"))
    _fold_json_text(attrs)
    kind = raw.get("span_kind")
    if kind is not None and type(kind) is not str:
        raise v.FieldError("span_kind", f"not a string: {v._short(kind)}")
    if kind and kind != _UNKNOWN_KIND and sc.OPENINFERENCE_SPAN_KIND not in attrs:
        attrs[sc.OPENINFERENCE_SPAN_KIND] = kind
    events_raw = raw.get("events")
    if events_raw is None:
        events_raw = []
    if type(events_raw) is not list:
        raise v.FieldError("events", f"not a list: {v._short(events_raw)}")
    events = tuple(_at(f"events[{i}]", _rest_event, e) for i, e in enumerate(events_raw))
    return Span(
        trace_id=tid,
        span_id=sid,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=end,
        kind="UNSPECIFIED",
        status=status,
        status_message=message,
        attributes=attrs,
        events=events,
        origin=origin,
    )


def _rest_event(raw: Any) -> SpanEvent:
    if type(raw) is not dict:
        raise v.FieldError("", f"not an event object: {v._short(raw)}")
    return SpanEvent(
        name=_string(raw, "name"),
        time_ns=_at("timestamp", _iso_ns, raw.get("timestamp")),
        attributes=_at("attributes", _flat_attributes, raw.get("attributes")),
    )


def _string(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise v.FieldError(key, f"not a string: {v._short(value)}")
    return value


def _iso_ns(value: Any) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (no offset means UTC), to the digit given."""
    m = _ISO.fullmatch(value) if type(value) is str else None
    if m is None:
        raise v.FieldError("", f"not an ISO 8601 time: {v._short(value)}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, offset = m.group(7) or "", m.group(8) or ""
    try:
        when = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        raise v.FieldError("", f"not an ISO 8601 time: {v._short(value)}") from None
    seconds = (when - _EPOCH) // timedelta(seconds=1)
    if offset and offset not in "Zz":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return v.in_range(seconds * 1_000_000_000 + int(fraction.ljust(9, "0") or 0))


def _flat_attributes(value: Any) -> dict[str, Any]:
    """Phoenix's flat ``{dotted.key: value}`` attributes; a nested object is flattened the same way."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise v.FieldError("", f"not an object: {v._short(value)}")
    out: dict[str, Any] = {}
    _flatten("", value, out)
    return out


def _flatten(prefix: str, value: Mapping[Any, Any], out: dict[str, Any]) -> None:
    for key, item in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if type(item) is dict:
            _flatten(name, item, out)
        else:
            out[name] = item


def _fold_json_text(attrs: dict[str, Any]) -> None:
    """Put Phoenix's parsed-and-flattened JSON text attributes back as one JSON text each, in place."""
    for key in _JSON_TEXT_KEYS:
        prefix = key + "."
        nested = [k for k in attrs if k.startswith(prefix)]
        if nested and key not in attrs:
            tree: dict[str, Any] = {}
            for name in nested:
                *parents, leaf = name[len(prefix) :].split(".")
                node = tree
                for part in parents:
                    child = node.setdefault(part, {})
                    if type(child) is not dict:
                        break
                    node = child
                else:
                    node[leaf] = attrs.pop(name)
            attrs[key] = json.dumps(_lists(tree), ensure_ascii=False)
        elif type(attrs.get(key)) in (dict, list):
            attrs[key] = json.dumps(attrs[key], ensure_ascii=False)


def _lists(value: Any) -> Any:
    """Objects keyed ``"0"``, ``"1"``... (Phoenix's flattened lists of objects) back to lists."""
    if type(value) is not dict:
        return value
    items = {k: _lists(v) for k, v in value.items()}
    if items and all(k == str(i) for i, k in enumerate(items)):
        return list(items.values())
    return items


# --- GET /v1/projects/{project}/spans/otlpv1 ---------------------------------------------------------


def _otlp_span(raw: dict[str, Any], origin: str) -> Span:
    tid = _at("trace_id", v.trace_id, raw.get("trace_id"))
    sid = _at("span_id", v.span_id, raw.get("span_id"))
    parent = _at("parent_span_id", v.parent_id, raw.get("parent_span_id"))
    start = _at("start_time_unix_nano", _stored_ns, raw.get("start_time_unix_nano"))
    end_raw = raw.get("end_time_unix_nano")
    if end_raw in (None, 0, "0"):
        end = None
    else:
        end = _at("end_time_unix_nano", lambda e: v.not_before(_stored_ns(e), start), end_raw)
    status, message = _at("status", v.status, raw.get("status"))
    events_raw = raw.get("events")
    if events_raw is None:
        events_raw = []
    if type(events_raw) is not list:
        raise v.FieldError("events", f"not a list: {v._short(events_raw)}")
    events = tuple(_at(f"events[{i}]", _otlp_event, e) for i, e in enumerate(events_raw))
    attrs = _at("attributes", _otlp_attributes, raw.get("attributes"))
    _fold_json_text(attrs)
    return Span(
        trace_id=tid,
        span_id=sid,
        parent_span_id=parent,
        name=_string(raw, "name"),
        start_ns=start,
        end_ns=end,
        # Phoenix keeps no span kind; this endpoint reports SPAN_KIND_INTERNAL for every span.
        kind="UNSPECIFIED",
        status=status,
        status_message=message,
        attributes=attrs,
        events=events,
        origin=origin,
    )


def _otlp_event(raw: Any) -> SpanEvent:
    if type(raw) is not dict:
        raise v.FieldError("", f"not an event object: {v._short(raw)}")
    return SpanEvent(
        name=_string(raw, "name"),
        time_ns=_at("time_unix_nano", _stored_ns, raw.get("time_unix_nano")),
        attributes=_at("attributes", _otlp_attributes, raw.get("attributes")),
    )


def _stored_ns(value: Any) -> int:
    """Nanoseconds Phoenix computed as ``int(datetime.timestamp() * 1e9)``, back on its microsecond."""
    if type(value) is float and value.is_integer():
        value = int(value)
    ns = v.nanos(value)
    return (ns + _NS_PER_US // 2) // _NS_PER_US * _NS_PER_US


def _otlp_attributes(items: Any) -> dict[str, Any]:
    if items is None:
        return {}
    if type(items) is not list:
        raise v.FieldError("", f"not a list: {v._short(items)}")
    converted = []
    for i, kv in enumerate(items):
        if type(kv) is not dict:
            raise v.FieldError(f"[{i}]", f"not a key/value object: {v._short(kv)}")
        converted.append({"key": kv.get("key"), "value": _any_json(kv.get("value"))})
    return dict(v.attributes(converted))


def _any_json(value: Any) -> Any:
    """A snake_case AnyValue with null members (as Phoenix serialises it) as an OTLP JSON AnyValue."""
    if type(value) is not dict:
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None:
            continue
        name = _ANY_KEYS.get(key, str(key))
        values = item.get("values") if type(item) is dict else None
        if name == "arrayValue" and type(values) is list:
            out[name] = {"values": [_any_json(x) for x in values]}
        elif name == "kvlistValue" and type(values) is list:
            out[name] = {"values": [_kv_json(x) for x in values]}
        else:
            out[name] = item
    return out


def _kv_json(kv: Any) -> Any:
    if type(kv) is not dict:
        return kv
    return {"key": kv.get("key"), "value": _any_json(kv.get("value"))}
