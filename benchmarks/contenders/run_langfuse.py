"""Langfuse's ``@observe(as_type="tool")`` (Python SDK v3+, built on OpenTelemetry).

``on``: ``Langfuse(public_key=..., secret_key=..., base_url=<unused local address>,
span_exporter=<do-nothing exporter>)``: Langfuse's own ``LangfuseSpanProcessor`` (a subclass of the
SDK's ``BatchSpanProcessor``) wraps the given exporter in its transforming exporter; nothing is sent
(the keys are dummies and the address is never contacted). Inputs and outputs are captured (the
decorator's default). ``off``: the same client with ``tracing_enabled=False``, Langfuse's switch.
"""

from __future__ import annotations

import os
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import EXPORTER

OFFLINE = {
    "public_key": "pk-lf-bench",
    "secret_key": "sk-lf-bench",
    "base_url": "http://127.0.0.1:9",
}


def _client(**kwargs: Any) -> Any:
    os.environ["LANGFUSE_PUBLIC_KEY"] = OFFLINE["public_key"]
    from langfuse import Langfuse

    return Langfuse(**OFFLINE, **kwargs)


def _decorate() -> Any:
    from langfuse import observe

    return observe(as_type="tool")(get_forecast)


def on() -> Setup:
    client = _client(span_exporter=EXPORTER)
    return Setup(
        tool=_decorate(),
        flush=client.flush,
        notes=[
            "Langfuse(span_exporter=noop): LangfuseSpanProcessor (BatchSpanProcessor subclass) wrapping it",
        ],
    )


def off() -> Setup:
    client = _client(tracing_enabled=False)
    return Setup(tool=_decorate(), flush=client.flush, notes=["Langfuse(tracing_enabled=False)"])


if __name__ == "__main__":
    run({"on": on, "off": off}, ["langfuse"])
