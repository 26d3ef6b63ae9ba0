"""``toolspan serve``: receive OTLP into SQLite and serve every bridge format over HTTP and SSE (needs
``toolspan[server]``); the flags map one to one onto ``toolspan.server.ServerConfig``."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

from toolspan.cli._help import HelpFormatter
from toolspan.cli._options import Option, add_options
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


_DESCRIPTION = (
    "Receive OTLP (HTTP and gRPC) into SQLite and serve every bridge format over HTTP/SSE.\n"
    "Open http://HOST:PORT/traces in a browser (/ leads there): every run, each with its live trace\n"
    "page; /inbox: the tool calls waiting for a decision (with --token, the pages ask for the token\n"
    "and keep it in that browser tab only). Send spans with OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:PORT\n"
    "and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or gRPC on --grpc-port). The defaults are OTLP's\n"
    "own ports, so an OpenTelemetry Collector or Jaeger running here holds them already: then choose\n"
    "others with --port and --grpc-port."
)

# Every flag of ``toolspan serve`` and the ``ServerConfig`` field it sets (``run`` sets the rest: the store,
# the token and the deciders, which also come from the environment, the gRPC port and the parse workers).
OPTIONS: tuple[Option, ...] = (
    Option(
        ("--db",),
        "SQLite file (WAL; created if missing), or a postgresql:// URL for replicas sharing one store"
        " (or TOOLSPAN_DATABASE_URL; default toolspan.db)",
    ),
    Option(("--host",), "address to bind", default="127.0.0.1", field="host"),
    Option(
        ("--port",),
        "HTTP port: OTLP/HTTP, API, streams",
        _number(int, 0, 65535, "a port"),
        4318,
        field="port",
    ),
    Option(("--grpc-port",), "OTLP/gRPC port (-1: no gRPC)", _number(int, -1, 65535, "a port"), 4317),
    Option(
        ("--token",),
        "the application's bearer token: it may send spans and read, never decide (or TOOLSPAN_SERVER_TOKEN)",
        _token,
    ),
    Option(
        ("--decider",),
        "a decider's bearer token: it may read, decide and cancel tool calls (the control channel),"
        " recorded as NAME (repeat; or TOOLSPAN_DECIDERS=name=token,...)",
        _decider,
        metavar="NAME=TOKEN",
        action="append",
    ),
    Option(("--cors-origin",), "allowed frontend origin (repeat)", action="append", field="cors_origins"),
    Option(
        ("--max-body-bytes",),
        "request size limit (413)",
        _number(int, 1024, what="bytes"),
        16 << 20,
        field="max_body_bytes",
    ),
    Option(
        ("--idle-timeout",),
        "seconds before an open tool is SEALED",
        _number(float, _MIN_S, what=_SECONDS),
        300.0,
        field="idle_timeout_s",
    ),
    Option(
        ("--retention",),
        "drop traces older than this (seconds)",
        _number(float, 1, what=_SECONDS),
        field="retention_s",
    ),
    Option(
        ("--max-spans",),
        "drop oldest traces beyond this many spans",
        _number(int, 1, what="spans"),
        field="max_spans",
    ),
    Option(
        ("--stale-after",),
        "seconds after its application stopped asking for its decision that a waiting call leaves the"
        " control channel's inbox",
        _number(float, _MIN_S, what=_SECONDS),
        60.0,
        field="stale_after_s",
    ),
    Option(
        ("--heartbeat",),
        "seconds between stream heartbeats",
        _number(float, _MIN_S, what=_SECONDS),
        15.0,
        field="heartbeat_s",
    ),
    Option(
        ("--send-timeout",),
        "drop a stream client stuck this long",
        _number(float, _MIN_S, what=_SECONDS),
        10.0,
        field="send_timeout_s",
    ),
    Option(
        ("--delta-buffer",),
        "text deltas a stream client may lag behind at most",
        _number(int, 1, what="deltas"),
        1000,
        field="delta_buffer",
    ),
    Option(
        ("--parse-workers",),
        "processes parsing OTLP/HTTP trace bodies (default 1 with 2+ cores; 0: in-process)",
        _number(int, 0, 64, "processes"),
        metavar="N",
    ),
    Option(
        ("--allowed-host",),
        "host name to serve besides IP addresses, localhost and --host (repeat; '*': any name);"
        " other Host headers get 403 (DNS rebinding guard)",
        _host_name,
        metavar="NAME",
        action="append",
        field="allowed_hosts",
    ),
    Option(
        ("--max-connections",),
        "open HTTP connections at most, streams included (503 beyond)",
        _number(int, 1, what="connections"),
        1000,
        field="max_connections",
    ),
    Option(
        ("--read-timeout",),
        "seconds a client has to send its request headers and each piece of its body",
        _number(float, _MIN_S, what=_SECONDS),
        10.0,
        field="read_timeout_s",
    ),
    Option(
        ("--auth-failures",),
        "wrong bearer tokens one client address may send within --auth-window before its requests with a"
        " token get 429 with Retry-After (0: no limit)",
        _number(int, 0, what="tokens"),
        10,
        field="auth_failures",
        metavar="N",
    ),
    Option(
        ("--auth-window",),
        "seconds over which --auth-failures counts one address's wrong tokens",
        _number(float, _MIN_S, what=_SECONDS),
        60.0,
        field="auth_window_s",
        metavar="SECONDS",
    ),
    Option(
        ("--tempo",), "read traces not held here from Tempo", backend_url, metavar="URL", field="tempo_url"
    ),
    Option(
        ("--jaeger",),
        "read traces not held here from Jaeger, and list its runs",
        backend_url,
        metavar="URL",
        field="jaeger_url",
    ),
    Option(
        ("--backend-timeout",),
        "seconds each answer of --tempo or --jaeger may take to come whole (502 beyond)",
        _number(float, _MIN_S, what=_SECONDS),
        10.0,
        field="backend_timeout_s",
        metavar="SECONDS",
    ),
)


def add_parser(sub: Any) -> None:
    """``toolspan serve``: the live bridge server (needs ``toolspan[server]``)."""
    serve = sub.add_parser(
        "serve",
        help="receive OTLP and serve the bridge formats over HTTP and SSE; the trace list at /traces",
        description=_DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    add_options(serve, OPTIONS)


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``ServerConfig`` fields the flags set (a repeated flag as a tuple)."""
    fields = {}
    for option in OPTIONS:
        if option.field is not None:
            value = getattr(args, option.name)
            fields[option.field] = tuple(value) if option.action == "append" else value
    return fields


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
    fields = _fields(args)
    if args.parse_workers is not None:  # else the configuration's default (by the cores)
        fields["parse_workers"] = args.parse_workers
    config = ServerConfig(
        **fields,
        db=args.db or _env.get(_env.TOOLSPAN_DATABASE_URL) or _env.TOOLSPAN_DATABASE_URL.default,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port,
        token=token,
        deciders=tuple(deciders),
    )
    return serve(config)
