"""Logfire's OpenAI Agents integration (``logfire.instrument_openai_agents()``): its message-template spans of
the agent, its tools and its model calls; the model is the SDK's Chat Completions model over a scripted HTTP
transport. Logfire sends to an OpenTelemetry backend of one's own (``send_to_logfire=False`` and
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``): a receiver on loopback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec

receiver = rec.OtlpReceiver()
os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint

import logfire  # noqa: E402
from _agents_sdk import run  # noqa: E402


def main(out: str) -> None:
    logfire.configure(send_to_logfire=False, service_name="weather-agent", console=False)
    logfire.instrument_openai_agents()
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    logfire.force_flush()
    request = receiver.request()
    assert request.resource_spans, "Logfire exported no span"
    rec.write_request(Path(out), request)
    rec.write_truth(
        Path(out),
        "logfire_openai_agents",
        rec.versions("logfire", "openai-agents", "openai", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
