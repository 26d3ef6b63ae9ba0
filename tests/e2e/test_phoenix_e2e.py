"""End to end: a toolspan app -> OTLP (gRPC or HTTP) -> rotel collector -> Phoenix -> REST API -> bridge.

The app (agent_app.py, run as a subprocess configured only by OTEL_* variables) runs
agent -> tool -> sub-plan -> agent -> tool, a tool called with a model's call id and a failing tool.
It also writes its own spans with toolspan's OTLP JSON file exporter: the in-process truth that what
Phoenix returns is compared with, span by span and then as act/observe events.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans, spans_from_document
from toolspan.bridge.readers._phoenix import spans_from_phoenix
from toolspan.bridge.views import to_events
from toolspan.bridge.views._events import match_observe

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MODEL_CALL_ID = "toolu_e2e_search_1"
# Attributes Phoenix derives from gen_ai.* ones on agent spans (kept by the reader as Phoenix serves them).
AGENT_EXTRA_PREFIXES = ("llm.input_messages.", "llm.output_messages.")


def phoenix_ns(ns: int) -> int:
    """The time Phoenix keeps for ``ns``: it stores ``datetime.fromtimestamp(ns / 1e9)`` (microseconds)."""
    stored = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    return (stored - EPOCH) // timedelta(microseconds=1) * 1000


def at_phoenix_precision(span: Span) -> Span:
    return dataclasses.replace(
        span,
        start_ns=phoenix_ns(span.start_ns),
        end_ns=None if span.end_ns is None else phoenix_ns(span.end_ns),
        events=tuple(dataclasses.replace(e, time_ns=phoenix_ns(e.time_ns)) for e in span.events),
    )


def tool_extras(local: Span) -> dict[str, Any]:
    """What Phoenix adds to a tool span: OpenInference's tool.parameters (and tool.id for a model id)."""
    attrs = local.attributes
    extras: dict[str, Any] = {
        "tool.parameters": json.dumps(json.loads(attrs["gen_ai.tool.call.arguments"]), ensure_ascii=False)
    }
    if "gen_ai.tool.call.id" in attrs:
        extras["tool.id"] = attrs["gen_ai.tool.call.id"]
    return extras


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_tool_spans_arrive_in_phoenix_and_bridge_to_the_same_events(
    protocol: str, rotel: Any, phoenix: Any, e2e: Any, tmp_path: Path, results_dir: Path
) -> None:
    project = f"e2e-{protocol.replace('/', '-')}-{uuid.uuid4().hex[:8]}"
    local_file = tmp_path / "in-process.jsonl"
    env = e2e.app_env(
        rotel.endpoint(protocol),
        protocol,
        project,
        OTEL_TRACES_EXPORTER="otlp,toolspan_otlp_file",
        TOOLSPAN_OTLP_FILE=str(local_file),
    )
    start = time.monotonic()
    out = e2e.run_app(["scenario"], env)
    app_s = time.monotonic() - start
    assert out["results"] == {
        "search": ["opentelemetry result 0", "opentelemetry result 1"],
        "research": "120 words",
        "divide": "ZeroDivisionError: division by zero",
    }

    local, report = read_spans(local_file)
    assert report.issues == []
    assert len(local) == 7
    start = time.monotonic()
    doc = phoenix.wait_for_spans(project, expected=len(local))
    arrival_s = time.monotonic() - start
    remote = spans_from_phoenix(doc, origin=f"phoenix:{project}")
    assert sorted(s.span_id for s in remote) == sorted(s.span_id for s in local)
    assert {s.trace_id for s in remote} == {out["trace_id"]}

    loc = {s.span_id: s for s in local}
    rem = {s.span_id: s for s in remote}
    by_name = {s.name: s.span_id for s in local}
    assert sorted(by_name) == sorted(
        [
            "invoke_agent planner",
            "execute_tool search",
            "execute_tool research",
            "plan deep-dive",
            "invoke_agent reader",
            "execute_tool fetch",
            "execute_tool divide",
        ]
    )
    parent_of = {
        "invoke_agent planner": None,
        "execute_tool search": "invoke_agent planner",
        "execute_tool research": "invoke_agent planner",
        "execute_tool divide": "invoke_agent planner",
        "plan deep-dive": "execute_tool research",  # the sub-plan is a child of its tool span
        "invoke_agent reader": "plan deep-dive",
        "execute_tool fetch": "invoke_agent reader",
    }
    for name, parent in parent_of.items():
        span = rem[by_name[name]]
        assert span.name == name
        assert span.parent_span_id == (None if parent is None else by_name[parent]), name

    tools = [s for s in local if s.name.startswith("execute_tool ")]
    assert len(tools) == 4
    for mine in tools:
        sid = mine.span_id
        theirs = rem[sid]
        attrs = dict(theirs.attributes)
        # Ids: execution_id is the span id; tool_call_id the model's id or call_ + span id.
        assert attrs["toolspan.execution_id"] == "exec_" + sid
        if mine.name == "execute_tool search":
            assert attrs["toolspan.tool_call_id"] == MODEL_CALL_ID
            assert attrs["gen_ai.tool.call.id"] == MODEL_CALL_ID
        else:
            assert attrs["toolspan.tool_call_id"] == "call_" + sid
            assert "gen_ai.tool.call.id" not in attrs
        # Every attribute the app wrote arrived unchanged; Phoenix added only what it derives.
        assert attrs == {**mine.attributes, **tool_extras(mine)}, mine.name
        if mine.name == "execute_tool divide":
            assert (theirs.status, attrs["toolspan.tool.state"]) == ("ERROR", "FAILED")
            assert attrs["error.type"] == "ZeroDivisionError"
            assert [e.name for e in theirs.events] == ["exception"]
        else:
            assert (theirs.status, attrs["toolspan.tool.state"]) == (mine.status, "COMPLETED")
            assert theirs.status != "ERROR"
            assert theirs.events == ()
        assert theirs.status_message == mine.status_message
        assert theirs.events == at_phoenix_precision(mine).events
        assert (theirs.start_ns, theirs.end_ns) == (
            phoenix_ns(mine.start_ns),
            phoenix_ns(mine.end_ns or 0),
        )

    plan = rem[by_name["plan deep-dive"]]
    research = by_name["execute_tool research"]
    assert plan.attributes == loc[plan.span_id].attributes
    assert plan.attributes["toolspan.parent.execution_id"] == "exec_" + research
    assert plan.attributes["toolspan.parent.tool_call_id"] == "call_" + research
    for name in ("invoke_agent planner", "invoke_agent reader"):
        theirs, mine = rem[by_name[name]], loc[by_name[name]]
        extra = {k: v for k, v in theirs.attributes.items() if k not in mine.attributes}
        assert {k: theirs.attributes[k] for k in mine.attributes} == dict(mine.attributes), name
        derived = {k for k in extra if not k.startswith(AGENT_EXTRA_PREFIXES)}
        assert derived == ({"session.id"} if "gen_ai.conversation.id" in mine.attributes else set()), name
        assert theirs.events == at_phoenix_precision(mine).events

    # The bridge: the same act/observe events from Phoenix's answer as from the in-process spans.
    events = to_events(remote)
    assert events == to_events([at_phoenix_precision(s) for s in local])
    assert to_events(spans_from_document(doc)) == events  # what `toolspan convert` auto-detects
    assert [(e["type"], e["tool_name"]) for e in events if e["type"] == "act"] == [
        ("act", "search"),
        ("act", "research"),
        ("act", "fetch"),
        ("act", "divide"),
    ]
    pairs = match_observe(events)
    assert len(pairs) == 4
    for act, observe in pairs:
        assert observe is not None
        assert observe["execution_id"] == act["execution_id"]
        assert observe["call_id"] == act["call_id"]
    failed = [o for _, o in pairs if o is not None and o["is_error"]]
    assert [(o["tool_name"], o["state"], o["observation"]) for o in failed] == [
        ("divide", "FAILED", {"error": "ZeroDivisionError: division by zero"})
    ]

    record = {
        "protocol": protocol,
        "spans": len(local),
        "app_seconds": round(app_s, 2),
        "arrival_seconds": round(arrival_s, 2),
        "phoenix_startup_seconds": round(phoenix.startup_s, 2),
    }
    (results_dir / f"phoenix-e2e-{protocol.replace('/', '-')}.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record))
