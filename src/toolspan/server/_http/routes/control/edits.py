"""Whether a decider's edit of a waiting call's arguments fits the tool's parameters, as the call recorded
them: its JSON Schema (``toolspan.tool.parameters``, written by ``toolspan`` when a call asks for its
approval; else OpenInference's ``tool.parameters``). Checked with ``jsonschema`` (the ``server`` extra)
before the edit is stored: an edit that does not fit (a string for an ``int``, a missing required
parameter, one the tool does not take) is refused with the field and the reason (422), and so is an edit of
a call that recorded no schema, or one whose schema cannot be checked: it is never passed on unchecked.

A schema comes from whoever sent the span, so it is read as untrusted:

- at most ``MAX_SCHEMA_BYTES``, strict JSON, a valid schema of a draft this server knows (a ``$schema`` it
  does not know is refused, never looked up);
- nothing is ever fetched: references (``$ref``, ``$dynamicRef``, ``$recursiveRef``, relative to the
  ``$id`` they sit under) resolve only inside the recorded schema, through a ``referencing`` registry that
  holds the schema's own resources and refuses to retrieve anything else. Every reference is resolved
  before the edit is checked; one that does not resolve inside the schema refuses the edit, naming it;
- the work of one check is bounded: every keyword the check applies (each level of a ``$ref`` or ``allOf``
  included) spends one of ``MAX_CHECK_STEPS``; past them the check stops and the edit is refused, so a
  schema whose references branch out (forty ``$defs`` each ``allOf`` two refs to the next: 2^40 checks)
  frees its thread at once;
- regular expressions (``pattern``, ``patternProperties``) run only on the policy's linear-time engine
  (RE2: ``google-re2``, the ``policy`` extra): without it, or for a pattern RE2 refuses, a schema with
  patterns cannot be checked (a backtracking engine would let a schema stall the server).
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.errors import ToolspanError
from toolspan.policy import PatternError

__all__ = ["MAX_CHECK_STEPS", "MAX_SCHEMA_BYTES", "edit_problem", "recorded_schema"]

MAX_SCHEMA_BYTES: Final = 64 * 1024
# Keywords one check applies at most (a tool's usual schema takes tens; see docs/operations.md).
MAX_CHECK_STEPS: Final = 20000
_PATTERN_KEYS: Final = frozenset({"pattern", "patternProperties"})
_REFERENCES: Final = ("$ref", "$dynamicRef", "$recursiveRef")
_DEFAULT_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


class _Unchecked(ToolspanError, ValueError):
    """Why the recorded schema cannot check an edit (a 422's reason)."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps


# The budget of the check running in this context; none outside a check (every keyword is refused there).
_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("toolspan_edit_budget", default=None)


def recorded_schema(attributes: Mapping[str, Any]) -> Any:
    """The parameter schema a tool span recorded (its JSON text), ``None`` when none."""
    for key in (sc.TOOLSPAN_TOOL_PARAMETERS, sc.OI_TOOL_PARAMETERS):
        value = attributes.get(key)
        if isinstance(value, str):
            return value
    return None


def _walk(schema: Any) -> Iterator[Any]:
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _linear_validators() -> dict[str, Any]:
    """``pattern`` and ``patternProperties`` on the policy's linear-time engine (RE2): a pattern it cannot
    run (RE2 not installed, a backreference) fails the check (``PatternError``), never a backtracking try."""
    from jsonschema.exceptions import ValidationError

    from toolspan.policy import compile_pattern

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not compile_pattern(patrn).search(instance):
            yield ValidationError(f"{instance!r:.80} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            compiled = compile_pattern(patrn)
            for key, value in instance.items():
                if compiled.search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    return {"pattern": pattern, "patternProperties": pattern_properties}


def _spend() -> _Budget:
    """One step of the running check's budget (``_Unchecked`` when none is left, or outside a check)."""
    budget = _BUDGET.get()
    if budget is None or budget.left <= 0:
        raise _Unchecked(
            f"checking an edit against the recorded parameter schema takes over {MAX_CHECK_STEPS} steps"
            " (its references or subschemas branch out without bound)"
        )
    budget.left -= 1
    return budget


def _charged(errors: Iterable[Any]) -> Iterator[Any]:
    """``errors``, each spending a step as it passes a level (one found deep passes every level above)."""
    for found in errors:
        _spend()
        yield found


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """``keyword`` spending one step each time it is applied, and one for each error it passes up."""

    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend()
        errors = keyword(validator, value, instance, schema)
        return None if errors is None else _charged(errors)

    return counted


@functools.cache
def _bounded(cls: Any, linear: bool) -> Any:
    """The validator class ``cls`` with every keyword counted against the check's budget (and, ``linear``,
    patterns on RE2), made once per class."""
    import jsonschema

    keywords = dict(cls.VALIDATORS)
    if linear:
        keywords.update(_linear_validators())
    return jsonschema.validators.extend(cls, {k: _counted(v) for k, v in keywords.items()})


def _refuse_retrieval(uri: str) -> Any:
    """The registry's retrieval: nothing outside the recorded schema is ever fetched or read."""
    raise _Unchecked(f"the recorded parameter schema refers outside itself ({uri[:80]!r})")


def _dialect(schema: dict[str, Any]) -> Any:
    """The ``referencing`` specification the schema's ``$schema`` names (the latest draft when none)."""
    import referencing.jsonschema
    from referencing.jsonschema import UnknownDialect

    dialect = schema.get("$schema", _DEFAULT_DIALECT)
    if not isinstance(dialect, str):
        raise _Unchecked("the recorded parameter schema's $schema is not a string")
    try:
        return referencing.jsonschema.specification_with(dialect)
    except UnknownDialect:
        raise _Unchecked(
            f"the recorded parameter schema names a $schema this server does not know ({dialect[:80]!r})"
        ) from None


def _unresolved(ref: str) -> _Unchecked:
    if ref.startswith("#"):
        return _Unchecked(f"the recorded parameter schema refers to {ref[:80]!r}, which is not in it")
    return _Unchecked(f"the recorded parameter schema refers outside itself ({ref[:80]!r})")


def _registry(schema: dict[str, Any], spec: Any) -> tuple[Any, str]:
    """A registry of the schema's own resources (its root and every ``$id`` inside), retrieving nothing else,
    after resolving every reference of the schema in it (``_Unchecked`` naming one that does not resolve);
    and the root's URI."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    root = spec.create_resource(schema)
    uri = root.id() or ""
    registry = Registry(retrieve=_refuse_retrieval).with_resource(uri, root).crawl()  # type: ignore[call-arg]
    stack = [(registry.resolver(base_uri=uri), schema)]
    while stack:
        resolver, node = stack.pop()
        if not isinstance(node, dict):
            continue
        resolver = resolver.in_subresource(spec.create_resource(node))
        for key in _REFERENCES:
            ref = node.get(key)
            if ref is None:
                continue
            if not isinstance(ref, str):
                raise _Unchecked(f"the recorded parameter schema has a {key} that is not a string")
            try:
                resolver.lookup(ref)
            except Unresolvable:
                raise _unresolved(ref) from None
        stack.extend((resolver, sub) for sub in spec.subresources_of(node))
    return registry, uri


def _validator(schema: dict[str, Any]) -> Any:
    """A validator of ``schema`` that resolves no reference outside it and counts its work (``_Unchecked``
    with the reason when the schema cannot check an edit)."""
    import jsonschema
    from jsonschema.exceptions import SchemaError

    spec = _dialect(schema)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as e:
        raise _Unchecked(
            f"the recorded parameter schema is not a valid JSON Schema ({e.message[:120]})"
        ) from None
    registry, _ = _registry(schema, spec)
    linear = any(not _PATTERN_KEYS.isdisjoint(node) for node in _walk(schema))
    return _bounded(cls, linear)(schema, registry=registry)


def _where(path: Any) -> str:
    out = "arguments"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[Any]:
    """The check's errors, within ``MAX_CHECK_STEPS`` (``_Unchecked`` past them, or when a reference met on
    the way does not resolve inside the schema)."""
    from referencing.exceptions import Unresolvable

    budget = _BUDGET.set(_Budget(MAX_CHECK_STEPS))
    try:
        return list(_validator(schema).iter_errors(arguments))
    except Unresolvable as e:  # a reference the walk could not see (under a keyword no draft has)
        ref = getattr(e, "ref", None)
        raise _unresolved(str(ref) if ref is not None else "?") from None
    except RecursionError:
        raise _Unchecked("the recorded parameter schema refers to itself without end") from None
    finally:
        _BUDGET.reset(budget)


def edit_problem(schema_text: Any, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` (an edit) does not fit the recorded ``schema_text`` (``recorded_schema``), naming the
    field; ``None`` when it fits."""
    if not isinstance(schema_text, str):
        return (
            "the call recorded no parameter schema (toolspan.tool.parameters), so an edit of its arguments"
            " cannot be checked: allow or deny it as it is"
        )
    if len(schema_text.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
        return f"the recorded parameter schema is over {MAX_SCHEMA_BYTES} bytes: an edit cannot be checked"
    try:
        schema = json.loads(schema_text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return "the recorded parameter schema is not JSON: an edit cannot be checked"
    if not isinstance(schema, dict):
        return "the recorded parameter schema is not a JSON Schema object: an edit cannot be checked"
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        return "checking an edit needs jsonschema (toolspan's server extra): install it to allow edits"
    try:
        errors = _errors(schema, arguments)
    except PatternError as e:
        return (
            f"the recorded parameter schema has a pattern this server cannot check ({e}): an edit cannot be"
            " checked"
        )
    except _Unchecked as e:
        return f"{e}: an edit cannot be checked"
    except Exception as e:  # a schema the validator cannot follow: fail closed
        return (
            f"the recorded parameter schema cannot be checked ({type(e).__name__}): an edit cannot be checked"
        )
    if not errors:
        return None
    from jsonschema.exceptions import best_match

    worst = best_match(errors)
    return f"field {_where(worst.absolute_path)!r} does not fit the tool's parameters: {worst.message[:200]}"


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")
