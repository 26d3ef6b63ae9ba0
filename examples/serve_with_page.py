"""``toolspan serve`` receiving an agent's spans over OTLP, and the live trace page it serves.

    python examples/serve_with_page.py [OUT_DIR] [--keep]

What it shows: the example starts ``python -m toolspan serve`` (its SQLite file ``OUT_DIR/toolspan.db``,
free ports on 127.0.0.1), then runs a small agent configured only by the standard environment variables
any OpenTelemetry SDK reads (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_PROTOCOL``; plus
``TOOLSPAN_PENDING_SPANS=true`` so a running tool shows at once). It then reads back what the server
holds. What to look at: the printed URLs of the trace list (``/traces``) and of the run's trace page
(``/traces/{id}``, with its Content-Security-Policy), the summary from ``/api/traces``, and the saved
``OUT_DIR/trace-page.html`` and ``OUT_DIR/traces.json``. With ``--keep`` the server stays up until
Ctrl-C, so you can open the URLs in a browser.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import toolspan

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def fetch(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode("utf-8")


def start_server(out: Path) -> tuple[subprocess.Popen[bytes], str]:
    port, grpc_port = free_port(), free_port()
    db = out / "toolspan.db"
    command = [sys.executable, "-m", "toolspan", "serve", "--db", str(db), "--port", str(port)]
    command += ["--grpc-port", str(grpc_port)]
    with (out / "server.log").open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=log)
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until it answers
        if server.poll() is not None:
            raise SystemExit(f"toolspan serve exited; see {out / 'server.log'}")
        try:
            fetch(url + "/healthz")
            return server, url
        except OSError:
            time.sleep(0.05)
    server.terminate()
    raise SystemExit(f"toolspan serve did not start; see {out / 'server.log'}")


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
            TOOLSPAN_PENDING_SPANS="true",
        )
        provider = toolspan.configure(service_name="served-agent")
        run_agent()
        getattr(provider, "shutdown", lambda: None)()  # flush: the server has committed what it acknowledged

        _status, body = fetch(url + "/api/traces")
        listing = json.loads(body)
        (out / "traces.json").write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
        summary = listing["traces"][0]
        trace_id = summary["trace_id"]
        status, page = fetch(f"{url}/traces/{trace_id}")
        (out / "trace-page.html").write_text(page, encoding="utf-8")
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)

        list_status, trace_list = fetch(url + "/traces")
        linked = f'href="/traces/{trace_id}"' in trace_list
        print(f"trace list: {url}/traces (HTTP {list_status}, links the run: {linked})")
        print(f"trace page: {url}/traces/{trace_id} (HTTP {status})")
        print("page policy:", csp.group(1) if csp else None)
        fields = ("root_name", "service", "conversation_id", "spans", "tool_calls", "errors", "state")
        print("summary:", json.dumps({key: summary[key] for key in fields}))
        if keep:
            print("serving; Ctrl-C to stop", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.wait()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if arg != "--keep"]
    main(Path(args[0]) if args else Path("example-output"), keep="--keep" in sys.argv[1:])
