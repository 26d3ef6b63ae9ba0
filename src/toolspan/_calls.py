"""Execute a model's tool calls against a registry, one tool span per call, results shaped for the model.

    results = toolspan.run_tool_calls(message.tool_calls, {"add": add})   # OpenAI
    messages.append({"role": "user", "content": toolspan.run_tool_calls(blocks, tools)})  # Anthropic

Accepted calls: OpenAI Chat Completions ``tool_calls`` (or the whole assistant message), OpenAI
Responses ``function_call`` items, Anthropic ``tool_use`` blocks (or a whole assistant message / its
``content`` list); dicts or SDK objects. Items that are not client function calls (text, thinking,
reasoning, server-side tool blocks) are skipped; an OpenAI ``custom`` tool call gets an error result.

Results, one per call and in call order: ``{"role": "tool", "tool_call_id", "content"}`` (Chat
Completions), ``{"type": "function_call_output", "call_id", "output"}`` (Responses) or ``{"type":
"tool_result", "tool_use_id", "content", "is_error"}`` (Anthropic). The content is the full JSON text
of the result (a string result too: ``"ok"`` becomes ``"\\"ok\\""``; a generator's result is the list of
what it yielded), unredacted and untruncated, or ``"<ErrorType>: <message>"`` on failure. Errors never
escape: an unknown tool, arguments that are not a JSON object, arguments that do not fit the
signature, a raising tool and a denied call all become error results (cancellation still propagates).

``run_tool_calls`` runs sync tools in a thread pool when ``parallel`` (context copied into each
worker, so the calling span stays the parent) and coroutine tools with ``asyncio.run`` in the worker
(or, with ``parallel=False``, in the calling thread when no event loop runs there, else in a helper
thread). ``arun_tool_calls`` awaits coroutine tools with ``asyncio.gather`` and runs sync tools in
``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry import trace as trace_api

from toolspan import _tool
from toolspan._serialize import to_json_text

_logger = logging.getLogger(__name__)

__all__ = ["Approver", "ToolCall", "arun_tool_calls", "run_tool_calls"]

Api = Literal["openai", "openai_responses", "anthropic"]
Decision = bool | str | tuple[bool | str, str | None]
Approver = Callable[["ToolCall"], Decision | Awaitable[Decision]]

_ALLOW = "allow"
_DENY = "deny"
_DENIED_ERROR = "PermissionDenied"
_DEFAULT_DENY_NOTE = "denied by the approver"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model, parsed: what ``approve`` is given."""

    id: str
    name: str
    arguments: dict[str, Any]
    api: Api
    raw: Any = field(default=None, repr=False, compare=False)


class ToolNotFoundError(LookupError):
    """The model called a tool that is not in the registry."""


class InvalidArgumentsError(ValueError):
    """The model's arguments are not a JSON object."""


class UnsupportedToolCallError(TypeError):
    """A kind of tool call that toolspan cannot run (an OpenAI custom tool call)."""


# --- parsing the model's calls ------------------------------------------------------------------


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _call_items(calls: Any) -> list[Any]:
    """The individual call items of ``calls`` (a list, or a whole assistant message)."""
    if isinstance(calls, (list, tuple)):
        return list(calls)
    if calls is not None and not isinstance(calls, (str, bytes)):
        tool_calls = _get(calls, "tool_calls")
        if tool_calls is not None:  # OpenAI assistant message
            return list(tool_calls)
        content = _get(calls, "content")
        if isinstance(content, (list, tuple)):  # Anthropic assistant message
            return list(content)
        if _get(calls, "function") is not None or _get(calls, "type") in ("tool_use", "function_call"):
            return [calls]
        if _has(calls, "tool_calls") or _has(calls, "content"):
            return []  # a message without tool calls (OpenAI tool_calls=None, or text-only content)
        if not isinstance(calls, Mapping) and isinstance(calls, Iterable):
            return list(calls)
    raise TypeError(f"calls must be a list of tool calls or an assistant message, not {calls!r:.80}")


def _has(obj: Any, key: str) -> bool:
    return key in obj if isinstance(obj, Mapping) else hasattr(obj, key)


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise InvalidArgumentsError(f"arguments are not valid JSON: {exc}") from None
    else:
        value = raw
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")


@dataclass
class _Parsed:
    call: ToolCall
    error: Exception | None = None


