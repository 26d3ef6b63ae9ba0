"""Execute a model's tool calls against a registry, one tool span per call, results shaped for the model.

    results = toolspan.run_tool_calls(message.tool_calls, {"add": add})   # OpenAI
    messages.append({"role": "user", "content": toolspan.run_tool_calls(blocks, tools)})  # Anthropic

Accepted calls: OpenAI Chat Completions ``tool_calls`` (or the whole assistant message, or the whole
``ChatCompletion``: its first choice), OpenAI Responses ``function_call`` items (or the whole
``Response``: its ``output``), Anthropic ``tool_use`` blocks (or a whole assistant message / its
``content`` list), Gemini parts with a ``function_call`` (or the whole ``GenerateContentResponse``: its
first candidate; a ``Content``; ``response.function_calls``); dicts or SDK objects, streaming helpers'
final messages included. Items that are not client function calls (text, thinking, reasoning,
server-side tool blocks) are skipped; an OpenAI ``custom`` tool call gets an error result.

Results, one per call and in call order: ``{"role": "tool", "tool_call_id", "content"}`` (Chat
Completions), ``{"type": "function_call_output", "call_id", "output"}`` (Responses), ``{"type":
"tool_result", "tool_use_id", "content", "is_error"}`` (Anthropic) or ``{"function_response": {"id",
"name", "response": {"output": <JSON value>}}}`` (Gemini; ``{"error": "<text>"}`` on failure, no
``id`` when the call had none; send them back as ``{"role": "user", "parts": results}``). The content
is the full JSON text of the result (a string result too: ``"ok"`` becomes ``"\\"ok\\""``; a
generator's result is the list of what it yielded; for Gemini the JSON value itself), unredacted and
untruncated, or ``"<ErrorType>: <message>"`` on failure. Errors never escape: an unknown tool,
arguments that are not a JSON object, arguments that do not fit the signature, a raising tool and a
denied call all become error results (cancellation still propagates).

``run_tool_calls`` runs sync tools in a thread pool when ``parallel`` (context copied into each
worker, so the calling span stays the parent) and coroutine tools with ``asyncio.run`` in the worker
(or, with ``parallel=False``, in the calling thread when no event loop runs there, else in a helper
thread). ``arun_tool_calls`` awaits coroutine tools with ``asyncio.gather`` and runs sync tools in
``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._approvals.approval import Approval, Approver
from toolspan._approvals.asking import APPROVAL, ApprovalRequest, check_timeout, run_blocking
from toolspan._capture.serialize import to_json_text
from toolspan._decisions import chain
from toolspan._instrument import tool as _tool
from toolspan._runner.shapes import (
    ToolCall,
    ToolCalls,
    ToolNotFoundError,
    error_text,
    parse_calls,
    result_for,
)

_logger = logging.getLogger(__name__)

__all__ = ["Approval", "Approver", "ToolCall", "arun_tool_calls", "run_tool_calls"]


# --- the registry ----------------------------------------------------------------------------------

# Instrumented versions of registry entries, by the entry's identity (a bounded LRU:
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
    """``fn`` instrumented as tool ``name`` (kept if decorated; its approval is step 2 of ``chain``)."""
    objects = _identity(fn)
    key = (*map(id, objects), name, id(provider))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], (*objects, provider), strict=True)):
            _CACHE.move_to_end(key)
            return hit[1]
    info = _tool.tool_info(fn)
    if info is not None:
        # The original callable (bound for a decorated method) runs in a new tool with the same name,
        # description and type, on the provider asked for; the user's decorated object is left as it is.
        body = getattr(fn, "__wrapped__", info.func)
        wrapper: Callable[..., Any] = _tool.tool(
            body,
            name=info.name,
            description=info.description,
            tool_type=info.tool_type,
            tracer_provider=provider or info.tracer_provider,
        )
    else:
        wrapper = _tool.tool(fn, name=name, tracer_provider=provider)
    with _CACHE_LOCK:
        _CACHE[key] = ((*objects, provider), wrapper)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return wrapper


# --- running ---------------------------------------------------------------------------------------


async def _collect(agen: Any) -> list[Any]:
    return [item async for item in agen]


@dataclass
class _Job:
    call: ToolCall
    fn: Callable[..., Any] | None
    error: Exception | None
    approve: Approver | None
    timeout: float | None = None

    def approval(self, loop: asyncio.AbstractEventLoop | None) -> ApprovalRequest | None:
        if self.approve is None:
            return None
        # The approver gets a copy of the arguments of its own: what it (or a thread of its) does to them
        # never reaches the body, which runs with another copy (``_arguments``).
        call = dataclasses.replace(self.call, arguments=copy.deepcopy(self.call.arguments))
        return ApprovalRequest(self.approve, call, loop, self.timeout)

    def arguments(self) -> dict[str, Any]:
        """The model's arguments for the body: a copy no one else holds (the caller's message, the approver,
        other threads keep theirs), so what the decision chain judges is what the body receives."""
        deciding = self.approve is not None or chain.ACTIVE[0] > 0  # (nothing judges them otherwise)
        return copy.deepcopy(self.call.arguments) if deciding else self.call.arguments


def _prepare(
    calls: ToolCalls,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    approve: Approver | None,
    provider: trace_api.TracerProvider | None,
    timeout: float | None = None,
) -> list[_Job]:
    timeout = check_timeout(timeout)
    registry = _registry(tools)
    jobs = []
    for parsed in parse_calls(calls):
        call, error, fn = parsed.call, parsed.error, None
        if error is None:
            entry = registry.get(call.name)
            if entry is None:
                available = ", ".join(sorted(registry)) or "none"
                error = ToolNotFoundError(f"no tool named {call.name!r} (available: {available})")
            else:
                fn = _instrumented(entry, call.name, provider)
        jobs.append(_Job(call, fn, error, approve, timeout))
    return jobs


def _finish(job: _Job, outcome: Any, exc: Exception | None) -> dict[str, Any]:
    if exc is not None:
        return result_for(job.call, error_text(exc), True)
    return result_for(job.call, to_json_text(outcome), False)


@contextlib.contextmanager
def _gate_mark(job: _Job) -> Any:
    """Mark the call's span as gated, for the pending processor (see ``toolspan.exporters.pending``)."""
    if job.approve is None:
        yield
        return
    token = context_api.attach(context_api.set_value(semconv.CONTEXT_APPROVAL_GATE, [True]))
    try:
        yield
    finally:
        context_api.detach(token)


