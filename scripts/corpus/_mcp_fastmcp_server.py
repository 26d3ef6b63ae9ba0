"""The corpus's MCP server (FastMCP over stdio), traced by OpenLLMetry's MCP instrumentation, for
``run_mcp_openllmetry.py``: ``python _mcp_fastmcp_server.py SPANS.pb RAN.json``.

Its two tools are the corpus's; when the client closes stdin, the server writes its spans (one OTLP
protobuf export request) and what its tools ran with (the ground truth's records) for the client to merge.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.mcp import McpInstrumentor

recording = rec.Recording()
trace.set_tracer_provider(recording.tracer_provider)
McpInstrumentor().instrument(tracer_provider=recording.tracer_provider)

from fastmcp import FastMCP  # noqa: E402  (after the instrumentation, as OpenLLMetry asks)

server = FastMCP("weather")


@server.tool()
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return rec.get_weather(city)


@server.tool()
def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


if __name__ == "__main__":
    try:
        server.run("stdio", show_banner=False)
    finally:
        recording.tracer_provider.force_flush()
        spans = sorted(recording.span_exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
        Path(sys.argv[1]).write_bytes(encode_spans(spans).SerializeToString())
        Path(sys.argv[2]).write_text(json.dumps(rec._ran), encoding="utf-8")
