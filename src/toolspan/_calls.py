"""Execute a model's tool calls against a registry, one tool span per call, results shaped for the model.

    results = toolspan.run_tool_calls(message.tool_calls, {"add": add})   # OpenAI
    messages.append({"role": "user", "content": toolspan.run_tool_calls(blocks, tools)})  # Anthropic

Accepted calls: OpenAI Chat Completions ``tool_calls`` (or the whole assistant message), OpenAI
Responses ``function_call`` items, Anthropic ``tool_use`` blocks (or a whole assistant message / its
``content`` list; text, thinking and server-side tool blocks are skipped); dicts or SDK objects.

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
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from opentelemetry import trace as trace_api

from toolspan import _tool
from toolspan._serialize import to_json_text

_logger = logging.getLogger(__name__)

__all__ = ["Approver", "ToolCall", "arun_tool_calls", "run_tool_calls"]

Api = Literal["openai", "openai_responses", "anthropic"]
Decision = Union[bool, str, tuple[Union[bool, str], Union[str, None]]]
Approver = Callable[["ToolCall"], Union[Decision, Awaitable[Decision]]]

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


# --- parsing the model's calls ------------------------------------------------------------------


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _call_items(calls: Any) -> list[Any]:
    """The individual call items of ``calls`` (a list, or a whole assistant message)."""
    if isinstance(calls, (list, tuple)):
        return list(calls)
    if isinstance(calls, (str, bytes)) or calls is None:
        raise TypeError(f"calls must be a list of tool calls or an assistant message, not {calls!r:.80}")
    tool_calls = _get(calls, "tool_calls")
    if tool_calls is not None:  # OpenAI assistant message
        return list(tool_calls)
    content = _get(calls, "content")
    if isinstance(content, (list, tuple)):  # Anthropic assistant message
        return list(content)
    if _get(calls, "function") is not None or _get(calls, "type") in ("tool_use", "function_call"):
        return [calls]
    if isinstance(calls, Mapping) or "content" in _names(calls):
        return []  # a message without tool calls (OpenAI tool_calls=None, or text-only content)
    if isinstance(calls, Iterable):
        return list(calls)
    raise TypeError(f"calls must be a list of tool calls or an assistant message, not {calls!r:.80}")


def _names(obj: Any) -> set[str]:
    try:
        return set(dir(obj))
    except Exception:
        return set()


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
    if function is not None:
        api: Api = "openai"
        call_id, name, raw_args = _get(item, "id"), _get(function, "name"), _get(function, "arguments")
    elif kind == "tool_use":
        api = "anthropic"
        call_id, name, raw_args = _get(item, "id"), _get(item, "name"), _get(item, "input")
    elif kind == "function_call":
        api = "openai_responses"
        call_id, name, raw_args = _get(item, "call_id"), _get(item, "name"), _get(item, "arguments")
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

# Instrumented (and approval-gated) versions of registry entries: entry -> {(name, provider): wrapper}.
_CACHE: weakref.WeakKeyDictionary[Any, dict[tuple[str, int], Callable[..., Any]]] = (
    weakref.WeakKeyDictionary()
)


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


def _instrumented(fn: Any, name: str, provider: trace_api.TracerProvider | None) -> Callable[..., Any]:
    key = (name, id(provider) if provider is not None else 0)
    try:
        per_fn = _CACHE.get(fn)
    except TypeError:  # not weak-referenceable or not hashable: instrument on every call
        per_fn = None
    if per_fn is not None and key in per_fn:
        return per_fn[key]
    info = _tool.tool_info(fn)
    if info is not None:
        body, wrap_kwargs = info.func, dict(
            name=info.name, description=info.description, tool_type=info.tool_type
        )
    else:
        body, wrap_kwargs = fn, {"name": name}
    wrapper: Callable[..., Any] = _tool.wrap(_gated(body), tracer_provider=provider, **wrap_kwargs)
    try:
        _CACHE.setdefault(fn, {})[key] = wrapper
    except TypeError:
        pass
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


def _gated(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` behind the approval check, same signature and kind, so the check runs in its tool span."""
    if inspect.isasyncgenfunction(body):

        @functools.wraps(body)
        async def agen(*args: Any, **kwargs: Any) -> Any:
            await _check_async()
            async for item in body(*args, **kwargs):
                yield item

        return agen
    if inspect.iscoroutinefunction(body):

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
        ctx = contextvars.copy_context()
        return await asyncio.to_thread(ctx.run, _execute, job, loop)
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
    ``"PermissionDenied: <note>"``). An approver that raises denies. Raises ``TypeError`` only when
    ``calls`` or ``tools`` is not in a recognized shape (before running anything).
    """
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
