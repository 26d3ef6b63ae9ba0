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

from typing import TYPE_CHECKING

from toolspan._util.lazy import lazy

if TYPE_CHECKING:
    from toolspan._approvals.approval import Approval
    from toolspan._approvals.book import ApprovalBook
    from toolspan._approvals.cancel import check_cancelled
    from toolspan._approvals.server_client import ServerApprover
    from toolspan._decisions.replay import replay
    from toolspan._instrument.agent import agent, thought
    from toolspan._instrument.context import current_execution_id, current_tool_call_id, tool_call_id
    from toolspan._instrument.deltas import text_delta
    from toolspan._instrument.handle import Run
    from toolspan._instrument.plan import plan
    from toolspan._instrument.tool import (
        record_permission_decided,
        record_permission_required,
        tool,
        wrap_tools,
    )
    from toolspan._instrument.tracer import VERSION as __version__
    from toolspan._runner.run import ToolCall, arun_tool_calls, run_tool_calls
    from toolspan._setup.configure import configure
    from toolspan.errors import (
        ReplayDivergence,
        ReplayedToolError,
        ReplayError,
        ReplaySealed,
        ToolCancelled,
        ToolDenied,
    )
    from toolspan.propagation import extract, inject

# Every name is loaded on first use (PEP 562), so ``import toolspan.bridge.model`` or ``import
# toolspan.semconv`` loads nothing else of toolspan, and ``toolspan.tool`` loads only the instrumentation
# core: the SDK setup, the call runner, replay and the exporters load when first used.
_LAZY: dict[str, str | tuple[str, str]] = {
    "Approval": "toolspan._approvals.approval",
    "ApprovalBook": "toolspan._approvals.book",
    "ReplayDivergence": "toolspan.errors",
    "ReplayError": "toolspan.errors",
    "ReplaySealed": "toolspan.errors",
    "ReplayedToolError": "toolspan.errors",
    "Run": "toolspan._instrument.handle",
    "ServerApprover": "toolspan._approvals.server_client",
    "ToolCall": "toolspan._runner.run",
    "ToolCancelled": "toolspan.errors",
    "ToolDenied": "toolspan.errors",
    "__version__": ("toolspan._instrument.tracer", "VERSION"),
    "agent": "toolspan._instrument.agent",
    "arun_tool_calls": "toolspan._runner.run",
    "check_cancelled": "toolspan._approvals.cancel",
    "configure": "toolspan._setup.configure",
    "current_execution_id": "toolspan._instrument.context",
    "current_tool_call_id": "toolspan._instrument.context",
    "extract": "toolspan.propagation",
    "inject": "toolspan.propagation",
    "plan": "toolspan._instrument.plan",
    "record_permission_decided": "toolspan._instrument.tool",
    "record_permission_required": "toolspan._instrument.tool",
    "replay": "toolspan._decisions.replay",
    "run_tool_calls": "toolspan._runner.run",
    "text_delta": "toolspan._instrument.deltas",
    "thought": "toolspan._instrument.agent",
    "tool": "toolspan._instrument.tool",
    "tool_call_id": "toolspan._instrument.context",
    "wrap_tools": "toolspan._instrument.tool",
}


__getattr__, __dir__ = lazy(globals(), _LAZY)


__all__ = [
    "Approval",
    "ApprovalBook",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySealed",
    "ReplayedToolError",
    "Run",
    "ServerApprover",
    "ToolCall",
    "ToolCancelled",
    "ToolDenied",
    "__version__",
    "agent",
    "arun_tool_calls",
    "check_cancelled",
    "configure",
    "current_execution_id",
    "current_tool_call_id",
    "extract",
    "inject",
    "plan",
    "record_permission_decided",
    "record_permission_required",
    "replay",
    "run_tool_calls",
    "text_delta",
    "thought",
    "tool",
    "tool_call_id",
    "wrap_tools",
]
