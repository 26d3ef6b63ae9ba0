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

from toolspan._agent import agent, thought
from toolspan._context import current_execution_id, current_tool_call_id, tool_call_id
from toolspan._outcome import ToolDenied
from toolspan._plan import plan
from toolspan._run import Run
from toolspan._tool import record_permission_decided, record_permission_required, tool, wrap, wrap_tools
from toolspan._tracer import VERSION as __version__
from toolspan.propagation import extract, inject

if TYPE_CHECKING:
    from toolspan._approval_book import ApprovalBook
    from toolspan._approvals import Approval
    from toolspan._calls import ToolCall, arun_tool_calls, run_tool_calls
    from toolspan._replay import ReplayDivergence, ReplayedToolError, ReplayError, ReplaySealed, replay
    from toolspan._setup import configure, instrument_threads
    from toolspan.exporters.live import text_delta

# Loaded on first use, so that ``import toolspan`` (decorating tools) stays light: the SDK setup and
# its exporters, the tool-call runner, replay, and the live processor (which loads the bridge).
_LAZY = {
    "Approval": "toolspan._approvals",
    "ApprovalBook": "toolspan._approval_book",
    "ReplayDivergence": "toolspan._replay",
    "ReplayError": "toolspan._replay",
    "ReplaySealed": "toolspan._replay",
    "ReplayedToolError": "toolspan._replay",
    "ToolCall": "toolspan._calls",
    "arun_tool_calls": "toolspan._calls",
    "configure": "toolspan._setup",
    "instrument_threads": "toolspan._setup",
    "replay": "toolspan._replay",
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
    "Approval",
    "ApprovalBook",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySealed",
    "ReplayedToolError",
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
    "instrument_threads",
    "plan",
    "record_permission_decided",
    "record_permission_required",
    "replay",
    "run_tool_calls",
    "text_delta",
    "thought",
    "tool",
    "tool_call_id",
    "wrap",
    "wrap_tools",
]
