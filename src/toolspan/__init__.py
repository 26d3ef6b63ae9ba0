"""toolspan: every tool call of an AI agent as an OpenTelemetry span.

import toolspan

@toolspan.tool
def get_weather(city: str) -> dict:
    \"\"\"Current weather of a city.\"\"\"
    ...

with toolspan.agent("planner", input="Weather in Paris?") as run:
    with toolspan.tool_call_id("toolu_01A..."):
        run.set_output(str(get_weather("Paris")))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolspan._context import current_execution_id, current_tool_call_id, tool_call_id
from toolspan._outcome import ToolDenied
from toolspan._scopes import Run, agent, plan, thought
from toolspan._tool import record_permission_decided, record_permission_required, tool, wrap, wrap_tools
from toolspan._tracer import VERSION as __version__
from toolspan.propagation import extract, inject

if TYPE_CHECKING:
    from toolspan._calls import ToolCall, arun_tool_calls, run_tool_calls
    from toolspan._setup import configure
    from toolspan.exporters.live import text_delta

# Loaded on first use, so that ``import toolspan`` (decorating tools) stays light: the SDK setup and
# its exporters, the tool-call runner, and the live processor (which loads the bridge).
_LAZY = {
    "ToolCall": "toolspan._calls",
    "arun_tool_calls": "toolspan._calls",
    "configure": "toolspan._setup",
    "run_tool_calls": "toolspan._calls",
    "text_delta": "toolspan.exporters.live",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Run",
    "ToolCall",
    "ToolDenied",
    "__version__",
    "agent",
    "arun_tool_calls",
    "configure",
    "current_execution_id",
    "current_tool_call_id",
    "extract",
    "inject",
    "plan",
    "record_permission_decided",
    "record_permission_required",
    "run_tool_calls",
    "text_delta",
    "thought",
    "tool",
    "tool_call_id",
    "wrap",
    "wrap_tools",
]
