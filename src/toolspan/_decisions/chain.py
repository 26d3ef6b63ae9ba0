"""The decision chain: whether a tool body runs, with which arguments, or what stands in for it.

``@tool`` records what happened; this chain decides. ``install()`` makes it the instrumentation's decider
(``hooks.install_decider``) and ``uninstall()`` takes it away again, as a contrib instrumentation's
``instrument()``/``uninstrument()`` do; importing this module changes nothing. What starts deciding installs
it first (``enter``: a replay entered, an approver's run; ``install_guard``: a policy). While anything decides
(``hooks.ACTIVE``, counted by ``enter``/``leave``/``install_guard`` here), each call of a decorated tool runs
these steps, in this order, inside the tool's span and before its body:

1. **policy** (``configure(policy=...)``) on the arguments the body would receive: the bound Python values,
   whole, whatever the capture settings, budget or redaction. Rules an approver can satisfy wait for step 2
   when this very call has an approver;
2. **approval** (``run_tool_calls(approve=...)``) of this call, asked once: allow, deny, or allow with edited
   arguments. A tool called from inside an approved tool's body is a call of its own, with no approver:
   its own rules apply to it wherever it is called from;
3. **policy again** on the arguments the body will now receive (the approver's edit, if any), judged anew
   from them (the approver had a copy of its own: nothing it did to that copy reaches the body), approved;
   only now is the call counted for budgets and ordering;
4. **replay** (``toolspan.replay``): the recorded call matching this one (by the model's call id, else by
   name and the model's full arguments) is served instead of the body. A thread that did not inherit the
   replay's context still replays: a body never runs silently while a replay is active;
5. the **body**, with the arguments of step 3; when the approver also delivers cancel requests (it has
   ``supervise``, as ``toolspan.ServerApprover``), under its supervision (``cancel``): a cancelled call raises
   ``ToolCancelled`` (an async body's task is cancelled; a generator gets it at its next yield; a sync body at
   ``check_cancelled()``), and a call cancelled before its body starts never runs it.

A step that refuses raises ``ToolDenied`` (the span ends DENIED); anything unexpected in a step denies too.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterable
from typing import Final, NamedTuple, Protocol, cast

from opentelemetry import context as context_api

from toolspan._approvals import asking as _approvals
from toolspan._approvals import cancel as _cancel
from toolspan._approvals.asking import ApprovalRequest
from toolspan._capture import serialize as _serialize
from toolspan._instrument import hooks
from toolspan._instrument import permissions as _permissions
from toolspan._instrument.context import current_execution_id
from toolspan._instrument.hooks import ACTIVE
from toolspan._instrument.info import Arguments, Body, CallArgs, CallKind, CallKwargs, Serve, ToolInfo
from toolspan._instrument.outcome import ToolDenied
from toolspan._util import env as _env
from toolspan._util.words import DENY
from toolspan.errors import ReplayError

__all__ = [
    "ACTIVE",
    "GUARD",
    "SESSION_KEY",
    "UNJUDGED_BY",
    "Guard",
    "Session",
    "active_sessions",
    "arguments_of",
    "current_session",
    "enter",
    "install",
    "install_guard",
    "leave",
    "substitute",
    "uninstall",
]


class Guard(Protocol):
    def check(
        self,
        name: str,
        arguments: Arguments,
        *,
        approver: bool,
        approved: bool,
        final: bool,
        edited: Arguments | None = None,
    ) -> None:
        """Raise ``ToolDenied`` when the call breaks the policy (see ``guard.PolicyGuard.check``)."""
        ...


class Session(Protocol):
    def prepare(self, info: ToolInfo, arguments: Arguments) -> Serve | None:
        """What to give instead of running the body (``None``: run it), for the model's ``arguments``."""
        ...


# The replay session lives in the OpenTelemetry context, so it follows the calling span into threads and
# tasks; the sessions entered in the process are listed too, for a thread that did not inherit a context.
SESSION_KEY: Final = context_api.create_key("toolspan-replay-session")
_SESSIONS: Final[list[Session]] = []

# Who denies a call whose arguments cannot be judged (``arguments_of``).
UNJUDGED_BY: Final = "toolspan"

# The policy guard of the process (``configure(policy=...)``), if any.
GUARD: Final[list[Guard | None]] = [None]
_lock: Final = threading.Lock()


def enter(session: Session | None = None) -> None:
    """Something that decides starts (a replay ``session``, or an approver's run)."""
    install()
    with _lock:
        ACTIVE[0] += 1
        if session is not None:
            _SESSIONS.append(session)


def leave(session: Session | None = None) -> None:
    """It ends."""
    with _lock:
        ACTIVE[0] -= 1
        if session is not None:
            _SESSIONS.remove(session)


def install_guard(guard: Guard | None) -> None:
    """Make ``guard`` the process's policy guard (``None`` removes it)."""
    if guard is not None:
        install()
    with _lock:
        if (GUARD[0] is None) != (guard is None):
            ACTIVE[0] += 1 if guard is not None else -1
        GUARD[0] = guard


