"""Run by test_live.py: start an agent and a tool with a durable act log, then die inside the tool.

Usage: python live_crash_child.py ACTS_JSONL
"""

from __future__ import annotations

import json
import os
import sys

from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from toolspan import semconv as sc
from toolspan.exporters.live import LiveEventProcessor


def main(path: str) -> None:
    provider = TracerProvider(resource=Resource({"service.name": "crashing-agent"}))
    provider.add_span_processor(LiveEventProcessor(durable_path=path))
    tracer = provider.get_tracer(sc.SCOPE_NAME)
    arguments = json.dumps({"pattern": "*.tmp"})
    with tracer.start_as_current_span(
        sc.AGENT_SPAN_PREFIX + "cleaner",
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "cleaner"},
    ):
        span = tracer.start_span(
            sc.TOOL_SPAN_PREFIX + "delete_files",
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: "delete_files",
                sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
            },
        )
        with trace_api.use_span(span):
            sys.stdout.write("inside the tool\n")
            sys.stdout.flush()
            os._exit(1)  # the process dies mid-tool: no span ends, no exporter flushes


if __name__ == "__main__":
    main(sys.argv[1])
