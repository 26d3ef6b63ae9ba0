"""A scripted OpenAI Chat Completions endpoint, served by an ``httpx.MockTransport`` (no network)."""

from __future__ import annotations

import json
from typing import Any

import _record as rec

try:  # newer openai releases ship their HTTP client as httpx2
    import httpx2 as httpx
except ImportError:
    import httpx  # type: ignore[no-redef]


def _completion(turn: int, final_call: dict[str, Any] | None) -> dict[str, Any]:
    usage = rec.USAGE[turn]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if turn == 0 or final_call is not None:
        finish = "tool_calls"
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in (rec.CALLS if turn == 0 else [final_call])
        ]
    else:
        finish = "stop"
        message["content"] = rec.FINAL_ANSWER
    return {
        "id": f"chatcmpl-scripted-{turn}",
        "object": "chat.completion",
        "created": 1_700_000_000 + turn,
        "model": rec.MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage["input_tokens"],
            "completion_tokens": usage["output_tokens"],
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        },
    }


def _chunks(completion: dict[str, Any], include_usage: bool) -> bytes:
    """``completion`` as the server-sent events of a streamed answer (``stream: true``), as the Chat
    Completions API sends them: the message in chunks (its text in two parts; each tool call opened with its
    id and name, then its arguments), then its finish reason, then, where the request asked for it
    (``stream_options.include_usage``), a last chunk with the usage and no choice."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = []
    if message.get("tool_calls"):
        deltas.append({"role": "assistant", "content": None})
        for i, call in enumerate(message["tool_calls"]):
            name = {"name": call["function"]["name"], "arguments": ""}
            opened = {"index": i, "id": call["id"], "type": "function", "function": name}
            deltas.append({"tool_calls": [opened]})
            arguments = {"index": i, "function": {"arguments": call["function"]["arguments"]}}
            deltas.append({"tool_calls": [arguments]})
    else:
        text = message["content"]
        deltas += [{"role": "assistant", "content": text[:10]}, {"content": text[10:]}]
    chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()


class ScriptedChat:
    """Answers each POST to ``/chat/completions`` with the next turn of the script.

    ``final_call``: the last turn is this tool call (a framework's own final-answer tool), not text.
    """

    def __init__(self, final_call: dict[str, Any] | None = None) -> None:
        self.final_call = final_call
        self.turn = 0
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request, httpx)

    def _answer(self, request: Any, module: Any) -> Any:
        if not request.url.path.endswith("/chat/completions"):
            return module.Response(404, json={"error": {"message": f"not scripted: {request.url.path}"}})
        asked = json.loads(request.content)
        self.requests.append(asked)
        body = _completion(min(self.turn, len(rec.USAGE) - 1), self.final_call)
        self.turn += 1
        if asked.get("stream"):
            usage = bool((asked.get("stream_options") or {}).get("include_usage"))
            content = _chunks(body, usage)
            return module.Response(200, headers={"content-type": "text/event-stream"}, content=content)
        return module.Response(200, json=body)

    def legacy_transport(self) -> Any:
        """The script as a transport of the classic ``httpx`` package (for a framework that builds its own
        ``httpx.Client`` and hands it to the OpenAI SDK, as Haystack does)."""
        import httpx as legacy

        return legacy.MockTransport(lambda request: self._answer(request, legacy))

    def legacy_client(self) -> Any:
        """A classic ``httpx.Client`` over the script (for a framework that accepts no other kind)."""
        import httpx as legacy

        return legacy.Client(transport=self.legacy_transport())

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


class _Request:
    """What ``ScriptedChat`` reads of a request, for a request taken off a socket."""

    class _Url:
        def __init__(self, path: str) -> None:
            self.path = path

    def __init__(self, path: str, content: bytes) -> None:
        self.url = self._Url(path)
        self.content = content


class _Reply:
    """The ``Response`` constructor ``ScriptedChat`` answers with, kept as status, headers and bytes."""

    def __init__(
        self,
        status: int,
        json: Any = None,
        headers: dict[str, str] | None = None,
        content: bytes = b"",
    ) -> None:
        self.status = status
        self.headers = dict(headers or {})
        if json is not None:
            content = _json_bytes(json)
            self.headers["content-type"] = "application/json"
        self.content = content


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


class LoopbackChat:
    """The script as a real HTTP server on loopback, for a framework in another process (the JVM's): each
    POST to ``.../chat/completions`` answered with the next turn, as the mock transport answers it.
    ``base_url``: its address; ``chat``: the script (its turns and the requests it took)."""

    def __init__(self, chat: ScriptedChat | None = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from types import SimpleNamespace

        script = self.chat = chat or ScriptedChat()
        lock = threading.Lock()
        replies = SimpleNamespace(Response=_Reply)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    reply = script._answer(_Request(self.path, body), replies)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
