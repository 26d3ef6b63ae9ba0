"""Run the server: uvicorn for HTTP and SSE, grpcio for OTLP/gRPC, one store, until a signal.

- The store is opened and checked first (``SqliteStore``): a file that cannot serve is one line on stderr
  and exit status 2, before anything listens.
- SIGINT and SIGTERM both run the shutdown path: streams and requests end, the parse workers exit, the
  store is checkpointed and closed (no WAL left behind), status 0, no traceback. A second SIGINT
  stops without waiting for open connections.
- Connections: at most ``max_connections`` at once (uvicorn's ``limit_concurrency``: 503 beyond), lowered
  to stay under the open-files limit (``connection_cap``), a connection beyond them answered 503 and closed
  as it is accepted (``listen.Listener``), idle keep-alive connections closed after ``keep_alive_s``, and a
  connection whose request headers do not arrive within ``read_timeout_s`` closed, so half-open sockets
  cannot lock clients out.
- The garbage collector (``tune_collector``): the start-up objects frozen out of its scans, young
  collections rarer and full ones ten times rarer, so a large trace's view is built in time proportional
  to its spans.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any, Final

from toolspan.server._http.app import build_app
from toolspan.server._http.auth import decider_problem, ingest_check
from toolspan.server._http.config import ServerConfig
from toolspan.server._http.listen import (
    Listener,
    ListenError,
    banner,
    bind_http,
    check_grpc_port,
    grpc_error,
)
from toolspan.server._http.state import ServerState
from toolspan.server._rows.codec import preload
from toolspan.server._rows.errors import StoreError
from toolspan.server._store.api import StoreApi, shown
from toolspan.server._store.engines import open_store

__all__ = ["serve", "tune_collector", "wildcard_host"]

_logger = logging.getLogger(__name__)
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Allocations of containers between two young collections (CPython's default: 700): the view of a
# 1,000-span trace's first read then takes 3% fewer instructions (callgrind), its objects mostly gone
# before they are scanned instead of carried into the older generations.
_YOUNG_COLLECTION_EVERY: Final = 50_000
# Middle-generation collections between two full ones (CPython's default: 10).
_FULL_COLLECTION_EVERY: Final = 100


def wildcard_host(host: str) -> bool:
    """Whether ``host`` binds every address of the machine."""
    return host.strip().strip("[]") in ("", "0.0.0.0", "::", "*")


async def _retention(state: ServerState) -> None:
    config = state.config
    every = 1.0 if config.retention_s is None else max(1.0, min(60.0, config.retention_s / 10))
    max_age = None if config.retention_s is None else int(config.retention_s * 1e9)
    while True:
        try:
            dropped = await asyncio.to_thread(
                state.store.prune, max_age_ns=max_age, max_spans=config.max_spans
            )
            if dropped:
                _logger.info("toolspan serve: retention dropped %d trace(s)", dropped)
            if max_age is not None:  # decisions and cancel requests of the control channel, as old
                await asyncio.to_thread(state.store.control.prune, time.time_ns() - max_age)
        except Exception:
            _logger.exception("toolspan serve: retention failed")
        await asyncio.sleep(every)


class _DroppedStreams(logging.Filter):
    """uvicorn's error for a response ended early: only a stream whose client stopped reading ends so
    (``EventStreamResponse``; ending it is what closes that client's connection), and that drop is
    already logged once, as a warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("ASGI callable returned without completing response")


# What an HTTP/2 client sends first: on the OTLP/HTTP port, an OTLP/gRPC exporter (the SDK's default
# protocol) pointed at the wrong port.
_HTTP2_PREFACE: Final = b"PRI * HTTP/2.0\r\n"
_HTTP2_WARN_EVERY_S: Final = 60.0


def grpc_on_http_port(peer: str, port: int | None, grpc_port: int | None) -> str:
    """The operator's message for a client that sent HTTP/2 (OTLP/gRPC) to the OTLP/HTTP port."""
    fix = (
        f"send gRPC to port {grpc_port} (OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:{grpc_port}), or"
        if grpc_port is not None
        else "this server has no gRPC (--grpc-port -1):"
    )
    return (
        f"toolspan serve: {peer} sent HTTP/2 to the OTLP/HTTP port {port}: an OTLP/gRPC exporter (the"
        f" SDK's default protocol) whose spans are lost here; {fix} keep this port with"
        " OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
    )


# What serve() builds on of uvicorn beyond its public ``Config``/``Server.serve``, checked as it starts (a
# uvicorn without one of them gets its plain protocol and server instead, with a warning saying what is lost;
# ``pyproject.toml``'s floor is the lowest version the tests run): the h11 protocol class, the methods
# ``_protocol`` overrides and the attributes its instances set (``loop``, ``transport``, ``cycle``); the
# server's ``capture_signals`` context manager, ``shutdown(sockets)`` and ``server_state.connections``.
_H11_METHODS: Final = ("data_received", "connection_made", "handle_events", "on_response_complete")
_H11_FIELDS: Final = ("loop", "transport", "cycle")


def uvicorn_gaps() -> list[str]:
    """What serve() builds on that the installed uvicorn lacks (empty: everything is there)."""
    import uvicorn

    gaps = []
    try:
        from uvicorn.protocols.http.h11_impl import H11Protocol
    except ImportError:
        return ["uvicorn.protocols.http.h11_impl.H11Protocol"]
    methods = (*_H11_METHODS, "connection_lost")
    gaps += [f"H11Protocol.{m}" for m in methods if not callable(getattr(H11Protocol, m, None))]
    init = getattr(H11Protocol.__init__, "__code__", None)
    gaps += [f"H11Protocol().{f}" for f in _H11_FIELDS if init is None or f not in init.co_names]
    server = ("capture_signals", "shutdown")
    gaps += [f"Server.{m}" for m in server if not callable(getattr(uvicorn.Server, m, None))]
    server_init = getattr(uvicorn.Server.__init__, "__code__", None)
    if server_init is None or "server_state" not in server_init.co_names:
        gaps.append("Server().server_state")
    return gaps


def _protocol(read_timeout_s: float, grpc_port: int | None = None) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers take over ``read_timeout_s``
    (from its opening, or from the end of its previous response) to arrive, and naming the mistake of a
    client that opens with HTTP/2 (an OTLP/gRPC exporter on the wrong port): one warning per client host a
    minute, and a 400 saying the same, where uvicorn only logged "Invalid HTTP request received"."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    warned: dict[str, float] = {}

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _first_bytes = True

        def data_received(self, data: bytes) -> None:
            if self._first_bytes:
                self._first_bytes = False
                if data.startswith(_HTTP2_PREFACE):
                    self._http2_here()
                    return
            super().data_received(data)

        def _http2_here(self) -> None:
            peer = self.transport.get_extra_info("peername") or ("?", 0)
            here = self.transport.get_extra_info("sockname") or ("?", None)
            message = grpc_on_http_port(f"{peer[0]}:{peer[1]}", here[1], grpc_port)
            now = time.monotonic()
            if now - warned.get(str(peer[0]), -_HTTP2_WARN_EVERY_S) >= _HTTP2_WARN_EVERY_S:
                warned[str(peer[0])] = now
                _logger.warning("%s", message)
            body = (message.removeprefix("toolspan serve: ") + "\n").encode("utf-8")
            self.transport.write(
                b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
            self.transport.close()

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(read_timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being served: its body has its own timeout (``jsonio.read_body``)
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol


async def _reap_stuck(uv: Any, state: ServerState, grace_s: float) -> None:
    """Abort connections closed with bytes still unsent for ``grace_s`` (at once when the server shuts
    down): a stream client that stopped reading was dropped, but closing its connection waits for its
    buffer to drain, which it never does (it would hold the connection, and the shutdown, forever)."""
    since: dict[Any, float] = {}
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(0.1)
        now = loop.time()
        wait = 0.0 if state.ending is not None and state.ending.is_set() else grace_s
        live = set()
        for connection in list(uv.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is None or not transport.is_closing() or not transport.get_write_buffer_size():
                continue
            live.add(connection)
            if now - since.setdefault(connection, now) >= wait:
                transport.abort()
        for gone in set(since) - live:
            del since[gone]


def _raise_open_files_limit(wanted: int) -> None:
    """Lift the soft limit on open files towards the hard one (many systems start at 1,024: less than
    ``--max-connections`` plus the store's files), as servers commonly do; quietly kept when not allowed."""
    try:
        import resource
    except ImportError:  # not on Windows
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        _logger.debug("toolspan serve: could not raise the open files limit", exc_info=True)


# Connections asyncio accepts per wake-up (uvicorn's backlog), and the descriptors kept free beside those in
# use at start and the connections (the listener refuses one beyond them at accept): the store's (SQLite's
# WAL and checkpoint connection, PostgreSQL's pool and listener), the parse workers' pipes, gRPC, the one
# being refused.
_ACCEPT_BURST: Final = 128
_FD_HEADROOM: Final = 64


def connection_cap(wanted: int) -> tuple[int, int | None]:
    """``(connections served at once, the open-files limit)``: ``wanted``, lowered so that the connections
    and every descriptor the server holds stay under the limit on open files (beyond it ``accept`` fails,
    and a new client waits in the kernel's queue until it times out, instead of being told 503)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return wanted, None
    if soft == resource.RLIM_INFINITY:
        return wanted, None
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 64  # no /proc (macOS): a generous guess
    return max(1, min(wanted, soft - in_use - _FD_HEADROOM)), int(soft)


def _uvicorn_server(config: Any, state: ServerState) -> Any:
    """A ``uvicorn.Server`` whose SIGINT/SIGTERM only start the shutdown (uvicorn's own re-raises the
    signal after it, which kills the process before the store is closed, or prints a traceback), and
    whose shutdown first ends the server's streams (they never end on their own: uvicorn would wait out
    its grace period and cancel them, with a traceback each)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            state.end_streams()
            await super().shutdown(sockets)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            def stop(sig: int, frame: FrameType | None) -> None:
                if self.should_exit and sig == signal.SIGINT:
                    self.force_exit = True
                self.should_exit = True

            previous = {sig: signal.signal(sig, stop) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def _refused(e: ListenError) -> int:
    sys.stderr.write(f"toolspan serve: error: {e}\n")
    return 1


def serve(config: ServerConfig) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status (1: a port is busy; 2: the store cannot be
    used, or the tokens cannot be told apart: a decider's token equal to the application's or another's)."""
    import uvicorn

    problem = decider_problem(config.token, config.deciders)
    if problem is not None:
        sys.stderr.write(f"toolspan serve: error: {problem}\n")
        return 2
    try:  # both ports first: a busy one is one line naming its flag, before anything is announced
        sock = bind_http(config.host, config.port)
    except ListenError as e:
        return _refused(e)
    try:
        if config.grpc_port is not None:
            check_grpc_port(config.host, config.grpc_port)
    except ListenError as e:
        sock.close()
        return _refused(e)
    try:
        store = open_store(config.db)
    except StoreError as e:
        sock.close()
        sys.stderr.write(f"toolspan serve: error: cannot use the store {e}\n")
        return 2
    preload()  # the types a first read decodes with, loaded now (and frozen out of collections with the rest)
    try:
        return _serve(config, store, uvicorn, sock)
    except KeyboardInterrupt:  # Ctrl-C before the server took over the signals
        return 0
    finally:
        store.close()


def tune_collector() -> None:
    """The garbage collector of a long-running server: the objects of start-up (modules, the app) kept out
    of its scans, young collections after 50,000 allocations instead of 700, and full collections ten times
    rarer. A view of a 10,000-span trace allocates hundreds of thousands of containers that live until its
    bytes are made; at the default thresholds each full collection during the build walks them all again,
    and the build grows faster than its spans."""
    gc.collect()
    gc.freeze()
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, middle, _FULL_COLLECTION_EVERY)


def _serve(config: ServerConfig, store: StoreApi, uvicorn: Any, sock: Listener) -> int:
    starlette, state = build_app(config, store)
    logging.getLogger("uvicorn.error").addFilter(_DroppedStreams())
    _raise_open_files_limit(config.max_connections + 256)
    cap, limit = connection_cap(config.max_connections)
    sock.cap = cap
    if cap < config.max_connections:
        sys.stderr.write(
            f"toolspan serve: warning: serving {cap} connections at once, not --max-connections"
            f" {config.max_connections}: the open-files limit is {limit} (ulimit -n), and the server's own"
            " files need the rest\n"
        )
    grpc_server = None
    grpc_port = config.grpc_port
    if config.grpc_port is not None:
        from toolspan.server._ingest.grpc import start_grpc

        try:
            grpc_server, grpc_port = start_grpc(
                state,
                config.host,
                config.grpc_port,
                ingest_check(config.token, state.auth_failures),
                config.max_body_bytes,
            )
        except (RuntimeError, OSError) as e:
            sock.close()
            return _refused(grpc_error(config.host, config.grpc_port, e))
    gaps = uvicorn_gaps()
    if gaps:
        _logger.warning(
            "toolspan serve: uvicorn %s lacks %s: served with its plain protocol and server (no header"
            " timeout, no HTTP/2 hint, no clean end of streams on shutdown); install a uvicorn the server"
            " extra allows",
            uvicorn.__version__,
            ", ".join(gaps),
        )
    uvicorn_config = uvicorn.Config(
        starlette,
        host=config.host,
        port=config.port,
        http="h11" if gaps else _protocol(config.read_timeout_s, grpc_port),
        limit_concurrency=cap,
        backlog=_ACCEPT_BURST,
        timeout_keep_alive=max(1, round(config.keep_alive_s)),
        log_level="warning",
        timeout_graceful_shutdown=2,
        access_log=False,
    )
    uv = uvicorn.Server(uvicorn_config) if gaps else _uvicorn_server(uvicorn_config, state)

    async def main() -> None:
        tasks = [] if gaps else [asyncio.create_task(_reap_stuck(uv, state, config.send_timeout_s))]
        if config.retention_s is not None or config.max_spans is not None:
            tasks.append(asyncio.create_task(_retention(state)))
        try:
            await uv.serve(sockets=[sock])
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    host = f"[{config.host}]" if ":" in config.host else config.host
    base = f"http://{host}:{sock.getsockname()[1]}"
    grpc_at = None if grpc_port is None else f"{host}:{grpc_port}"  # the bound ports: 0 picks one
    sys.stderr.write(banner(base, grpc_at, shown(config.db), token=bool(config.token)))
    if wildcard_host(config.host) and not config.token:
        sys.stderr.write(
            f"toolspan serve: warning: listening on every address of this machine ({config.host}) without"
            " a token: anyone who can reach it can read every trace and send spans; set --token (or"
            " TOOLSPAN_SERVER_TOKEN)\n"
        )
    sys.stderr.flush()
    tune_collector()
    try:
        asyncio.run(main())
    finally:
        if grpc_server is not None:
            grpc_server.stop(grace=1).wait()
    return 0
