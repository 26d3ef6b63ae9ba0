"""Run by tests/exporters/test_live.py: an agent calls a tool with a durable act log, and the process dies
inside the tool.

Usage: python live_crash_child.py ACTS_JSONL
"""

from __future__ import annotations

import os
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

import toolspan
from toolspan.exporters.live import LiveEventProcessor


def main(path: str) -> None:
    provider = TracerProvider(resource=Resource({"service.name": "crashing-agent"}))
    provider.add_span_processor(LiveEventProcessor(durable_path=path))

    @toolspan.tool(tracer_provider=provider)
    def delete_files(pattern: str) -> int:
        """Delete the files matching a pattern."""
        sys.stdout.write("inside the tool\n")
        sys.stdout.flush()
        os._exit(1)  # the process dies mid-tool: no span ends, no exporter flushes

    with toolspan.agent("cleaner", input="clean up", tracer_provider=provider):
        delete_files("*.tmp")


if __name__ == "__main__":
    main(sys.argv[1])
