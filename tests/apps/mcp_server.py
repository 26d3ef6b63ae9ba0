"""An MCP server for test_mcp, run over stdio by the official ``mcp`` SDK's client.

    python _mcp_server.py <spans .jsonl>

Its ``plan_trip`` tool starts a toolspan sub-plan that calls two toolspan tools. Every span (the SDK's own
``tools/call`` server span, the plan, the tools) goes to the OTLP JSON Lines file as it ends.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import toolspan
from toolspan.exporters.otlp_file import OtlpJsonFileExporter

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(sys.argv[1])))
trace.set_tracer_provider(provider)

server = MCPServer("trips")


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18}


@toolspan.tool
def book_hotel(city: str, nights: int) -> dict[str, Any]:
    """Book a hotel."""
    return {"city": city, "nights": nights, "room": 101}


@server.tool()
async def plan_trip(city: str, nights: int) -> dict[str, Any]:
    """Plan a trip: weather, then a hotel."""
    with toolspan.plan(f"trip to {city}"):
        return {"weather": get_weather(city), "hotel": book_hotel(city, nights)}


if __name__ == "__main__":
    server.run("stdio")
