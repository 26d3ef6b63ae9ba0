"""A child process for the control channel tests: an agent whose tool calls are approved (and may be
cancelled) through a real ``toolspan serve``, with ``toolspan.ServerApprover``.

    python control_live_app.py DIR MODE NAME URL TOKEN [COUNT]

Exports with ``configure()`` from the environment (OTLP to the server, ``TOOLSPAN_PENDING_SPANS``) and to the
file ``DIR/NAME.jsonl``. Every tool body first appends a line ``{"tool", "execution_id", "arguments", "t"}``
to ``DIR/NAME-bodies.jsonl`` (``t``: ``time.time()`` when the body started), so a test sees exactly which
bodies ran. Modes:

- ``gate``: the model's call ``delete_files(path)`` (id ``toolu_del``);
- ``gate-other``: the same call id with other arguments (a restarted application whose model asked again);
- ``async``: ``watch_async(seconds)`` (id ``toolu_async``), an async tool that sleeps;
- ``sync``: ``watch_sync(seconds)`` (id ``toolu_sync``), a sync tool that calls ``check_cancelled()``;
- ``gen``: ``watch_gen(count)`` (id ``toolu_gen``), a generator tool yielding one item every 50 ms;
- ``bench``: COUNT calls of ``delete_files`` one after the other (ids ``toolu_b0``, ``toolu_b1``...);
- ``pay-small`` / ``pay-big``: ``transfer(amount, to)`` (id ``toolu_pay``) of 1 to ``acct-1`` / of 100000 to
  ``mallory``: two applications waiting on the same model call id;
- ``long-id``: ``delete_files("/srv/long")`` whose model call id holds ``/`` and is 3,000 characters long.

``CONTROL_APP_SERVICE`` (environment) names the service (default ``control-app``).

The results go to ``DIR/NAME-results.json`` (a list per batch).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import toolspan

DIR = Path(sys.argv[1])
MODE, NAME, URL, TOKEN = sys.argv[2:6]
COUNT = int(sys.argv[6]) if len(sys.argv) > 6 else 1
BODIES = DIR / f"{NAME}-bodies.jsonl"


def _ran(tool: str, arguments: dict[str, Any]) -> None:
    line = {
        "tool": tool,
        "execution_id": toolspan.current_execution_id(),
        "arguments": arguments,
        "t": time.time(),
    }
    with BODIES.open("a") as f:
        f.write(json.dumps(line) + "\n")


def delete_files(path: str) -> dict[str, Any]:
    """Delete the files under a path."""
    _ran("delete_files", {"path": path})
    return {"deleted": [f"{path}/a.log"]}


async def watch_async(seconds: float) -> str:
    """Watch something for a while (async)."""
    _ran("watch_async", {"seconds": seconds})
    await asyncio.sleep(seconds)
    return "watched"


def watch_sync(seconds: float) -> str:
    """Watch something for a while, checking for a cancellation."""
    _ran("watch_sync", {"seconds": seconds})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        toolspan.check_cancelled()
        time.sleep(0.02)
    return "watched"


def watch_gen(count: int) -> Any:
    """Yield readings."""
    _ran("watch_gen", {"count": count})
    for i in range(count):
        time.sleep(0.05)
        yield i


def transfer(amount: int, to: str) -> str:
    """Move money between accounts."""
    _ran("transfer", {"amount": amount, "to": to})
    return f"moved {amount} to {to}"


LONG_ID = "toolu/" + "x/" * 1497


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


TOOLS = [delete_files, watch_async, watch_sync, watch_gen, transfer]


def main() -> None:
    service = os.environ.get("CONTROL_APP_SERVICE", "control-app")
    provider = toolspan.configure(service_name=service, file=DIR / f"{NAME}.jsonl")
    approver = toolspan.ServerApprover(URL, token=TOKEN or None, unreachable_for=60)
    batches: list[Any] = []
    with toolspan.agent("control-agent", conversation_id="conv-control"):
        if MODE == "gate":
            calls = [[_call("toolu_del", "delete_files", {"path": "/srv/old"})]]
        elif MODE == "gate-other":
            calls = [[_call("toolu_del", "delete_files", {"path": "/"})]]
        elif MODE == "async":
            calls = [[_call("toolu_async", "watch_async", {"seconds": 60})]]
        elif MODE == "sync":
            calls = [[_call("toolu_sync", "watch_sync", {"seconds": 60})]]
        elif MODE == "gen":
            calls = [[_call("toolu_gen", "watch_gen", {"count": 1200})]]
        elif MODE == "pay-small":
            calls = [[_call("toolu_pay", "transfer", {"amount": 1, "to": "acct-1"})]]
        elif MODE == "pay-big":
            calls = [[_call("toolu_pay", "transfer", {"amount": 100000, "to": "mallory"})]]
        elif MODE == "long-id":
            calls = [[_call(LONG_ID, "delete_files", {"path": "/srv/long"})]]
        else:
            calls = [[_call(f"toolu_b{i}", "delete_files", {"path": f"/srv/{i}"})] for i in range(COUNT)]
        for batch in calls:
            if MODE == "async":
                results = asyncio.run(toolspan.arun_tool_calls(batch, TOOLS, approve=approver))
            else:
                results = toolspan.run_tool_calls(batch, TOOLS, approve=approver)
            batches.append(results)
    (DIR / f"{NAME}-results.json").write_text(json.dumps(batches))
    provider.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
