"""MLflow Tracing's native OTLP export: ``mlflow.openai.autolog()`` traces the OpenAI Agents SDK (its agent,
tool and model-call spans) and the OpenAI client under it; the model is the SDK's Chat Completions model
over a scripted HTTP transport. MLflow sends its spans itself, as it does when
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set: to a receiver on loopback.
Usage: ``run_mlflow.py OUT [native|genai]`` (``genai``: ``MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true``)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec

receiver = rec.OtlpReceiver()
os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint
os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
# No MLflow tracking server: spans go only to the OTLP endpoint (a URI is needed, none is called).
os.environ.setdefault("MLFLOW_TRACKING_URI", receiver.endpoint.rsplit("/v1/", 1)[0])
if len(sys.argv) > 2 and sys.argv[2] == "genai":
    os.environ["MLFLOW_ENABLE_OTEL_GENAI_SEMCONV"] = "true"

import mlflow  # noqa: E402
from _agents_sdk import run  # noqa: E402


def main(out: str, mode: str) -> None:
    mlflow.openai.autolog()
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    from mlflow.tracing.provider import _get_span_processor

    processor = _get_span_processor()  # the OTLP processor (a batch processor): send what it holds
    assert processor is not None, "MLflow set up no span processor"
    processor.force_flush()
    request = receiver.request()
    assert request.resource_spans, "MLflow exported no span"
    rec.write_request(Path(out), request)
    rec.write_truth(
        Path(out),
        f"mlflow_{mode}",
        rec.versions("mlflow-tracing", "openai-agents", "openai", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "native")