def _parse(item: Any, index: int) -> _Parsed | None:
    """Parse one item; ``None`` for a block that is not a client tool call (text, thinking...)."""
    function = _get(item, "function")
    kind = _get(item, "type")
    unsupported = False
    if function is not None:
        api: Api = "openai"
        call_id, name, raw_args = _get(item, "id"), _get(function, "name"), _get(function, "arguments")
    elif kind == "tool_use":
        api = "anthropic"
        call_id, name, raw_args = _get(item, "id"), _get(item, "name"), _get(item, "input")
    elif kind == "function_call":
        api = "openai_responses"
        call_id, name, raw_args = _get(item, "call_id"), _get(item, "name"), _get(item, "arguments")
    elif kind == "custom" and _get(item, "custom") is not None:  # OpenAI custom (free-form) tool call
        api = "openai"
        call_id, name = _get(item, "id"), _get(_get(item, "custom"), "name")
        raw_args, unsupported = None, True
    elif isinstance(kind, str):
        return None  # text, thinking, server_tool_use, ... blocks: not ours to run
    else:
        raise TypeError(
            f"calls[{index}] is not an OpenAI tool call nor an Anthropic tool_use block: {item!r:.120}"
        )
    if not isinstance(call_id, str) or not call_id:
        raise TypeError(f"calls[{index}] has no call id: {item!r:.120}")
    error: Exception | None = None
    try:
        arguments = _parse_arguments(raw_args)
    except InvalidArgumentsError as exc:
        arguments, error = {}, exc
    if unsupported:
        error = UnsupportedToolCallError("custom (free-form input) tool calls are not supported")
    return _Parsed(ToolCall(id=call_id, name=str(name or ""), arguments=arguments, api=api, raw=item), error)


def _parse_calls(calls: Any) -> list[_Parsed]:
    parsed = []
    for index, item in enumerate(_call_items(calls)):
        one = _parse(item, index)
        if one is not None:
            parsed.append(one)
    return parsed


# --- results ---------------------------------------------------------------------------------------


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, _tool.ToolDenied):
        return f"{_DENIED_ERROR}: {_denial_note(exc)}"
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _denial_note(exc: BaseException) -> str:
    note = getattr(exc, "note", None)
    if note is None:
        note = str(exc)
    return str(note) if note else _DEFAULT_DENY_NOTE


def _result(call: ToolCall, content: str, is_error: bool) -> dict[str, Any]:
    if call.api == "anthropic":
        return {"type": "tool_result", "tool_use_id": call.id, "content": content, "is_error": is_error}
    if call.api == "openai_responses":
        return {"type": "function_call_output", "call_id": call.id, "output": content}
    return {"role": "tool", "tool_call_id": call.id, "content": content}


# --- the registry ----------------------------------------------------------------------------------

# Instrumented, approval-gated versions of registry entries, by the entry's identity (a bounded LRU:
# the cached wrapper keeps its entry alive, so an unbounded cache would leak per-request callables).
_CACHE_SIZE = 512
_CACHE: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Callable[..., Any]]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _tool_name(fn: Any) -> str:
    info = _tool.tool_info(fn)
    if info is not None:
        return info.name
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"cannot name tool {fn!r:.80}: give the registry as a dict name -> callable")
    return name


def _registry(tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]]) -> dict[str, Any]:
    if isinstance(tools, Mapping):
        return dict(tools)
    registry: dict[str, Any] = {}
    for fn in tools:
        name = _tool_name(fn)
        if name in registry and registry[name] is not fn:
            raise ValueError(f"two tools are named {name!r}; give the registry as a dict")
        registry[name] = fn
    return registry


def _identity(fn: Any) -> tuple[Any, ...]:
    """What makes two registry entries the same callable (a bound method is re-created on access)."""
    if inspect.ismethod(fn):
        return (fn.__self__, fn.__func__)
    return (fn,)


def _instrumented(fn: Any, name: str, provider: trace_api.TracerProvider | None) -> Callable[..., Any]:
    """``fn`` instrumented as tool ``name`` (kept if decorated) with the approval gate inside its span."""
    objects = _identity(fn)
    key = (*map(id, objects), name, id(provider))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], (*objects, provider), strict=True)):
            _CACHE.move_to_end(key)
            return hit[1]
    info = _tool.tool_info(fn)
    if info is not None:
        # The original callable (bound for a decorated method) runs behind the gate in a new tool
        # with the same name, description and type; the user's decorated object is left as it is.
        body = getattr(fn, "__wrapped__", info.func)
        wrapper = _tool.wrap(
            _gated(body),
            name=info.name,
            description=info.description,
            tool_type=info.tool_type,
            tracer_provider=provider or info.tracer_provider,
        )
    else:
        wrapper = _tool.wrap(_gated(fn), name=name, tracer_provider=provider)
    with _CACHE_LOCK:
        _CACHE[key] = ((*objects, provider), wrapper)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return wrapper


