"""A child process for the live approval tests: an agent runs one model tool call behind an approver.

    python approvals_live_app.py DIR signal|book NAME

Exports with ``configure()`` from the environment (OTLP to a ``toolspan serve``, ``TOOLSPAN_PENDING_SPANS``)
and to the file ``DIR/NAME.jsonl``. The model's call is ``delete_files(path)`` (id ``toolu_del``), whose body
calls the tool ``list_files``. ``signal``: the approver waits for ``DIR/decision.json`` (``{"decision",
"note", "by", "arguments"}``) written by the test. ``book``: the approver is ``toolspan.ApprovalBook(DIR /
"approvals.db")``. The results go to ``DIR/NAME-results.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import toolspan

DIR = Path(sys.argv[1])
MODE = sys.argv[2]
NAME = sys.argv[3]
CALL = {"type": "tool_use", "id": "toolu_del", "name": "delete_files", "input": {"path": "/srv/old"}}


@toolspan.tool
def list_files(path: str) -> list[str]:
    return [f"{path}/a.log"]


def delete_files(path: str) -> dict[str, Any]:
    """Delete the files under a path."""
    return {"deleted": list_files(path)}


def wait_for_signal(call: toolspan.ToolCall) -> toolspan.Approval:
    signal = DIR / "decision.json"
    deadline = time.monotonic() + 60
    while not signal.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    doc = json.loads(signal.read_text())
    return toolspan.Approval(
        doc["decision"], note=doc.get("note"), by=doc.get("by"), arguments=doc.get("arguments")
    )


def main() -> None:
    provider = toolspan.configure(service_name="approvals-app", file=DIR / f"{NAME}.jsonl")
    approve: Any = (
        wait_for_signal
        if MODE == "signal"
        else toolspan.ApprovalBook(DIR / "approvals.db", poll_interval=0.05)
    )
    with toolspan.agent("approvals-agent", conversation_id="conv-approvals"):
        results = toolspan.run_tool_calls([CALL], [delete_files], approve=approve)
    (DIR / f"{NAME}-results.json").write_text(json.dumps(results))
    provider.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
