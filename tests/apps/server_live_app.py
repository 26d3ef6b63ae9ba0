"""A child process for the live server tests: an agent whose tool waits for the test (``release`` file).

    python server_live_app.py DIR finish|die

Exports with ``configure()`` from the environment (OTLP to the server, ``TOOLSPAN_PENDING_SPANS=true``).
The tool writes ``DIR/started``, then: ``finish`` waits for ``DIR/release``, returns and writes
``DIR/returned``; ``die`` flushes (so the pending record is out) and kills its own process mid-tool.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import toolspan

DIR = Path(sys.argv[1])
MODE = sys.argv[2]


@toolspan.tool
def slow_tool(city: str) -> str:
    (DIR / "started").write_text("1")
    if MODE == "die":
        provider = toolspan.configure()
        provider.force_flush()  # type: ignore[attr-defined]
        os.kill(os.getpid(), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not (DIR / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return city.upper()


def run() -> str:
    with toolspan.agent("live-agent", conversation_id="conv-live"):
        return slow_tool("paris")


def main() -> None:
    provider = toolspan.configure(service_name="live-app")
    run()
    (DIR / "returned").write_text("1")
    provider.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