# --- approvals ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Approval:
    approve: Approver
    call: ToolCall
    loop: asyncio.AbstractEventLoop | None  # the loop of arun_tool_calls, for async approvers


# The approval of the call being run; set by the runner around each call, read by the gate.
_APPROVAL: contextvars.ContextVar[_Approval | None] = contextvars.ContextVar(
    "toolspan_approval", default=None
)


def _normalize(value: Any) -> tuple[str, str | None]:
    note: str | None = None
    if isinstance(value, tuple) and len(value) == 2:
        value, raw_note = value
        note = None if raw_note is None else str(raw_note)
    if value is True or value == _ALLOW:
        return _ALLOW, note
    if value is False or value == _DENY:
        return _DENY, note
    raise ValueError(f"approve returned {value!r}; expected a bool, 'allow', 'deny' or (decision, note)")


def _failed_approval(exc: BaseException) -> tuple[str, str]:
    _logger.warning("toolspan: approve raised; the tool call is denied", exc_info=exc)
    return _DENY, f"approval failed: {type(exc).__name__}: {exc}"


def _decide_sync(approval: _Approval) -> tuple[str, str | None]:
    try:
        value = approval.approve(approval.call)
        if inspect.isawaitable(value):
            loop = approval.loop
            if loop is not None and loop.is_running():
                value = asyncio.run_coroutine_threadsafe(_await(value), loop).result()
            else:
                value = _run_blocking(value)
        return _normalize(value)
    except Exception as exc:
        return _failed_approval(exc)


async def _decide_async(approval: _Approval) -> tuple[str, str | None]:
    try:
        value = approval.approve(approval.call)
        if inspect.isawaitable(value):
            value = await value
        return _normalize(value)
    except Exception as exc:
        return _failed_approval(exc)


def _record(decision: tuple[str, str | None]) -> None:
    verdict, note = decision
    _tool.record_permission_decided(verdict, note=note)
    if verdict == _DENY:
        raise _tool.ToolDenied(note or _DEFAULT_DENY_NOTE)


def _check_sync() -> None:
    approval = _APPROVAL.get()
    if approval is not None:
        _tool.record_permission_required()
        _record(_decide_sync(approval))


async def _check_async() -> None:
    approval = _APPROVAL.get()
    if approval is not None:
        _tool.record_permission_required()
        _record(await _decide_async(approval))


