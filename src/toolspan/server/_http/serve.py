"""Run the server: uvicorn for HTTP and SSE, grpcio for OTLP/gRPC, one store, until a signal."""

from __future__ import annotations

import asyncio
import logging
import sys

from toolspan.server._http.app import ServerHandlers, build_app
from toolspan.server._http.config import ServerConfig
from toolspan.server._http.listen import ListenError, banner, bind_http, check_grpc_port, grpc_error
from toolspan.server._store.db import Store

__all__ = ["serve"]

_logger = logging.getLogger(__name__)


async def _retention(app: ServerHandlers) -> None:
    config = app.config
    every = 1.0 if config.retention_s is None else max(1.0, min(60.0, config.retention_s / 10))
    max_age = None if config.retention_s is None else int(config.retention_s * 1e9)
    while True:
        try:
            dropped = await asyncio.to_thread(app.store.prune, max_age_ns=max_age, max_spans=config.max_spans)
            if dropped:
                _logger.info("toolspan serve: retention dropped %d trace(s)", dropped)
        except Exception:
            _logger.exception("toolspan serve: retention failed")
        await asyncio.sleep(every)


def _refused(e: ListenError) -> int:
    sys.stderr.write(f"toolspan serve: error: {e}\n")
    return 1


def serve(config: ServerConfig) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status."""
    import uvicorn

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
    store = Store(config.db)
    starlette, app = build_app(config, store)
    grpc_server = None
    if config.grpc_port is not None:
        from toolspan.server._ingest.grpc import start_grpc

        try:
            grpc_server = start_grpc(app, config.host, config.grpc_port, config.token, config.max_body_bytes)
        except (RuntimeError, OSError) as e:
            sock.close()
            store.close()
            return _refused(grpc_error(config.host, config.grpc_port, e))
    uv = uvicorn.Server(
        uvicorn.Config(
            starlette,
            host=config.host,
            port=config.port,
            log_level="warning",
            timeout_graceful_shutdown=2,
            access_log=False,
        )
    )

    async def main() -> None:
        tasks = []
        if config.retention_s is not None or config.max_spans is not None:
            tasks.append(asyncio.create_task(_retention(app)))
        try:
            await uv.serve(sockets=[sock])
        finally:
            for task in tasks:
                task.cancel()

    host = f"[{config.host}]" if ":" in config.host else config.host
    base = f"http://{host}:{sock.getsockname()[1]}"
    grpc_at = None if config.grpc_port is None else f"{host}:{config.grpc_port}"
    sys.stderr.write(banner(base, grpc_at, config.db))
    sys.stderr.flush()
    try:
        asyncio.run(main())
    finally:
        if grpc_server is not None:
            grpc_server.stop(grace=1).wait()
        store.close()
    return 0
