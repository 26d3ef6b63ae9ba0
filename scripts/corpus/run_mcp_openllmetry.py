"""The OpenAI Agents SDK (traced by OpenInference, as in ``run_openai_agents.py``) calling a real MCP
server (FastMCP, over stdio, in its own process), the MCP client and server both traced by OpenLLMetry's
MCP instrumentation; the model is the SDK's Chat Completions model over a scripted HTTP transport. The
server's spans continue the client's trace from the ``traceparent`` OpenLLMetry puts in each request's
``_meta``; both processes' spans are written as one run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.mcp import McpInstrumentor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SERVER = Path(__file__).parent / "_mcp_fastmcp_server.py"


async def run(server_spans: Path, server_ran: Path) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    chat = ScriptedChat()
    client = AsyncOpenAI(
        api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.async_client()
    )
    params = {
        "command": sys.executable,
        "args": [str(SERVER), str(server_spans), str(server_ran)],
        "env": dict(os.environ),
    }
    async with MCPServerStdio(
        params=params, name="weather", cache_tools_list=True, client_session_timeout_seconds=120
    ) as server:
        agent = Agent(
            name="weather_agent",
            instructions="Answer with the tools.",
            model=OpenAIChatCompletionsModel(model=rec.MODEL, openai_client=client),
            mcp_servers=[server],
        )
        result = await Runner.run(agent, rec.USER_REQUEST)
    return str(result.final_output)


def main(out: str) -> None:
    recording = rec.Recording()
    trace.set_tracer_provider(recording.tracer_provider)
    OpenAIAgentsInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    McpInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    with tempfile.TemporaryDirectory() as tmp:
        server_spans, server_ran = Path(tmp) / "server.pb", Path(tmp) / "ran.json"
        answer = asyncio.run(run(server_spans, server_ran))
        assert answer == rec.FINAL_ANSWER, answer
        server = ExportTraceServiceRequest()
        server.ParseFromString(server_spans.read_bytes())
        rec._ran.extend(json.loads(server_ran.read_text("utf-8")))
    recording.tracer_provider.force_flush()
    spans = sorted(recording.span_exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    request = encode_spans(spans)
    request.resource_spans.extend(server.resource_spans)
    rec.write_request(Path(out), request)
    rec.write_truth(
        Path(out),
        "mcp_openllmetry",
        rec.versions(
            "openai-agents",
            "openai",
            "mcp",
            "fastmcp",
            "openinference-instrumentation-openai-agents",
            "opentelemetry-instrumentation-mcp",
            "opentelemetry-sdk",
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
