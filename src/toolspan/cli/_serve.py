"""``toolspan serve``: receive OTLP into SQLite and serve every bridge format over HTTP and SSE (needs
``toolspan[server]``); the flags map one to one onto ``toolspan.server.ServerConfig``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from toolspan.cli._help import HelpFormatter

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """``toolspan serve``: the live bridge server (needs ``toolspan[server]``)."""
    serve = sub.add_parser(
        "serve",
        help="receive OTLP and serve the bridge formats over HTTP and SSE; the trace list at /traces",
        description="Receive OTLP (HTTP and gRPC) into SQLite and serve every bridge format over HTTP/SSE.\n"
        "Open http://HOST:PORT/traces in a browser (/ leads there): every run, each with its live trace\n"
        "page. Send spans with OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:PORT and\n"
        "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or gRPC on --grpc-port). The defaults are OTLP's own\n"
        "ports, so an OpenTelemetry Collector or Jaeger running here holds them already: then choose\n"
        "others with --port and --grpc-port.",
        formatter_class=HelpFormatter,
    )
    serve.add_argument("--db", default="toolspan.db", help="SQLite file (WAL; created if missing)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve.add_argument(
        "--port", type=int, default=4318, help="HTTP port: OTLP/HTTP, the API, streams, the pages"
    )
    serve.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (-1: no gRPC)")
    serve.add_argument(
        "--token", default=None, help="bearer token for ingest and reads (or TOOLSPAN_SERVER_TOKEN)"
    )
    serve.add_argument("--cors-origin", action="append", default=[], help="allowed frontend origin (repeat)")
    serve.add_argument("--max-body-bytes", type=int, default=16 << 20, help="request size limit (413)")
    serve.add_argument(
        "--idle-timeout", type=float, default=300.0, help="seconds before an open tool is SEALED"
    )
    serve.add_argument("--retention", type=float, default=None, help="drop traces older than this (seconds)")
    serve.add_argument(
        "--max-spans", type=int, default=None, help="drop oldest traces beyond this many spans"
    )
    serve.add_argument("--heartbeat", type=float, default=15.0, help="seconds between stream heartbeats")
    serve.add_argument(
        "--send-timeout", type=float, default=10.0, help="drop a stream client stuck this long"
    )
    serve.add_argument(
        "--delta-buffer", type=int, default=1000, help="text deltas a stream client may lag behind at most"
    )
    serve.add_argument(
        "--parse-workers",
        type=int,
        default=None,
        metavar="N",
        help="processes parsing OTLP/HTTP trace bodies (default 1 with 2+ cores; 0: in-process)",
    )
    serve.add_argument("--tempo", default=None, metavar="URL", help="read traces not held here from Tempo")
    serve.add_argument("--jaeger", default=None, metavar="URL", help="read traces not held here from Jaeger")


def run(args: argparse.Namespace) -> int:
    """Run ``toolspan serve``; returns the exit status."""
    from toolspan._kernel import env as _env

    try:
        from toolspan.server import ServerConfig, serve
    except ImportError as e:
        sys.stderr.write(
            "toolspan: error: serve needs the server extra (in a checkout of toolspan:"
            f" pip install '.[server]'): {e}\n"
        )
        return 1
    config = ServerConfig(
        db=args.db,
        host=args.host,
        port=args.port,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port,
        token=args.token or _env.get(_env.TOOLSPAN_SERVER_TOKEN),
        cors_origins=tuple(args.cors_origin),
        max_body_bytes=args.max_body_bytes,
        idle_timeout_s=args.idle_timeout,
        retention_s=args.retention,
        max_spans=args.max_spans,
        heartbeat_s=args.heartbeat,
        send_timeout_s=args.send_timeout,
        delta_buffer=args.delta_buffer,
        tempo_url=args.tempo,
        jaeger_url=args.jaeger,
    )
    if args.parse_workers is not None:
        config = dataclasses.replace(config, parse_workers=max(0, args.parse_workers))
    return serve(config)
