"""A person decides an agent's tool calls through ``toolspan serve``: allow one with edited arguments, deny
one with a note, allow one and cancel it while it runs.

    python examples/approve_through_server.py [OUT_DIR] [--keep]

What it shows: the example starts ``python -m toolspan serve --token APP_TOKEN --decider ops=OPS_TOKEN``
(its store ``OUT_DIR/toolspan.db``, a port it reads back from the server's banner). The application
exports its spans there by the standard OTLP variables, with the application's token and
``TOOLSPAN_PENDING_SPANS=all`` (the whole run shows while it runs), and gates every tool call with
``toolspan.ServerApprover``: each call waits in the server's inbox (``/inbox`` in a browser, ``GET
/api/control/waiting`` here) until a decider decides it. The decider here is a script with the ``ops``
token, doing over HTTP what the inbox's buttons do: each decision names the exact call (``execution_id``)
and the digest of the arguments it was shown (``shown``); the application's own token may read but never
decide (403).

What to look at: the transcript (what waited, each decision, what the model got back), the run's page URL
(``--keep`` serves it until Ctrl-C: open it, or ``/inbox``, with the ``ops`` token printed), and the span
states in ``OUT_DIR/traces.json``: COMPLETED with the edited arguments, DENIED, CANCELLED.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from serve_with_page import start_server  # the sibling example's: toolspan serve on a free port

import toolspan

APP_TOKEN = "example-application-token"  # sends spans and reads (the application's)
OPS_TOKEN = "example-ops-decider-token"  # reads and decides (a person's, named "ops")
QUESTION = "Clear last year's releases, tell everyone, and watch the checkout deploy."
# What the model asked for (Anthropic tool_use blocks), all at once.
MODEL_CALLS = [
    {"type": "tool_use", "id": "toolu_del", "name": "delete_files", "input": {"path": "/srv/releases"}},
    {"type": "tool_use", "id": "toolu_mail", "name": "send_email", "input": {"to": "everyone@example.org"}},
    {"type": "tool_use", "id": "toolu_watch", "name": "watch_deploy", "input": {"service": "checkout"}},
]


@toolspan.tool
def delete_files(path: str) -> dict[str, str]:
    """Delete the files under a path (only pretends here)."""
    return {"deleted": path}


@toolspan.tool
def send_email(to: str) -> str:
    """Send the release note."""
    return f"sent to {to}"


@toolspan.tool
def watch_deploy(service: str) -> str:
    """Follow a deploy until it is healthy (here: until cancelled, at most a minute)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        toolspan.check_cancelled()  # a cancel request from the server lands here
        time.sleep(0.05)
    return f"{service} is healthy"


# --- the server ---------------------------------------------------------------------------------


def call(url: str, token: str, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One request to the server with ``token``: ``(status, JSON body)``."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


# --- the decider ---------------------------------------------------------------------------------


def decide(url: str) -> None:
    """What the person with the ``ops`` token does: reads the inbox, decides each call, cancels one."""
    waiting: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(waiting) < len(MODEL_CALLS) and time.monotonic() < deadline:
        waiting = call(f"{url}/api/control/waiting", OPS_TOKEN)[1]["waiting"]
        time.sleep(0.05)
    by_tool = {entry["tool"]: entry for entry in waiting}
    print(f"in the inbox ({url}/inbox):")
    for asked in MODEL_CALLS:  # (listed oldest first: the three ask at once, in any order)
        entry = by_tool[asked["name"]]
        print(f"  {entry['tool']}({json.dumps(entry['arguments'])}) from agent {entry['agent']}, waiting")

    def decision(tool: str, verdict: str, note: str, arguments: dict[str, Any] | None = None) -> Any:
        entry = by_tool[tool]
        body: dict[str, Any] = {
            "execution_id": entry["execution_id"],
            "decision": verdict,
            "shown": entry["arguments_sha256"],  # the arguments this person was shown
            "note": note,
        }
        if arguments is not None:
            body["arguments"] = arguments
        return call(f"{url}/api/control/decisions", OPS_TOKEN, "POST", body)

    status, refused = call(
        f"{url}/api/control/decisions",
        APP_TOKEN,
        "POST",
        {"execution_id": by_tool["send_email"]["execution_id"], "decision": "allow", "shown": "x"},
    )
    print(f"the application's token may not decide: {status} ({refused['error']})")
    status, doc = decision("delete_files", "allow", "last year only", {"path": "/srv/releases/2023"})
    print(f"ops allows delete_files with {json.dumps(doc['arguments'])}: {status}, by {doc['by']}")
    status, doc = decision("send_email", "deny", "not to everyone")
    print(f"ops denies send_email: {status}, by {doc['by']}")
    status, doc = decision("watch_deploy", "allow", "go ahead")
    print(f"ops allows watch_deploy: {status}, by {doc['by']}")
    watch = {"execution_id": by_tool["watch_deploy"]["execution_id"], "note": "taking too long"}
    deadline = time.monotonic() + 30
    while True:  # a call is cancelled once it runs (until the application took the decision: 409)
        status, doc = call(f"{url}/api/control/cancels", OPS_TOKEN, "POST", watch)
        if status != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    print(f"ops cancels watch_deploy while it runs: {status}, by {doc['by']}")


# --- the application -----------------------------------------------------------------------------


def run_agent(url: str) -> list[dict[str, Any]]:
    approver = toolspan.ServerApprover(url, token=APP_TOKEN)
    with toolspan.agent("ops-assistant", input=QUESTION, conversation_id="conv-approvals") as run:
        results = toolspan.run_tool_calls(
            MODEL_CALLS, [delete_files, send_email, watch_deploy], approve=approver, approve_timeout=120
        )
        run.set_output("Done what I was allowed to.")
    return results


def main(out: Path, keep: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "toolspan.db").unlink(missing_ok=True)
    # The application's token, and one decider: ops (its decisions are recorded as made by "ops").
    server, url = start_server(out, "--token", APP_TOKEN, "--decider", f"ops={OPS_TOKEN}")
    try:
        # What you would export in the agent's shell; configure() reads them.
        os.environ.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=url,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{APP_TOKEN}",
            TOOLSPAN_PENDING_SPANS="all",
        )
        provider = toolspan.configure(service_name="ops-agent")
        print(f"toolspan serve at {url}: the application's token sends spans, the decider ops decides")
        print(f"user: {QUESTION}")
        decider = threading.Thread(target=decide, args=(url,))
        decider.start()
        results = run_agent(url)
        decider.join(60)
        getattr(provider, "shutdown", lambda: None)()  # flush: the server has what the application sent
        print("the model gets back:")
        for asked, result in zip(MODEL_CALLS, results, strict=True):
            print(f"  {asked['name']} -> {result['content']}")
        _status, listing = call(f"{url}/api/traces", APP_TOKEN)
        (run,) = listing["traces"]
        _status, tree = call(f"{url}/api/traces/{run['trace_id']}/page", APP_TOKEN)
        states = {s["label"]: s["state"] for s in tree["steps"] if s["kind"] == "tool"}
        (out / "traces.json").write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
        print(f"the run {run['name']!r}: {run['state']}; its calls: {json.dumps(states, sort_keys=True)}")
        print(f"its page: {url}/traces/{run['trace_id']}#access_token={OPS_TOKEN}")
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
    default = Path("example-output") / Path(__file__).stem
    main(Path(args[0]) if args else default, keep="--keep" in sys.argv[1:])
