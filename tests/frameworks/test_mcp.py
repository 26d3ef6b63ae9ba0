"""An agent's tool calls an MCP server over stdio (the official ``mcp`` SDK, real subprocess): one tree.

The agent side is traced in this process, the server side in the subprocess (``_mcp_server.py``), which
continues the trace from the ``traceparent`` the SDK carries in ``params._meta``. Read back together, the
MCP call is one tool call (the agent's), the SDK's client and server spans are its transport legs, and the
server's sub-plan and tools sit under it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

import toolspan
from tests.support.paths import APPS
from toolspan.bridge.readers import from_readable_spans, read_spans
from toolspan.bridge.views import to_events, to_tree
from toolspan.testing import capture_spans

pytestmark = pytest.mark.processes

WORKER = APPS / "mcp_server.py"


def _run_agent(spans_file: Path) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=[str(WORKER), str(spans_file)], env=dict(os.environ)
    )

    async def main() -> Any:
        async with Client(params) as client:

            @toolspan.tool
            async def plan_trip(city: str, nights: int) -> Any:
                """Plan a trip (on the MCP server)."""
                result = await client.call_tool("plan_trip", {"city": city, "nights": nights})
                return result.structured_content

            with toolspan.agent("travel_agent", input="Two nights in Paris, please.") as run:
                block = {
                    "type": "tool_use",
                    "id": "toolu_trip",
                    "name": "plan_trip",
                    "input": {"city": "Paris", "nights": 2},
                }
                results = await toolspan.arun_tool_calls([block], [plan_trip])
                run.set_output("Booked.")
                return results

    return anyio.run(main)


def _tools(node: dict[str, Any]) -> list[dict[str, Any]]:
    own = [node] if node["type"] in ("tool", "plan") else []
    return own + [t for child in node["children"] for t in _tools(child)]


def test_an_mcp_tool_call_is_one_connected_tree(tmp_path: Path) -> None:
    spans_file = tmp_path / "server.jsonl"
    with capture_spans() as finished:
        results = _run_agent(spans_file)
        client_spans = from_readable_spans(finished())
    content = (
        json.loads(results[0]["content"]) if isinstance(results[0]["content"], str) else results[0]["content"]
    )
    assert content == {
        "weather": {"city": "Paris", "temp_c": 18},
        "hotel": {"city": "Paris", "nights": 2, "room": 101},
    }
    server_spans, report = read_spans(str(spans_file))
    assert report.issues == []
    names = sorted(s.name for s in server_spans)
    assert names == [
        "execute_tool book_hotel",
        "execute_tool get_weather",
        "plan trip to Paris",
        "server/discover",
        "tools/call plan_trip",
        "tools/list",
    ]
    agent_trace = next(s.trace_id for s in client_spans if s.name == "invoke_agent travel_agent")
    # Connecting (discover) happens before the agent runs, in a trace of its own.
    setup = sorted(s.name for s in client_spans + server_spans if s.trace_id != agent_trace)
    assert setup == ["MCP send server/discover", "server/discover"]
    spans = [s for s in client_spans + server_spans if s.trace_id == agent_trace]
    tree = to_tree(spans)
    root = tree["execution_tree"]
    flat = _tools(root)
    # The MCP call once (the agent's tool, with the model's id); the server's plan and tools under it.
    assert [(n["type"], n.get("tool_name") or n["name"], n.get("call_id")) for n in flat] == [
        ("tool", "plan_trip", "toolu_trip"),
        ("plan", "plan trip to Paris", None),
        ("tool", "get_weather", flat[2]["call_id"]),
        ("tool", "book_hotel", flat[3]["call_id"]),
    ]
    mcp_call = flat[0]
    below = {n["span_id"] for n in _tools(mcp_call)}
    assert below == {n["span_id"] for n in flat}
    observes = [e for e in to_events(spans) if e["type"] == "observe"]
    assert sorted(e["tool_name"] for e in observes) == ["book_hotel", "get_weather", "plan_trip"]
    # The SDK's own spans are there, as the transport legs of the one call.
    legs = sorted(s.name for s in spans if "mcp.method.name" in s.attributes and "tools/call" in s.name)
    assert legs == ["MCP send tools/call plan_trip", "tools/call plan_trip"]
    # The server's spans alone (a client that traces nothing): its tools/call span is the tool call.
    alone = [s for s in server_spans if s.trace_id == agent_trace]
    alone_calls = sorted(e["tool_name"] for e in to_events(alone) if e["type"] == "observe")
    assert alone_calls == ["book_hotel", "get_weather", "plan_trip"]
