"""A real agent run (the toolspan SDK) whose ``transfer`` call an approver allowed with edited arguments.

The model asks ``transfer(amount=5000, to="acct-9")``; the approver (``by="alice"``) allows it with
``amount=50``: the body receives the edit and says so in its result. ``edited_run()`` gives the run's spans,
``write_edited_run(path)`` writes them as an OTLP JSON file, as an application's exporter would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import toolspan
from toolspan.bridge import to_otlp_json
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans
from toolspan.testing import capture_spans

MODEL_ARGUMENTS: Final = {"amount": 5000, "to": "acct-9"}
EDITED_ARGUMENTS: Final = {"amount": 50, "to": "acct-9"}
EDITED_BY: Final = "alice"
RESULT: Final = "sent 50 to acct-9"  # what the body returns: it received the edit
CALL_ID: Final = "call_transfer"


@toolspan.tool
def transfer(amount: int, to: str) -> str:
    """Move money."""
    return f"sent {amount} to {to}"


def _approve(call: toolspan.ToolCall) -> toolspan.Approval:
    return toolspan.Approval("allow", note="capped", by=EDITED_BY, arguments=dict(EDITED_ARGUMENTS))


def edited_run() -> list[Span]:
    """The spans of one agent run whose one call was allowed with edited arguments."""
    call = {
        "id": CALL_ID,
        "type": "function",
        "function": {"name": "transfer", "arguments": json.dumps(MODEL_ARGUMENTS)},
    }
    with capture_spans() as finished:
        with toolspan.agent("payer", input="pay the bill", conversation_id="conv-edit") as run:
            (result,) = toolspan.run_tool_calls([call], [transfer], approve=_approve)
            run.set_output("paid")
        assert RESULT in json.dumps(result)
        return from_readable_spans(finished())


def write_edited_run(path: Path) -> Path:
    """``edited_run()`` as an OTLP JSON file at ``path``."""
    path.write_text(json.dumps(to_otlp_json(edited_run())), "utf-8")
    return path


def decided_at_ns(spans: list[Span]) -> int:
    """When the edit was decided (the permission_decided event), ns since the epoch."""
    for span in spans:
        for event in span.events:
            if event.name == toolspan.semconv.PERMISSION_DECIDED_EVENT:
                return event.time_ns
    raise AssertionError("no permission_decided event")


def decided_at_ms(spans: list[Span]) -> int:
    """``decided_at_ns`` in ms."""
    return decided_at_ns(spans) // 1_000_000


def edited_mark(spans: list[Span], model_key: str = "model_input") -> dict[str, Any]:
    """The ``edited`` mark the views give the call (``model_key``: the view's casing)."""
    return {"by": EDITED_BY, "at": decided_at_ms(spans), model_key: MODEL_ARGUMENTS}
