"""The inbox names the run of each waiting call as the list of runs names it (``run_name``: what the user
asked, else its root's name), through the ASGI application in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.server.test_control_hostile import waiting_span
from tests.support.asgi import AsgiClient
from toolspan import semconv
from toolspan.bridge.readers import spans_from_document
from toolspan.server import ServerConfig, build_app, open_store

ASKED = "a" * 32  # a run whose agent recorded what was asked
BARE = "c" * 32  # a run of which only the waiting call's record is here


def _agent(trace_id: str, span_id: str, asked: str) -> dict[str, Any]:
    def text(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "invoke_agent treasurer",
        "kind": 1,
        "startTimeUnixNano": "900000000",
        "endTimeUnixNano": "0",
        "attributes": [
            text(semconv.GEN_AI_OPERATION_NAME, semconv.OP_INVOKE_AGENT),
            text(semconv.GEN_AI_AGENT_NAME, "treasurer"),
            text(semconv.OI_INPUT_VALUE, asked),
        ],
    }


def test_an_inbox_entry_names_its_run_as_the_list_of_runs_does(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store.db"))
    try:
        call = waiting_span(ASKED, "b" * 16)
        call["parentSpanId"] = "1" * 16
        spans = [_agent(ASKED, "1" * 16, "Pay the  invoice\nof March."), call, waiting_span(BARE, "d" * 16)]
        doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}
        store.ingest(spans_from_document(doc))
        app, _ = build_app(ServerConfig(db=store.path, parse_workers=0), store)
        with AsgiClient(app) as client:
            waiting = client.request("GET", "/api/control/waiting").json()["waiting"]
            listed = client.request("GET", "/api/traces").json()["traces"]
    finally:
        store.close()
    runs = {entry["trace_id"]: entry["run"] for entry in waiting}
    assert runs == {ASKED: "Pay the invoice of March.", BARE: "transfer"}
    assert runs == {row["trace_id"]: row["name"] for row in listed}
