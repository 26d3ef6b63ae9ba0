"""``toolspan serve`` receiving an agent's spans over OTLP, and the live trace page it serves.

    python examples/serve_with_page.py [OUT_DIR] [--keep]

What it shows: the example starts ``python -m toolspan serve`` (its SQLite file ``OUT_DIR/toolspan.db``, a
port on 127.0.0.1 it reads back from the server's banner), then runs a small agent configured only by the
standard environment variables any OpenTelemetry SDK reads (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_PROTOCOL``; plus ``TOOLSPAN_PENDING_SPANS=all`` so the run shows while it runs). It
then reads back what the server holds. What to look at: the run as the server lists it (its name, state and
counts from ``/api/traces``, saved in ``OUT_DIR/traces.json``), and the printed URLs of the list of runs
and of the run's live trace page. With ``--keep`` the server stays up until Ctrl-C, so you can open them
in a browser.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import toolspan

HOST = "127.0.0.1"


def fetch(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode("utf-8")


def start_server(out: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    """``toolspan serve`` (and ``flags``) on a port it picks; its URL, read back from its banner."""
    command = [sys.executable, "-m", "toolspan", "serve", "--db", str(out / "toolspan.db")]
    command += ["--host", HOST, "--port", "0", "--grpc-port", "-1", *flags]
    log = out / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=sink)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"toolspan serve exited; see {log}")
        found = re.search(r"OTLP/HTTP (http://\S+)/v1/traces", log.read_text("utf-8", "replace"))
        if found:
            return server, found.group(1)
        time.sleep(0.05)
    server.terminate()
    raise SystemExit(f"toolspan serve did not start; see {log}")


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    time.sleep(0.05)
    return {"city": city, "temp_c": 18}


@toolspan.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def run_agent() -> None:
    calls = [
        {"type": "tool_use", "id": "toolu_weather", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_add", "name": "add", "input": {"a": 25, "b": 30}},
    ]
    with toolspan.agent("assistant", input="Weather in Paris, and 25 + 30?", conversation_id="conv-serve"):
        toolspan.run_tool_calls(calls, [get_weather, add])


def main(out: Path, keep: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "toolspan.db").unlink(missing_ok=True)
    server, url = start_server(out)
    try:
        # What you would export in the agent's shell; configure() reads them.
        os.environ.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=url,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            TOOLSPAN_PENDING_SPANS="all",
        )
        provider = toolspan.configure(service_name="served-agent")
        run_agent()
        getattr(provider, "shutdown", lambda: None)()  # flush: the server has committed what it acknowledged

        _status, body = fetch(url + "/api/traces")
        listing = json.loads(body)
        (out / "traces.json").write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
        run = listing["traces"][0]
        status, _page = fetch(f"{url}/traces/{run['trace_id']}")
        print(f"toolspan serve at {url} holds the run {run['name']!r}:")
        counts = f"{run['tool_calls']} tool calls, {run['errors']} errors"
        print(f"  {run['state']}, {counts}, service {run['service']}")
        print(f"  list of runs  {url}/traces")
        print(f"  its page      {url}/traces/{run['trace_id']} (HTTP {status})")
        print(f"  as JSON       {url}/api/traces?q={run['trace_id']}")
        if keep:
            print("serving; Ctrl-C to stop", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.wait()
        else:  # the addresses above die with the server: say so, and how to keep them
            print("the server stops with this example: run it with --keep to open these pages")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if arg != "--keep"]
    main(
        Path(args[0]) if args else Path("example-output") / Path(__file__).stem, keep="--keep" in sys.argv[1:]
    )