def _gate(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` behind the approval check, same signature and kind, so the check runs in its tool span."""
    if inspect.isasyncgenfunction(body):

        @functools.wraps(body)
        async def agen(*args: Any, **kwargs: Any) -> Any:
            await _check_async()
            async for item in body(*args, **kwargs):
                yield item

        return agen
    if inspect.iscoroutinefunction(body) or inspect.iscoroutinefunction(type(body).__call__):

        @functools.wraps(body)
        async def coro(*args: Any, **kwargs: Any) -> Any:
            await _check_async()
            return await body(*args, **kwargs)

        return coro
    if inspect.isgeneratorfunction(body):

        @functools.wraps(body)
        def gen(*args: Any, **kwargs: Any) -> Any:
            _check_sync()
            return (yield from body(*args, **kwargs))

        return gen

    @functools.wraps(body)
    def func(*args: Any, **kwargs: Any) -> Any:
        _check_sync()
        return body(*args, **kwargs)

    return func


def _gated(body: Callable[..., Any]) -> Callable[..., Any]:
    """``_gate(body)`` with the docstring of the function a ``functools.partial`` wraps (not partial's)."""
    gate = _gate(body)
    if isinstance(body, functools.partial):
        gate.__doc__ = inspect.getdoc(body.func)
    return gate


# --- running ---------------------------------------------------------------------------------------


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _collect(agen: Any) -> list[Any]:
    return [item async for item in agen]


def _run_blocking(awaitable: Awaitable[Any]) -> Any:
    """Run ``awaitable`` to completion from sync code: here if no loop runs, else in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, asyncio.run, _await(awaitable)).result()


@dataclass
class _Job:
    call: ToolCall
    fn: Callable[..., Any] | None
    error: Exception | None
    approve: Approver | None


def _prepare(
    calls: Any,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    approve: Approver | None,
    provider: trace_api.TracerProvider | None,
) -> list[_Job]:
    registry = _registry(tools)
    jobs = []
    for parsed in _parse_calls(calls):
        call, error, fn = parsed.call, parsed.error, None
        if error is None:
            entry = registry.get(call.name)
            if entry is None:
                available = ", ".join(sorted(registry)) or "none"
                error = ToolNotFoundError(f"no tool named {call.name!r} (available: {available})")
            else:
                fn = _instrumented(entry, call.name, provider)
        jobs.append(_Job(call, fn, error, approve))
    return jobs


def _finish(job: _Job, outcome: Any, exc: Exception | None) -> dict[str, Any]:
    if exc is not None:
        return _result(job.call, _error_text(exc), True)
    return _result(job.call, to_json_text(outcome), False)


def _execute(job: _Job, loop: asyncio.AbstractEventLoop | None = None) -> dict[str, Any]:
    """Run one job synchronously; never raises an ``Exception``."""
    if job.fn is None:
        assert job.error is not None
        return _finish(job, None, job.error)
    approval = None if job.approve is None else _Approval(job.approve, job.call, loop)
    token = _APPROVAL.set(approval)
    try:
        with _tool.tool_call_id(job.call.id):
            outcome = job.fn(**job.call.arguments)
            if inspect.isawaitable(outcome):
                outcome = _run_blocking(outcome)
            elif inspect.isgenerator(outcome):
                outcome = list(outcome)
            elif inspect.isasyncgen(outcome):
                outcome = _run_blocking(_collect(outcome))
    except Exception as exc:
        return _finish(job, None, exc)
    finally:
        _APPROVAL.reset(token)
    return _finish(job, outcome, None)


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


async def _aexecute(job: _Job) -> dict[str, Any]:
    """Run one job from async code; never raises an ``Exception``."""
    loop = asyncio.get_running_loop()
    if job.fn is None or not _is_async(job.fn):
        return await asyncio.to_thread(_execute, job, loop)  # to_thread carries the context over
    approval = None if job.approve is None else _Approval(job.approve, job.call, loop)
    token = _APPROVAL.set(approval)
    try:
        with _tool.tool_call_id(job.call.id):
            outcome = job.fn(**job.call.arguments)
            if inspect.isasyncgen(outcome):
                outcome = await _collect(outcome)
            elif inspect.isawaitable(outcome):
                outcome = await outcome
    except Exception as exc:
        return _finish(job, None, exc)
    finally:
        _APPROVAL.reset(token)
    return _finish(job, outcome, None)


def _check_workers(max_workers: int | None) -> None:
    if max_workers is not None and (not isinstance(max_workers, int) or max_workers < 1):
        raise ValueError(f"max_workers must be a positive int or None, got {max_workers!r}")


def run_tool_calls(
    calls: Any,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    *,
    parallel: bool = True,
    approve: Approver | None = None,
    max_workers: int | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> list[dict[str, Any]]:
    """Run a model's tool calls against ``tools``; one result dict per call, in call order.

    ``approve(call)`` (optional) returns ``True``/``"allow"``, ``False``/``"deny"`` or ``(decision,
    note)``; it runs inside the tool's span, and a denied call does not run (state DENIED, result
    ``"PermissionDenied: <note>"``). An approver that raises denies. ``tracer_provider`` (default: the
    global one, or a decorated tool's own) receives the spans. Raises only for a caller's mistake, before
    running anything: ``TypeError`` when ``calls`` or ``tools`` has no recognized shape, ``ValueError``
    for two listed tools of one name or a bad ``max_workers``.
    """
    _check_workers(max_workers)
    jobs = _prepare(calls, tools, approve, tracer_provider)
    if not parallel or len(jobs) < 2:
        return [_execute(job) for job in jobs]
    workers = max_workers or min(32, len(jobs))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolspan-call") as pool:
        futures = [pool.submit(contextvars.copy_context().run, _execute, job) for job in jobs]
        return [future.result() for future in futures]


async def arun_tool_calls(
    calls: Any,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    *,
    parallel: bool = True,
    approve: Approver | None = None,
    max_workers: int | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> list[dict[str, Any]]:
    """Async ``run_tool_calls``: coroutine tools are awaited (``asyncio.gather`` when ``parallel``),
    sync tools run in ``asyncio.to_thread``; ``approve`` may be async. ``max_workers`` bounds how many
    calls run at once."""
    _check_workers(max_workers)
    jobs = _prepare(calls, tools, approve, tracer_provider)
    if not parallel or len(jobs) < 2:
        return [await _aexecute(job) for job in jobs]
    if max_workers is None:
        return list(await asyncio.gather(*(_aexecute(job) for job in jobs)))
    limit = asyncio.Semaphore(max_workers)

    async def bounded(job: _Job) -> dict[str, Any]:
        async with limit:
            return await _aexecute(job)

    return list(await asyncio.gather(*(bounded(job) for job in jobs)))