_replays = [0]  # replays running in this process (``mark_processes``)


def mark_processes(running: bool) -> None:
    """A replay starts (``True``) or ends: while one runs, the processes this one starts inherit
    ``TOOLSPAN_REPLAYING``, so a tool called there refuses to run its body (``_Inherited``)."""
    with _lock:
        _replays[0] += 1 if running else -1
        _env.put(_env.TOOLSPAN_REPLAYING, "1" if _replays[0] > 0 else None)


class _Inherited:
    """The replay of the process that started this one: its records are not here, so a tool called in this
    process cannot be served from them, and its body does not run either."""

    def prepare(self, info: ToolInfo, arguments: Arguments) -> Serve | None:
        raise ReplayError(
            f"tool {info.name!r} was called in a process started while a replay ran (TOOLSPAN_REPLAYING): the"
            " replay's records are not in this process, so its body does not run (call it in the replaying"
            " process, or replay in this one)"
        )


def current_session() -> Session | None:
    """The replay session of the current context, if any."""
    session: Session | None = context_api.get_value(SESSION_KEY)  # type: ignore[assignment]
    return session


def active_sessions() -> list[Session]:
    """The replay sessions entered anywhere in the process, oldest first."""
    with _lock:
        return list(_SESSIONS)


class _Plan(NamedTuple):
    args: CallArgs
    kwargs: CallKwargs
    serve: Serve | None  # what stands in for the body (replay), else None
    supervisor: _cancel.Supervisor | None = None  # delivers cancel requests to the body, if any


def arguments_of(info: ToolInfo, instance: object, args: CallArgs, kwargs: CallKwargs) -> Arguments:
    """The arguments the body receives, by parameter name, as whole JSON values at any depth (no budget, no
    redaction, no depth limit: ``serialize.whole_values``). Arguments that cannot be judged as the body will
    read them (a container that overrides its reads, a value that fails to convert) deny the call."""
    try:
        whole: Arguments = _serialize.whole_values(info.params.bind(instance, args, kwargs))
        return whole
    except _serialize.Unjudgeable as e:
        note = f"the arguments of {info.name!r} cannot be judged: {e}"
        _permissions.record_permission_decided(DENY, note=note, by=UNJUDGED_BY)
        raise ToolDenied(note) from None


def _first(
    info: ToolInfo, instance: object, args: CallArgs, kwargs: CallKwargs
) -> tuple[ApprovalRequest | None, Arguments | None]:
    request = _approvals.claim()
    guard = GUARD[0]
    model = None
    if guard is not None:
        model = arguments_of(info, instance, args, kwargs)
        guard.check(info.name, model, approver=request is not None, approved=False, final=request is None)
    return request, model


def _last(  # noqa: PLR0917
    info: ToolInfo,
    instance: object,
    args: CallArgs,
    kwargs: CallKwargs,
    request: ApprovalRequest | None,
    model: Arguments | None,
    edited: CallKwargs | None,
) -> _Plan:
    run_args, run_kwargs = (args, kwargs) if edited is None else ((), edited)
    guard = GUARD[0]
    if guard is not None and request is not None:
        # Judged again now, not from the copy taken before the approver ran: what the body will receive (the
        # runner's own copy of the model's arguments, which no approver or other thread holds; the edit).
        model = arguments_of(info, instance, args, kwargs)
        edit = None if edited is None else arguments_of(info, instance, run_args, run_kwargs)
        guard.check(info.name, model, approver=True, approved=True, final=True, edited=edit)
    session = _session()
    serve = None
    if session is not None:
        if model is None:
            model = arguments_of(info, instance, args, kwargs)
        serve = session.prepare(info, model)
    supervisor: _cancel.Supervisor | None = None
    if request is not None and serve is None and callable(getattr(request.approve, "supervise", None)):
        supervisor = cast(_cancel.Supervisor, request.approve)
    return _Plan(run_args, run_kwargs, serve, supervisor)


def _session() -> Session | None:
    session = current_session()
    if session is not None:
        return session
    sessions = active_sessions()
    if not sessions:
        return None
    if len(sessions) == 1:
        return sessions[0]
    raise ReplayError(
        f"a tool was called in a context that belongs to no replay while {len(sessions)} replays are active:"
        " which one it belongs to cannot be told, so its body does not run (run the thread with the"
        " caller's context: contextvars.copy_context().run, or instrument threading)"
    )


def _parameters(info: ToolInfo, instance: object) -> str:
    """The JSON Schema of the tool's parameters, recorded with an approval request."""
    return info.params.schema(instance is not None)


def _decide_sync(info: ToolInfo, instance: object, args: CallArgs, kwargs: CallKwargs) -> _Plan:
    request, model = _first(info, instance, args, kwargs)
    edited = None if request is None else _approvals.ask_sync(request, _parameters(info, instance))
    return _last(info, instance, args, kwargs, request, model, edited)