def _model_id(call: ToolCall) -> contextlib.AbstractContextManager[Any]:
    """Hand the model's call id to the tool span; a Gemini call without an id gets toolspan's own."""
    return _tool.tool_call_id(call.id) if call.id else contextlib.nullcontext()


def _execute(job: _Job, loop: asyncio.AbstractEventLoop | None = None) -> dict[str, Any]:
    """Run one job synchronously; never raises an ``Exception``."""
    if job.fn is None:
        assert job.error is not None
        return _finish(job, None, job.error)
    token = APPROVAL.set(job.approval(loop))
    try:
        with _model_id(job.call), _gate_mark(job):
            outcome = job.fn(**job.arguments())
            if inspect.isawaitable(outcome):
                outcome = run_blocking(outcome)
            elif inspect.isgenerator(outcome):
                outcome = list(outcome)
            elif inspect.isasyncgen(outcome):
                outcome = run_blocking(_collect(outcome))
    except Exception as exc:
        return _finish(job, None, exc)
    finally:
        APPROVAL.reset(token)
    return _finish(job, outcome, None)


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


async def _aexecute(job: _Job) -> dict[str, Any]:
    """Run one job from async code; never raises an ``Exception``."""
    loop = asyncio.get_running_loop()
    if job.fn is None or not _is_async(job.fn):
        return await asyncio.to_thread(_execute, job, loop)  # to_thread carries the context over
    token = APPROVAL.set(job.approval(loop))
    try:
        with _model_id(job.call), _gate_mark(job):
            outcome = job.fn(**job.arguments())
            if inspect.isasyncgen(outcome):
                outcome = await _collect(outcome)
            elif inspect.isawaitable(outcome):
                outcome = await outcome
    except Exception as exc:
        return _finish(job, None, exc)
    finally:
        APPROVAL.reset(token)
    return _finish(job, outcome, None)


@contextlib.contextmanager
def _approving(approve: Approver | None) -> Any:
    """While calls with an approver run, every tool call goes through the decision chain (``chain``)."""
    if approve is None:
        yield
        return
    chain.enter()
    try:
        yield
    finally:
        chain.leave()


def _check_workers(max_workers: int | None) -> None:
    if max_workers is not None and (not isinstance(max_workers, int) or max_workers < 1):
        raise ValueError(f"max_workers must be a positive int or None, got {max_workers!r}")


def run_tool_calls(
    calls: ToolCalls,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    *,
    parallel: bool = True,
    approve: Approver | None = None,
    approve_timeout: float | None = None,
    max_workers: int | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> list[dict[str, Any]]:
    """Run a model's tool calls against ``tools``; one result dict per call, in call order.

    ``approve(call)`` (optional) returns ``True`` (allow), ``False`` (deny) or an ``Approval(decision,
    note=, by=, arguments=)`` to say more; it runs inside the tool's span, a denied call does not run (state
    DENIED, result ``"PermissionDenied: <note>"``), and an allowed call with ``arguments`` runs with those
    instead of the model's. An approver that raises
    denies; one that has not answered after ``approve_timeout`` seconds denies (``by="timeout"``).
    ``tracer_provider`` (default: the global one, or a decorated tool's own) receives the spans. Raises
    only for a caller's mistake, before running anything: ``TypeError`` when ``calls`` or ``tools`` has no
    recognized shape, ``ValueError`` for two listed tools of one name, a bad ``max_workers`` or
    ``approve_timeout``.
    """
    _check_workers(max_workers)
    jobs = _prepare(calls, tools, approve, tracer_provider, approve_timeout)
    with _approving(approve):
        if not parallel or len(jobs) < 2:
            return [_execute(job) for job in jobs]
        workers = max_workers or min(32, len(jobs))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolspan-call") as pool:
            futures = [pool.submit(contextvars.copy_context().run, _execute, job) for job in jobs]
            return [future.result() for future in futures]


async def arun_tool_calls(
    calls: ToolCalls,
    tools: Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]],
    *,
    parallel: bool = True,
    approve: Approver | None = None,
    approve_timeout: float | None = None,
    max_workers: int | None = None,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> list[dict[str, Any]]:
    """Async ``run_tool_calls``: coroutine tools are awaited (``asyncio.gather`` when ``parallel``),
    sync tools run in ``asyncio.to_thread``; ``approve`` may be async (a sync approver runs in
    ``asyncio.to_thread``, off the event loop). ``max_workers`` bounds how many calls run at once."""
    _check_workers(max_workers)
    jobs = _prepare(calls, tools, approve, tracer_provider, approve_timeout)
    with _approving(approve):
        if not parallel or len(jobs) < 2:
            return [await _aexecute(job) for job in jobs]
        if max_workers is None:
            return list(await asyncio.gather(*(_aexecute(job) for job in jobs)))
        limit = asyncio.Semaphore(max_workers)

        async def bounded(job: _Job) -> dict[str, Any]:
            async with limit:
                return await _aexecute(job)

        return list(await asyncio.gather(*(bounded(job) for job in jobs)))
