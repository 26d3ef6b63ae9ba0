"""toolspan's ``@toolspan.tool``.

``on``: the application installs its SDK provider (BatchSpanProcessor + do-nothing exporter) first,
then ``toolspan.configure()`` keeps it. ``nocapture``: the same with
``toolspan.configure(capture_content=False)`` (and ``TOOLSPAN_CAPTURE_CONTENT=false``).
``genai``: the same with ``toolspan.configure(conventions="genai")`` (GenAI attributes only).
``off``: no SDK provider installed, no configure().
With tracing on, the minimal hand-written GenAI span of ``run_handwritten.py`` is also timed in the
same process, over the same provider, right after each repeat (the paired ratio of the results).
"""

from __future__ import annotations

import os
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import make_provider
from opentelemetry import trace


def _decorate() -> Any:
    import toolspan

    return toolspan.tool(get_forecast)


def _configure(**kwargs: Any) -> None:
    import toolspan

    toolspan.configure(**kwargs)


def _reference() -> Any:
    from run_handwritten import minimal_tool

    return minimal_tool()


def on() -> Setup:
    trace.set_tracer_provider(make_provider())
    _configure()
    return Setup(tool=_decorate(), reference=_reference())


def genai() -> Setup:
    os.environ["TOOLSPAN_CONVENTIONS"] = "genai"
    trace.set_tracer_provider(make_provider())
    _configure(conventions="genai")
    return Setup(tool=_decorate(), reference=_reference(), notes=['toolspan.configure(conventions="genai")'])


def nocapture() -> Setup:
    os.environ["TOOLSPAN_CAPTURE_CONTENT"] = "false"
    trace.set_tracer_provider(make_provider())
    _configure(capture_content=False)
    return Setup(
        tool=_decorate(), reference=_reference(), notes=["toolspan.configure(capture_content=False)"]
    )


def off() -> Setup:
    return Setup(tool=_decorate(), notes=["no SDK provider installed"])


if __name__ == "__main__":
    run({"on": on, "genai": genai, "nocapture": nocapture, "off": off}, ["toolspan"])