async def _decide_async(info: ToolInfo, instance: object, args: CallArgs, kwargs: CallKwargs) -> _Plan:
    request, model = _first(info, instance, args, kwargs)
    edited = None if request is None else await _approvals.ask_async(request, _parameters(info, instance))
    return _last(info, instance, args, kwargs, request, model, edited)


def _supervised(plan: _Plan) -> contextlib.AbstractContextManager[_cancel.Supervision | None]:
    if plan.supervisor is None:
        return contextlib.nullcontext()
    return _cancel.supervising(plan.supervisor, current_execution_id())


def _cancellable(
    supervision: _cancel.Supervision, gen: Generator[object, object, object]
) -> Generator[object, object, object]:
    """``yield from gen``, throwing ``ToolCancelled`` into it at its next resume once cancelled."""
    to_send: object = None
    to_throw: BaseException | None = None
    try:
        while True:
            try:
                if to_throw is None and supervision.requested:
                    to_throw = supervision.error()
                item = gen.send(to_send) if to_throw is None else gen.throw(to_throw)
            except StopIteration as stop:
                return stop.value
            to_send, to_throw = None, None
            try:
                to_send = yield item
            except GeneratorExit:
                raise
            except BaseException as exc:
                to_throw = exc
    finally:
        gen.close()


async def _acancellable(
    supervision: _cancel.Supervision, agen: AsyncGenerator[object, object]
) -> AsyncIterator[object]:
    try:
        while True:
            try:
                if supervision.requested:
                    item = await agen.athrow(supervision.error())
                else:
                    item = await _cancel.run_cancellable(supervision, agen.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        await agen.aclose()


def substitute(info: ToolInfo, wrapped: Body, instance: object, kind: CallKind) -> Body:
    """``wrapped`` behind the chain: a callable of its kind (``sync``, ``async``, ``gen``, ``agen``)."""
    if kind == "async":
        run_async = cast(Callable[..., Awaitable[object]], wrapped)

        async def call_async(*args: object, **kwargs: object) -> object:
            plan = await _decide_async(info, instance, args, kwargs)
            if plan.serve is not None:
                return plan.serve()
            with _supervised(plan) as supervision:
                if supervision is None:
                    return await run_async(*plan.args, **plan.kwargs)
                return await _cancel.run_cancellable(supervision, run_async(*plan.args, **plan.kwargs))

        return call_async
    if kind == "gen":
        run_gen = cast(Callable[..., Generator[object, object, object]], wrapped)

        def call_gen(*args: object, **kwargs: object) -> Generator[object, object, object]:
            plan = _decide_sync(info, instance, args, kwargs)
            if plan.serve is not None:
                yield from cast("Iterable[object] | None", plan.serve()) or ()
                return None
            with _supervised(plan) as supervision:
                if supervision is None:
                    return (yield from run_gen(*plan.args, **plan.kwargs))
                return (yield from _cancellable(supervision, run_gen(*plan.args, **plan.kwargs)))

        return call_gen
    if kind == "agen":
        run_agen = cast(Callable[..., AsyncGenerator[object, object]], wrapped)

        async def call_agen(*args: object, **kwargs: object) -> AsyncIterator[object]:
            plan = await _decide_async(info, instance, args, kwargs)
            if plan.serve is not None:
                for item in cast("Iterable[object] | None", plan.serve()) or ():
                    yield item
                return
            with _supervised(plan) as supervision:
                agen = run_agen(*plan.args, **plan.kwargs)
                items = agen if supervision is None else _acancellable(supervision, agen)
                async for item in items:
                    yield item

        return call_agen

    def call(*args: object, **kwargs: object) -> object:
        plan = _decide_sync(info, instance, args, kwargs)
        if plan.serve is not None:
            return plan.serve()
        with _supervised(plan):
            return wrapped(*plan.args, **plan.kwargs)

    return call


# Whether the chain is the decider (``install``), and the inherited replay it entered then, if any.
_installed: Final[list[bool]] = [False]
_inherited: Final[list[Session | None]] = [None]
_install_lock: Final = threading.Lock()


def install() -> None:
    """Make the chain the instrumentation's decider (idempotent). In a process started while a replay ran
    (``TOOLSPAN_REPLAYING``), that replay is entered too (``_Inherited``): no tool body runs here."""
    with _install_lock:
        if _installed[0]:
            return
        hooks.install_decider(substitute)
        _installed[0] = True
        if _env.get(_env.TOOLSPAN_REPLAYING) and not _replays[0]:
            inherited = _inherited[0] = _Inherited()
            with _lock:
                ACTIVE[0] += 1
                _SESSIONS.append(inherited)


def uninstall() -> None:
    """Undo ``install``: tool bodies no longer go behind the chain (an inherited replay is left)."""
    with _install_lock:
        if not _installed[0]:
            return
        inherited, _inherited[0] = _inherited[0], None
        if inherited is not None:
            with _lock:
                ACTIVE[0] -= 1
                _SESSIONS.remove(inherited)
        hooks.uninstall_decider(substitute)
        _installed[0] = False
