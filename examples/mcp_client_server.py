"""An agent's tool calls an MCP server over stdio (the official ``mcp`` SDK), and the two processes' spans
make one execution tree.

    python examples/mcp_client_server.py [OUT_DIR]

What it shows: the agent's ``plan_trip`` tool is a thin client of an MCP server, this same file run as a
subprocess (``--server``), whose ``plan_trip`` tool starts a toolspan sub-plan calling two toolspan tools.
The SDK carries the ``traceparent`` in ``params._meta``, so the server continues the agent's trace. The
agent writes ``OUT_DIR/traces.jsonl``, the server ``OUT_DIR/server-traces.jsonl``; read together, the MCP
call is one tool call (the agent's, with the model's id) and the SDK's own ``tools/call`` client and
server spans are its transport legs. What to look at: the printed tree (``plan_trip`` once, the server's
plan and tools under it) and ``OUT_DIR/tree.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import toolspan

# What a model asked for (an Anthropic tool_use block).
MODEL_CALL = {
    "type": "tool_use",
    "id": "toolu_trip",
    "name": "plan_trip",
    "input": {"city": "Paris", "nights": 2},
}


# --- The MCP server (run as `python mcp_client_server.py --server SPANS_FILE`) ---


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18}


@toolspan.tool
def book_hotel(city: str, nights: int) -> dict[str, Any]:
    """Book a hotel."""
    return {"city": city, "nights": nights, "room": 101}


def serve(spans_file: Path) -> None:
    from mcp.server.mcpserver import MCPServer
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from toolspan.exporters.otlp_file import OtlpJsonFileExporter

    # Each span written as it ends: the client closes the server when it is done.
    exporter = OtlpJsonFileExporter(spans_file)
    toolspan.configure(
        service_name="trips-mcp-server", exporters=[], span_processors=[SimpleSpanProcessor(exporter)]
    )
    server = MCPServer("trips")

    @server.tool()
    async def plan_trip(city: str, nights: int) -> dict[str, Any]:
        """Plan a trip: the weather, then a hotel."""
        with toolspan.plan(f"trip to {city}"):
            return {"weather": get_weather(city), "hotel": book_hotel(city, nights)}

    server.run("stdio")


# --- The agent ---


async def run_agent(server_spans: Path) -> list[dict[str, Any]]:
    from mcp import StdioServerParameters
    from mcp.client import Client

    params = StdioServerParameters(
        command=sys.executable, args=[__file__, "--server", str(server_spans)], env=dict(os.environ)
    )
    async with Client(params) as client:

        @toolspan.tool
        async def plan_trip(city: str, nights: int) -> Any:
            """Plan a trip (on the MCP server)."""
            result = await client.call_tool("plan_trip", {"city": city, "nights": nights})
            return result.structured_content

        with toolspan.agent("travel_agent", input="Two nights in Paris, please.") as run:
            results = await toolspan.arun_tool_calls([MODEL_CALL], [plan_trip])
            run.set_output("Booked.")
            return results


def print_tree(node: dict[str, Any], depth: int = 0) -> None:
    label = node.get("name") or node["type"]
    call_id = f", call {node['call_id']}" if node.get("call_id") else ""
    print(f"{'  ' * depth}{label}  ({node['type']}{call_id})")
    for child in node.get("children", []):
        print_tree(child, depth + 1)


def main(out: Path) -> None:
    import anyio

    from toolspan.bridge.readers import read_spans
    from toolspan.bridge.views import to_tree

    out.mkdir(parents=True, exist_ok=True)
    traces, server_traces = out / "traces.jsonl", out / "server-traces.jsonl"
    traces.unlink(missing_ok=True)
    server_traces.unlink(missing_ok=True)
    provider = toolspan.configure(service_name="travel-agent", file=traces)
    results = anyio.run(run_agent, server_traces)
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file
    print("result for the model:", results[0]["content"])

    agent_spans, _ = read_spans(traces)
    server_spans, _ = read_spans(server_traces)
    # Connecting (the SDK's server/discover) is a trace of its own; keep the agent's run.
    trace_id = next(span.trace_id for span in agent_spans if span.name == "invoke_agent travel_agent")
    tree = to_tree([span for span in agent_spans + server_spans if span.trace_id == trace_id])
    (out / "tree.json").write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")
    print_tree(tree["execution_tree"])
    print(f"traces: {traces}, {server_traces}; tree: {out / 'tree.json'}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--server"]:
        serve(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
