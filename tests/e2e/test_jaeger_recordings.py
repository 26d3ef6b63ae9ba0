"""The recorded Jaeger answers the offline tests read (``tests/fixtures/jaeger/jaeger-<version>-*.json``) are
what the real Jaeger answers today: each recorded trace (``tests.support.formats.JAEGER_RECORDED``) is sent to
Jaeger's OTLP/HTTP receiver as an OTLP JSON request, read back from ``/api/traces/{id}`` and
``/api/v3/traces/{id}`` and compared with its recording. ``TOOLSPAN_RECORD_JAEGER=1`` writes the recordings
instead (after a Jaeger upgrade: rename the files to the new version, in
``tests.support.formats.JAEGER_VERSION`` too)."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import pytest

from tests.e2e.otel_stack import JAEGER_VERSION as BUILT_VERSION
from tests.e2e.otel_stack import Jaeger
from tests.support.formats import JAEGER_RECORDED, JAEGER_VERSION, jaeger_recording, render

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

RECORD = os.environ.get("TOOLSPAN_RECORD_JAEGER") == "1"


def canonical(api: str, doc: Any) -> Any:
    """An answer with what Jaeger orders at random (Go map order) put in one order: v1 spans by id with
    their process in place of its ``processID`` (p1, p2, ... follow that order), and the warnings of the
    records that share a span id (a pending record and its ended one) pooled per span id, since Jaeger
    hangs them on either record; v3 spans by id, each with its resource and scope. Everything else as it
    is."""
    if api == "v1":
        out = []
        for trace in doc["data"]:
            processes = trace["processes"]
            spans = [
                {
                    **{k: v for k, v in s.items() if k not in ("processID", "warnings")},
                    "process": processes[s["processID"]],
                }
                for s in trace["spans"]
            ]
            warnings = sorted((s["spanID"], w) for s in trace["spans"] for w in s.get("warnings") or ())
            out.append(
                {
                    **{k: v for k, v in trace.items() if k not in ("spans", "processes")},
                    "spans": sorted(spans, key=lambda s: json.dumps(s, sort_keys=True)),
                    "span_warnings": warnings,
                }
            )
        return {**doc, "data": out}
    flat = [
        {"resource": rs.get("resource"), "scope": ss.get("scope"), "span": span}
        for rs in doc["result"]["resourceSpans"]
        for ss in rs.get("scopeSpans", [])
        for span in ss.get("spans", [])
    ]
    return sorted(flat, key=lambda s: json.dumps(s, sort_keys=True))


def test_the_recordings_are_labelled_with_the_jaeger_the_tests_build() -> None:
    assert JAEGER_VERSION == BUILT_VERSION
    names = sorted(p.name for p in jaeger_recording("x", "v1").parent.glob("jaeger-*.json"))
    assert names == sorted(
        f"jaeger-{JAEGER_VERSION}-{name}-{api}.json" for name in JAEGER_RECORDED for api in ("v1", "v3")
    )


@pytest.mark.parametrize("name", sorted(JAEGER_RECORDED))
def test_the_real_jaeger_still_answers_as_recorded(jaeger: Jaeger, name: str) -> None:
    spans = JAEGER_RECORDED[name]()
    (trace_id,) = {s.trace_id for s in spans}
    request = urllib.request.Request(
        f"http://127.0.0.1:{jaeger.otlp_http_port}/v1/traces",
        data=render("otlp_json", spans),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    jaeger.wait_for_trace(trace_id, len(spans))
    for api, body in (("v1", jaeger.trace_v1(trace_id)), ("v3", jaeger.trace_v3(trace_id))):
        path = jaeger_recording(name, api)
        if RECORD:
            path.write_text(json.dumps(json.loads(body), indent=1, ensure_ascii=False) + "\n", "utf-8")
        recorded = json.loads(path.read_bytes())
        assert canonical(api, json.loads(body)) == canonical(api, recorded), (
            f"{path.name}: Jaeger answers otherwise"
        )
