"""Settings of ``toolspan serve`` (command-line flags map one to one onto these fields)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Final

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerConfig", "default_parse_workers"]

DEFAULT_MAX_BODY_BYTES: Final = 16 << 20


def default_parse_workers() -> int:
    """One parse worker process on a machine with two cores or more, else none (parse in-process)."""
    return 1 if (os.cpu_count() or 1) >= 2 else 0


@dataclass(frozen=True, slots=True)
class ServerConfig:
    db: str = "toolspan.db"
    host: str = "127.0.0.1"
    port: int = 4318
    grpc_port: int | None = 4317
    # The application's token: it may send spans and read (``--token``).
    token: str | None = None
    # Decider tokens, ``(name, token)``: each may read, decide and cancel, as its name (``--decider``).
    deciders: tuple[tuple[str, str], ...] = ()
    cors_origins: tuple[str, ...] = ()
    # Largest request body accepted, before and after gunzip (413 beyond).
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # A waiting call whose application stopped asking for its decision this long ago leaves the inbox.
    stale_after_s: float = 60.0
    # A tool still open this long after its trace was last updated is reported SEALED.
    idle_timeout_s: float = 300.0
    # Retention: whole traces older than this (by last update) or beyond this many spans are dropped.
    retention_s: float | None = None
    max_spans: int | None = None
    heartbeat_s: float = 15.0
    # A stream client whose socket stays full this long (it stopped reading) is dropped.
    send_timeout_s: float = 10.0
    # Text deltas buffered per stream client at most (then the client is dropped).
    delta_buffer: int = 1000
    # Worker processes parsing OTLP/HTTP trace bodies beside the server process (0: parse in-process).
    parse_workers: int = field(default_factory=default_parse_workers)
    tempo_url: str | None = None
    jaeger_url: str | None = None
    # Each answer of Tempo or Jaeger (a trace not held here, Jaeger's runs in the list) comes whole within
    # this many seconds (connecting, headers, body, redirects), or the read is a 502.
    backend_timeout_s: float = 10.0
    # Host names served besides IP addresses, localhost and the bound host ("*": any); others get 403.
    allowed_hosts: tuple[str, ...] = ()
    # Open HTTP connections (streams included) served at most; beyond, requests are answered 503.
    max_connections: int = 1000
    # A client must send its request headers, and each piece of a body, within this many seconds.
    read_timeout_s: float = 10.0
    # An idle keep-alive connection is closed after this many seconds.
    keep_alive_s: float = 5.0
    # Wrong bearer tokens one client address may send within ``auth_window_s`` before its requests carrying
    # a token are answered 429 until the oldest of them is that old (0: no limit).
    auth_failures: int = 10
    auth_window_s: float = 60.0
    # Bytes of rendered trace views (tree, events, page data, ...) kept for the next read of a trace that has
    # not changed (0: none kept).
    render_cache_bytes: int = 64 * 1024 * 1024
    # Renderings are kept only for traces of at least this many spans: a smaller one is made again in about
    # what its look-up saves (``_http.renders``).
    render_min_spans: int = 64
