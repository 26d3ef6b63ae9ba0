"""``plan(...)``: ``plan {name}`` spans, the steps an agent plans around its tool calls.

A plan records its input and output as OpenInference values; a decorated plan's input is its
arguments. Entered while a tool runs, a plan is a sub-plan of that tool call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from opentelemetry import trace as trace_api
from opentelemetry.context import Context

from toolspan import semconv
from toolspan._instrument.handle import Kind
from toolspan._instrument.scopes import Scope, make_scope

__all__ = ["PLAN", "plan"]


class _PlanKind(Kind):
    name = "plan"
    span_prefix = semconv.PLAN_SPAN_PREFIX

    def attributes(self, name: str, extra: dict[str, Any]) -> dict[str, Any]:
        return {semconv.TOOLSPAN_PLAN_NAME: name, semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_CHAIN}


PLAN = _PlanKind()


F = TypeVar("F", bound=Callable[..., Any])


@overload
def plan(name: F, /) -> F: ...
@overload
def plan(
    name: str | None = None,
    *,
    input: Any = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Scope: ...
def plan(
    name: Any = None,
    *,
    input: Any = None,
    context: Context | None = None,
    new_trace: bool = False,
    tracer_provider: trace_api.TracerProvider | None = None,
) -> Any:
    """A ``plan {name}`` span, as a decorator or a context manager.

    Entered while a tool runs it is a sub-plan of that tool call. ``context=`` starts it under a
    given parent (e.g. ``toolspan.extract(carrier)``); ``new_trace=True`` starts a new trace that
    links back to the parent. As a decorator, the arguments are the input and the return value the
    output.
    """
    return make_scope(
        PLAN, name, {}, input=input, context=context, new_trace=new_trace, tracer_provider=tracer_provider
    )
