"""MLflow's ``@mlflow.trace(span_type="TOOL")`` from the light ``mlflow-tracing`` package.

MLflow keeps its own, isolated TracerProvider. Its documented OpenTelemetry route (an OTLP traces
endpoint in the environment) gives it ``OtelSpanProcessor``, a subclass of the SDK's
``BatchSpanProcessor`` that also registers each trace with MLflow's in-memory trace manager. MLflow
has no public hook for a custom exporter, so the OTLP exporter factory it calls is replaced with one
returning the do-nothing exporter: nothing is sent and the endpoint is never contacted.
``off``: ``mlflow.tracing.disable()`` (MLflow's switch: a no-op tracer provider).
"""

from __future__ import annotations

import os
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import EXPORTER

OFFLINE_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    # Never contacted (spans go the OTLP route below). Without it, mlflow-tracing resolves a default
    # store, imports a module it does not depend on (sqlparse), and silently traces nothing.
    "MLFLOW_TRACKING_URI": "http://127.0.0.1:9",
    # Selects MLflow's OTLP span processor; the exporter is swapped below, so nothing is sent.
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
}


def _mlflow() -> Any:
    os.environ.update(OFFLINE_ENV)
    import mlflow
    import mlflow.tracing.provider as provider

    provider.get_otlp_exporter = lambda: EXPORTER
    return mlflow


def on() -> Setup:
    mlflow = _mlflow()
    import mlflow.tracing.provider as provider

    tool = mlflow.trace(span_type="TOOL")(get_forecast)

    def flush() -> None:
        provider.provider.get().force_flush()

    return Setup(
        tool=tool,
        flush=flush,
        notes=[
            "MLflow's OtelSpanProcessor (a BatchSpanProcessor subclass) with its OTLP exporter factory "
            "patched to return the do-nothing exporter",
        ],
    )


def off() -> Setup:
    mlflow = _mlflow()
    mlflow.tracing.disable()
    return Setup(
        tool=mlflow.trace(span_type="TOOL")(get_forecast),
        flush=lambda: None,
        notes=["mlflow.tracing.disable()"],
    )


if __name__ == "__main__":
    run({"on": on, "off": off}, ["mlflow-tracing"])
