"""``toolspan serve``: receive OTLP into SQLite and serve every bridge format over HTTP and SSE (needs
``toolspan[server]``); the flags map one to one onto ``toolspan.server.ServerConfig``."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable
from typing import Any

from toolspan.cli._help import HelpFormatter
from toolspan.cli._remote import backend_url

__all__ = ["add_parser", "check_token", "deciders_from", "run"]


def _number(kind: type, low: float, high: float = math.inf, what: str = "") -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` in ``low..high``; argparse turns the error into one line
    naming the flag (exit status 2)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what or kind.__name__}, got {text!r}") from None
        if not (math.isfinite(value) and low <= value <= high):
            bound = f"{low:g} or more" if high == math.inf else f"{low:g}..{high:g}"
            raise argparse.ArgumentTypeError(f"expected {what or kind.__name__} of {bound}, got {text!r}")
        return value

    return parse


def check_token(token: str) -> str | None:
    """Why ``token`` cannot be a bearer token (``None`` when it can): clients send it in an HTTP header,
    so visible ASCII only; an empty token would mean no auth at all."""
    if not token:
        return "an empty token would turn authentication off: give a token, or leave --token out"
    if not all("!" <= c <= "~" for c in token):
        return "a token is visible ASCII without spaces (it travels in an Authorization header)"
    return None


def _token(text: str) -> str:
    problem = check_token(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def _decider(text: str) -> tuple[str, str]:
    """``NAME=TOKEN`` of ``--decider`` (and of each entry of ``TOOLSPAN_DECIDERS``)."""
    name, eq, token = text.partition("=")
    if not eq or not name.strip():
        raise argparse.ArgumentTypeError(
            "expected NAME=TOKEN (the name decisions are recorded as, its token)"
        )
    problem = check_token(token)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"decider {name.strip()!r}: {problem}")
    return name.strip(), token


def deciders_from(text: str) -> list[tuple[str, str]]:
    """The deciders of ``TOOLSPAN_DECIDERS`` (``name=token,name=token``); ``ValueError`` naming the entry that
    is not ``NAME=TOKEN`` with a usable token."""
    out = []
    for n, part in enumerate(p.strip() for p in text.split(",")):
        if part:
            try:
                out.append(_decider(part))
            except argparse.ArgumentTypeError as e:
                raise ValueError(f"entry {n + 1}: {e}") from None
    return out


def _host_name(text: str) -> str:
    if not text.strip() or any(c.isspace() or c in "/?#@" for c in text.strip()):
        raise argparse.ArgumentTypeError(f"expected a host name, got {text!r}")
    return text.strip()


_SECONDS = "seconds"
_MIN_S = 0.1  # under this a heartbeat or a timeout is a busy loop or drops every client


def add_parser(sub: Any) -> None:
    """``toolspan serve``: the live bridge server (needs ``toolspan[server]``)."""
    serve = sub.add_parser(
        "serve",
        help="receive OTLP and serve the bridge formats over HTTP and SSE; the trace list at /traces",
        description="Receive OTLP (HTTP and gRPC) into SQLite and serve every bridge format over HTTP/SSE.\n"
        "Open http://HOST:PORT/traces in a browser (/ leads there): every run, each with its live trace\n"
        "page; /inbox: the tool calls waiting for a decision (with --token, the pages ask for the token\n"
        "and keep it in that browser tab only). Send spans with OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:PORT\n"
        "and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or gRPC on --grpc-port). The defaults are OTLP's\n"
        "own ports, so an OpenTelemetry Collector or Jaeger running here holds them already: then choose\n"
        "others with --port and --grpc-port.",
        formatter_class=HelpFormatter,
    )
    serve.add_argument(
        "--db",
        default=None,
        help="SQLite file (WAL; created if missing), or a postgresql:// URL for replicas sharing one store"
        " (or TOOLSPAN_DATABASE_URL; default toolspan.db)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve.add_argument(
        "--port",
        type=_number(int, 0, 65535, "a port"),
        default=4318,
        help="HTTP port: OTLP/HTTP, API, streams",
    )
    serve.add_argument(
        "--grpc-port",
        type=_number(int, -1, 65535, "a port"),
        default=4317,
        help="OTLP/gRPC port (-1: no gRPC)",
    )
    serve.add_argument(
        "--token",
        type=_token,
        default=None,
        help="the application's bearer token: it may send spans and read, never decide"
        " (or TOOLSPAN_SERVER_TOKEN)",
    )
    serve.add_argument(
        "--decider",
        action="append",
        default=[],
        type=_decider,
        metavar="NAME=TOKEN",
        help="a decider's bearer token: it may read, decide and cancel tool calls (the control channel),"
        " recorded as NAME (repeat; or TOOLSPAN_DECIDERS=name=token,...)",
    )
    serve.add_argument("--cors-origin", action="append", default=[], help="allowed frontend origin (repeat)")
    serve.add_argument(
        "--max-body-bytes",
        type=_number(int, 1024, what="bytes"),
        default=16 << 20,
        help="request size limit (413)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_number(float, _MIN_S, what=_SECONDS),
        default=300.0,
        help="seconds before an open tool is SEALED",
    )
    serve.add_argument(
        "--retention",
        type=_number(float, 1, what=_SECONDS),
        default=None,
        help="drop traces older than this (seconds)",
    )
    serve.add_argument(
        "--max-spans",
        type=_number(int, 1, what="spans"),
        default=None,
        help="drop oldest traces beyond this many spans",
    )
    serve.add_argument(
        "--stale-after",
        type=_number(float, _MIN_S, what=_SECONDS),
        default=60.0,
        help="seconds after its application stopped asking for its decision that a waiting call leaves the"
        " control channel's inbox",
    )
    serve.add_argument(
        "--heartbeat",
        type=_number(float, _MIN_S, what=_SECONDS),
        default=15.0,
        help="seconds between stream heartbeats",
    )
    serve.add_argument(
        "--send-timeout",
        type=_number(float, _MIN_S, what=_SECONDS),
        default=10.0,
        help="drop a stream client stuck this long",
    )
    serve.add_argument(
        "--delta-buffer",
        type=_number(int, 1, what="deltas"),
        default=1000,
        help="text deltas a stream client may lag behind at most",
    )
    serve.add_argument(
        "--parse-workers",
        type=_number(int, 0, 64, "processes"),
        default=None,
        metavar="N",
        help="processes parsing OTLP/HTTP trace bodies (default 1 with 2+ cores; 0: in-process)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        type=_host_name,
        metavar="NAME",
        help="host name to serve besides IP addresses, localhost and --host (repeat; '*': any name);"
        " other Host headers get 403 (DNS rebinding guard)",
    )
    serve.add_argument(
        "--max-connections",
        type=_number(int, 1, what="connections"),
        default=1000,
        help="open HTTP connections at most, streams included (503 beyond)",
    )
    serve.add_argument(
        "--read-timeout",
        type=_number(float, _MIN_S, what=_SECONDS),
        default=10.0,
        help="seconds a client has to send its request headers and each piece of its body",
    )
    serve.add_argument(
        "--tempo", type=backend_url, default=None, metavar="URL", help="read traces not held here from Tempo"
    )
    serve.add_argument(
        "--jaeger",
        type=backend_url,
        default=None,
        metavar="URL",
        help="read traces not held here from Jaeger",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``toolspan serve``; returns the exit status."""
    from toolspan._util import env as _env

    try:
        from toolspan.server import ServerConfig, serve
    except ImportError as e:
        sys.stderr.write(
            "toolspan: error: serve needs the server extra (in a checkout of toolspan:"
            f" pip install '.[server]'): {e}\n"
        )
        return 1
    token = args.token or _env.get(_env.TOOLSPAN_SERVER_TOKEN) or None
    if token is not None and (problem := check_token(token)) is not None:
        sys.stderr.write(f"toolspan serve: error: {_env.TOOLSPAN_SERVER_TOKEN.name}: {problem}\n")
        return 2
    deciders = list(args.decider)
    if not deciders and (listed := _env.get(_env.TOOLSPAN_DECIDERS)) is not None:
        try:
            deciders = deciders_from(listed)
        except ValueError as e:
            sys.stderr.write(f"toolspan serve: error: {_env.TOOLSPAN_DECIDERS.name}: {e}\n")
            return 2
    db = args.db or _env.get(_env.TOOLSPAN_DATABASE_URL) or _env.TOOLSPAN_DATABASE_URL.default
    config = ServerConfig(
        db=db,
        host=args.host,
        port=args.port,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port,
        token=token,
        deciders=tuple(deciders),
        cors_origins=tuple(args.cors_origin),
        max_body_bytes=args.max_body_bytes,
        idle_timeout_s=args.idle_timeout,
        stale_after_s=args.stale_after,
        retention_s=args.retention,
        max_spans=args.max_spans,
        heartbeat_s=args.heartbeat,
        send_timeout_s=args.send_timeout,
        delta_buffer=args.delta_buffer,
        tempo_url=args.tempo,
        jaeger_url=args.jaeger,
        allowed_hosts=tuple(args.allowed_host),
        max_connections=args.max_connections,
        read_timeout_s=args.read_timeout,
    )
    if args.parse_workers is not None:
        config = dataclasses.replace(config, parse_workers=args.parse_workers)
    return serve(config)
