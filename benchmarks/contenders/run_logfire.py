"""Logfire's ``@logfire.instrument``, offline.

``on``: ``logfire.configure(send_to_logfire=False, console=False, metrics=False,
additional_span_processors=[BatchSpanProcessor(do-nothing exporter)])``; Logfire builds its own
TracerProvider and wraps the processor in its pipeline (scrubbing and its span tweaks stay on, as
they are by default). ``record_return=True`` so the result is recorded like the other contenders'
(arguments are recorded by default). ``off``: ``logfire.configure()`` never called (with
``LOGFIRE_IGNORE_NO_CONFIG=1`` to silence the warning): Logfire then creates no spans.
"""

from __future__ import annotations

import os
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import batch_processor

OFFLINE_ENV = {
    "LOGFIRE_SEND_TO_LOGFIRE": "false",
    "LOGFIRE_CONSOLE": "false",
    "LOGFIRE_IGNORE_NO_CONFIG": "1",
    "LOGFIRE_INSPECT_ARGUMENTS": "false",
}


def _logfire() -> Any:
    os.environ.update(OFFLINE_ENV)
    import logfire

    return logfire


def _decorate(logfire: Any) -> Any:
    return logfire.instrument("get_forecast", record_return=True)(get_forecast)


def on() -> Setup:
    logfire = _logfire()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        metrics=False,
        service_name="bench",
        additional_span_processors=[batch_processor()],
    )
    return Setup(
        tool=_decorate(logfire),
        flush=logfire.force_flush,
        notes=[
            "logfire.configure(send_to_logfire=False, console=False, metrics=False, "
            "additional_span_processors=[BatchSpanProcessor(noop)])",
            "@logfire.instrument('get_forecast', record_return=True)",
        ],
    )


def off() -> Setup:
    logfire = _logfire()
    return Setup(
        tool=_decorate(logfire),
        flush=lambda: None,
        notes=["logfire.configure() not called: Logfire creates no spans"],
    )


if __name__ == "__main__":
    run({"on": on, "off": off}, ["logfire"])
