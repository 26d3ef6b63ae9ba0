"""OpenLLMetry's ``@tool`` (``traceloop-sdk``).

``on``: ``Traceloop.init(exporter=<do-nothing exporter>, disable_batch=False, telemetry_enabled=False,
instruments=set())``: Traceloop builds its provider with the SDK's ``BatchSpanProcessor`` around the
given exporter (plus its own span processor hooks); no library auto-instrumentation, no metrics or
logs pipeline, no anonymous telemetry. Content tracing stays on (its default).
``off``: ``Traceloop.init(enabled=False)``, Traceloop's switch (the decorator then calls straight
through).
"""

from __future__ import annotations

import os
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import EXPORTER

OFFLINE_ENV = {
    "TRACELOOP_TELEMETRY": "false",
    "TRACELOOP_METRICS_ENABLED": "false",
    "TRACELOOP_LOGGING_ENABLED": "false",
    "TRACELOOP_TRACE_CONTENT": "true",
}


def _traceloop() -> Any:
    os.environ.update(OFFLINE_ENV)
    from traceloop.sdk import Traceloop

    return Traceloop


def _decorate() -> Any:
    from traceloop.sdk.decorators import tool

    return tool(name="get_forecast")(get_forecast)


def on() -> Setup:
    traceloop = _traceloop()
    traceloop.init(
        app_name="bench", exporter=EXPORTER, disable_batch=False, telemetry_enabled=False, instruments=set()
    )
    return Setup(
        tool=_decorate(),
        notes=[
            "Traceloop.init(exporter=noop, disable_batch=False, telemetry_enabled=False, instruments=set())",
        ],
    )


def off() -> Setup:
    traceloop = _traceloop()
    traceloop.init(app_name="bench", enabled=False, telemetry_enabled=False)
    return Setup(tool=_decorate(), flush=lambda: None, notes=["Traceloop.init(enabled=False)"])


if __name__ == "__main__":
    run({"on": on, "off": off}, ["traceloop-sdk"])
