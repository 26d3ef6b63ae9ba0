"""Drive a generator or async generator under a span: the span's context is current at every resume,
``send``/``throw``/``close`` are forwarded exactly, and the run is told how the iteration ended."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any, Protocol

from opentelemetry import context as context_api
from opentelemetry.context import Context

__all__ = ["GeneratorRun", "drive_async", "drive_sync"]


class GeneratorRun(Protocol):
    """What a driver reports to; none of these may raise."""

    ctx: Context

    def item(self, value: Any) -> None: ...
    def ok(self, value: Any) -> None: ...
    def fail(self, exc: BaseException) -> None: ...
    def closed(self) -> None: ...


def drive_sync(gen: Generator[Any, Any, Any], start: Callable[[], GeneratorRun]) -> Generator[Any, Any, Any]:
    """Iterate ``gen`` as the consumer asks; ``start()`` is called at the first resume."""
    run = start()
    to_send: Any = None
    to_throw: BaseException | None = None
    while True:
        token = context_api.attach(run.ctx)
        try:
            item = gen.send(to_send) if to_throw is None else gen.throw(to_throw)
        except StopIteration as stop:
            context_api.detach(token)
            run.ok(stop.value)
            return stop.value
        except BaseException as exc:
            context_api.detach(token)
            run.fail(exc)
            raise
        context_api.detach(token)
        to_send, to_throw = None, None
        run.item(item)
        try:
            to_send = yield item
        except GeneratorExit:
            token = context_api.attach(run.ctx)
            try:
                gen.close()
            except BaseException as exc:
                context_api.detach(token)
                run.fail(exc)
                raise
            context_api.detach(token)
            run.closed()
            raise
        except BaseException as exc:
            to_throw = exc


async def drive_async(
    agen: AsyncGenerator[Any, Any], start: Callable[[], GeneratorRun]
) -> AsyncGenerator[Any, Any]:
    """Iterate ``agen`` as the consumer asks; ``start()`` is called at the first resume."""
    run = start()
    to_send: Any = None
    to_throw: BaseException | None = None
    while True:
        token = context_api.attach(run.ctx)
        try:
            if to_throw is None:
                item = await agen.asend(to_send)
            else:
                item = await agen.athrow(to_throw)
        except StopAsyncIteration:
            context_api.detach(token)
            run.ok(None)
            return
        except BaseException as exc:
            context_api.detach(token)
            run.fail(exc)
            raise
        context_api.detach(token)
        to_send, to_throw = None, None
        run.item(item)
        try:
            to_send = yield item
        except GeneratorExit:
            token = context_api.attach(run.ctx)
            try:
                await agen.aclose()
            except BaseException as exc:
                context_api.detach(token)
                run.fail(exc)
                raise
            context_api.detach(token)
            run.closed()
            raise
        except BaseException as exc:
            to_throw = exc
