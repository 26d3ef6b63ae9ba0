"""A hostile trace backend for the tests of ``toolspan fetch``/``find`` and ``serve --tempo/--jaeger``: a real
local HTTP server (``http.server`` in a thread, on a port bound at 0) whose answers are chosen per path, from
well-formed to slow, huge, deep or redirected. It records what it was asked (with the headers) and whether a
client it was trickling to closed the connection. ``jaeger_search`` makes it answer Jaeger's search with
recorded answers."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Final

HOST: Final = "127.0.0.1"
TRICKLE_S: Final = 0.05  # between two trickled bytes
TRICKLE_FOR_S: Final = 15.0  # a trickle ends (the connection closed) after this long at most

# Writes the whole answer to a request (status line, headers, body) on the handler.
Answer = Callable[["_Handler"], None]


@dataclass
class Backend:
    """The server's base URL, its answers by path (anything else: 404), and what it saw."""

    url: str = ""
    answers: dict[str, Answer] = field(default_factory=dict)
    asked: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    hung_up: threading.Event = field(default_factory=threading.Event)  # a trickle's client closed

    def paths(self) -> list[str]:
        return [urllib.parse.urlsplit(path).path for path, _ in self.asked]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    backend: Backend

    def do_GET(self) -> None:
        self.backend.asked.append((self.path, dict(self.headers)))
        answer = self.backend.answers.get(urllib.parse.urlsplit(self.path).path, json_answer(b"", 404))
        self.close_connection = True
        with suppress(BrokenPipeError, ConnectionResetError):  # a client that gave up
            answer(self)

    def log_message(self, *args: object) -> None:
        pass


def json_answer(
    body: bytes, status: int = 200, *, chunked: bool = False, length: int | None = None
) -> Answer:
    """``body`` with ``status``: with its ``Content-Length`` (``length`` to claim another), or chunked."""

    def answer(handler: _Handler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            for at in range(0, len(body), 1 << 16):
                part = body[at : at + (1 << 16)]
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            handler.wfile.write(b"0\r\n\r\n")
            return
        handler.send_header("Content-Length", str(len(body) if length is None else length))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def redirect(location: str, status: int = 302) -> Answer:
    def answer(handler: _Handler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


def _trickle(handler: _Handler, head: bytes, drip: bytes) -> None:
    """``head`` at once, then one byte of ``drip`` (repeated) every ``TRICKLE_S`` until the client hangs up
    (recorded) or ``TRICKLE_FOR_S`` passed."""
    handler.wfile.write(head)
    handler.wfile.flush()
    ends = time.monotonic() + TRICKLE_FOR_S
    at = 0
    while time.monotonic() < ends:
        try:
            handler.wfile.write(drip[at % len(drip) : at % len(drip) + 1])
            handler.wfile.flush()
        except OSError:
            handler.backend.hung_up.set()
            return
        at += 1
        time.sleep(TRICKLE_S)


def trickled_body(body: bytes = b'{"data": ["' + b"a" * 100 + b'"]}') -> Answer:
    """A body announced whole (``Content-Length``) and sent a byte at a time."""

    def answer(handler: _Handler) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        _trickle(handler, head, body)

    return answer


def trickled_headers() -> Answer:
    """A status line, then a header sent a byte at a time, never ended."""

    def answer(handler: _Handler) -> None:
        _trickle(handler, b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a")

    return answer


@contextmanager
def backend_server() -> Iterator[Backend]:
    """A ``Backend`` serving on a free port until the block ends."""
    backend = Backend()
    handler = type("Handler", (_Handler,), {"backend": backend})
    httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    backend.url = f"http://{HOST}:{httpd.server_address[1]}"
    try:
        yield backend
    finally:
        httpd.shutdown()
        httpd.server_close()


def jaeger_search(backend: Backend, answers: dict[str, bytes]) -> None:
    """Answer as Jaeger's query service searches: ``/api/services`` names the services of ``answers``, and
    ``/api/traces?service=NAME`` answers that service's recorded v1 answer (``{"data": [trace, ...]}``;
    a service not there: no trace)."""
    services = {"data": sorted(answers), "total": len(answers), "limit": 0, "offset": 0, "errors": None}
    backend.answers["/api/services"] = json_answer(json.dumps(services).encode())

    def search(handler: _Handler) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        body = answers.get(query.get("service", [""])[0], b'{"data": [], "total": 0, "errors": null}')
        json_answer(body)(handler)

    backend.answers["/api/traces"] = search
