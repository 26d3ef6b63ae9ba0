"""OpenInference's ``@tracer.tool`` (``openinference-instrumentation``'s ``OITracer``).

``on``: an SDK provider (BatchSpanProcessor + do-nothing exporter) installed globally, and
``OITracer(trace.get_tracer(...), TraceConfig())`` with the default config (inputs and outputs
recorded). ``off``: no SDK provider installed; the OITracer then wraps the API's no-op tracer.
OpenInference sends nothing anywhere by itself.
"""

from __future__ import annotations

from typing import Any

from _harness import Setup, get_forecast, run
from _noop import make_provider
from opentelemetry import trace


def _decorate() -> Any:
    from openinference.instrumentation import OITracer, TraceConfig

    tracer = OITracer(trace.get_tracer("bench"), config=TraceConfig())
    return tracer.tool(get_forecast)


def on() -> Setup:
    trace.set_tracer_provider(make_provider())
    return Setup(
        tool=_decorate(), notes=["OITracer(trace.get_tracer(...), TraceConfig()) on the global provider"]
    )


def off() -> Setup:
    return Setup(tool=_decorate(), notes=["no SDK provider installed"])


if __name__ == "__main__":
    run({"on": on, "off": off}, ["openinference-instrumentation", "openinference-semantic-conventions"])
