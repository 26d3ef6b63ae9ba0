"""A child process for the stream tests: an agent calling ``N`` tools, each paced by the test.

    python server_stream_app.py DIR N

Exports with ``configure()`` from the environment (OTLP to the server, ``TOOLSPAN_PENDING_SPANS=true``;
text deltas as OTLP log records). Tool ``i`` writes ``DIR/started-i``, streams two text deltas, waits for
``DIR/release-i`` and returns ``i * 2``; tool 1 raises instead (a failed call). The process writes
``DIR/returned`` after the agent span ended.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import toolspan

DIR = Path(sys.argv[1])
COUNT = int(sys.argv[2])


@toolspan.tool
def step(i: int) -> int:
    (DIR / f"started-{i}").write_text("1")
    toolspan.text_delta(f"step {i} ")
    toolspan.text_delta("thinking")
    deadline = time.monotonic() + 60
    while not (DIR / f"release-{i}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if i == 1:
        raise ValueError("step 1 failed")
    return i * 2


def main() -> None:
    provider = toolspan.configure(service_name="stream-app")
    with toolspan.agent("stream-agent", conversation_id="conv-stream"):
        for i in range(COUNT):
            with contextlib.suppress(ValueError):
                step(i)
    (DIR / "returned").write_text("1")
    provider.shutdown()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
