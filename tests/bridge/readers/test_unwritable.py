"""Property tests (hypothesis): any text with lone surrogates, and any integer however long, in any field of a
span (its name, its status message, an attribute's key or value, an event's name), read by any reader (an
OTLP/JSON file, with the surrogates as escapes or as their bytes, with orjson or the standard library; the
console exporter's output; in-process SDK spans), makes every view of the registry (``VIEWS``) write strict
UTF-8: the readers write each lone surrogate as the text of its escape and an integer too long for decimal
text as its hex text (issue 35), and the writers stay strict whatever a caller's own span holds."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolspan import semconv
from toolspan.bridge import dumps_document, write_json_lines
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans, read_spans
from toolspan.bridge.views.registry import VIEWS
from toolspan.page import render_html

PROBES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
# Text with lone surrogates somewhere (and plain text, pairs, JSON and Python literal syntax around them).
TEXT = st.lists(
    st.one_of(_LONE, st.text(max_size=6), st.sampled_from(["{'a': '", "'}", '["', '"]', "\U0001f600", "\\"])),
    min_size=1,
    max_size=6,
).map("".join)
HUGE = st.integers(5_000, 30_000).map(lambda digits: 16 ** (digits - 1))  # over the int-to-text limit


def _fields() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "name": TEXT,
            "tool": TEXT,
            "arguments": TEXT,
            "result": TEXT,
            "status": TEXT,
            "key": TEXT,
            "event": TEXT,
        }
    )


def _attrs(f: dict[str, Any]) -> dict[str, Any]:
    return {
        semconv.GEN_AI_OPERATION_NAME: "execute_tool",
        semconv.GEN_AI_TOOL_NAME: f["tool"],
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: f["arguments"],
        semconv.GEN_AI_TOOL_CALL_RESULT: f["result"],
        f["key"]: f["result"],
    }


def _write(view: str, spans: list[Span]) -> bytes:
    built = VIEWS[view].build(spans)
    if VIEWS[view].media == "html":
        return render_html(built).encode("utf-8")
    if VIEWS[view].lines:
        out = io.BytesIO()
        write_json_lines(built, out)
        return out.getvalue()
    return dumps_document(built)


def _strict_views(spans: list[Span], media: tuple[str, ...] = ("json", "html")) -> list[str]:
    """The views of ``media`` that do not come out as strict UTF-8 (and JSON for a JSON view)."""
    failed = []
    for view in (name for name, v in VIEWS.items() if v.media in media):
        try:
            text = _write(view, spans).decode("utf-8")  # strict UTF-8
            if VIEWS[view].media != "html":
                for line in text.split("\n") if VIEWS[view].lines else [text]:
                    if line:
                        json.loads(line)
        except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
            failed.append(view)
    return failed


def _writable(text: str) -> bool:
    """Whether ``text`` encodes as strict UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _otlp(f: dict[str, Any]) -> str:
    span = {
        "traceId": "a" * 32,
        "spanId": "b" * 16,
        "name": f["name"],
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "status": {"code": 2, "message": f["status"]},
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in _attrs(f).items()],
        "events": [{"name": f["event"], "timeUnixNano": "1500"}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})  # lone surrogates as escapes


@PROBES
@given(fields=_fields(), backend=st.sampled_from(["auto", "stdlib"]), raw=st.booleans())
def test_any_lone_surrogate_in_an_otlp_json_file_reaches_every_view_as_writable_text(
    monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], backend: str, raw: bool
) -> None:
    monkeypatch.setenv("TOOLSPAN_JSON", backend)
    text = _otlp(fields)
    # The same surrogates as their bytes (ED A0 80, ...), which json.loads reads with surrogatepass.
    data = json.loads(text) if raw else None
    body = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass") if raw else text.encode()
    spans, _ = read_spans(body)
    for span in spans:
        assert _writable(span.name), span.name
        assert _writable(span.status_message), span.status_message
    assert _strict_views(spans) == []


@PROBES
@given(fields=_fields())
def test_any_lone_surrogate_in_console_exporter_output_reaches_every_view_as_writable_text(
    fields: dict[str, Any],
) -> None:
    doc = {
        "name": fields["name"],
        "context": {"trace_id": "0x" + "a" * 32, "span_id": "0x" + "b" * 16},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2023-11-14T22:13:20.000000Z",
        "end_time": "2023-11-14T22:13:21.000000Z",
        "status": {"status_code": "ERROR", "description": fields["status"]},
        "attributes": _attrs(fields),
        "events": [{"name": fields["event"], "timestamp": "2023-11-14T22:13:20.500000Z", "attributes": {}}],
        "links": [],
        "resource": {"attributes": {}},
    }
    for text in (json.dumps(doc, indent=4), json.dumps(doc, indent=4) + "\n" + json.dumps(doc, indent=4)):
        spans, _ = read_spans(text.encode())
        for span in spans:
            assert _writable(span.name), span.name
            assert _writable(span.status_message), span.status_message
        assert _strict_views(spans) == []


@PROBES
@given(fields=_fields(), number=HUGE)
def test_any_text_and_any_integer_of_an_in_process_span_reach_every_view_writable(
    fields: dict[str, Any], number: int
) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("hostile")
    with tracer.start_as_current_span(fields["name"], attributes={**_attrs(fields), "n": number}) as span:
        span.add_event(fields["event"], {"n": number, fields["key"]: [number, fields["result"]]})
    provider.shutdown()
    spans = from_readable_spans(memory.get_finished_spans())
    assert spans[0].attributes["n"] == hex(number)
    assert _strict_views(spans) == []


@PROBES
@given(fields=_fields(), number=HUGE)
def test_the_writers_stay_strict_whatever_a_callers_own_span_holds(
    fields: dict[str, Any], number: int
) -> None:
    span = Span(
        trace_id="a" * 32,
        span_id="b" * 16,
        parent_span_id=None,
        name=fields["name"],
        start_ns=1000,
        end_ns=2000,
        status="ERROR",
        status_message=fields["status"],
        attributes={**_attrs(fields), "n": number},
    )
    # The JSON writers; the trace page's renderer (``toolspan.page``) is given read spans only.
    assert _strict_views([span], media=("json",)) == []


@pytest.mark.parametrize("code", [0xD800, 0xDBFF, 0xDC00, 0xDFFF])
def test_a_lone_surrogate_of_either_half_is_read_as_the_text_of_its_escape(code: int) -> None:
    surrogate = chr(code)
    # High (D800-DBFF) and low (DC00-DFFF) halves alike, escaped in the JSON text.
    doc = {
        "name": f"step {surrogate}",
        "context": {"trace_id": "0x" + "a" * 32, "span_id": "0x" + "b" * 16},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2023-11-14T22:13:20.000000Z",
        "end_time": "2023-11-14T22:13:21.000000Z",
        "status": {"status_code": "UNSET"},
        "attributes": {},
        "events": [],
        "links": [],
        "resource": {"attributes": {}},
    }
    (span,), _ = read_spans(json.dumps(doc, indent=4).encode())
    assert span.name == f"step \\u{code:04x}"
