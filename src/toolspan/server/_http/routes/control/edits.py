"""Whether a decider's edit of a waiting call's arguments fits the tool's parameters, as the call recorded
them: its JSON Schema (``toolspan.tool.parameters``, written by ``toolspan`` when a call asks for its
approval; else OpenInference's ``tool.parameters``). Checked with ``jsonschema`` (the ``server`` extra)
before the edit is stored: an edit that does not fit (a string for an ``int``, a missing required
parameter, one the tool does not take) is refused with the field and the reason (422), and so is an edit of
a call that recorded no schema, or one whose schema cannot be checked: it is never passed on unchecked.

A schema comes from whoever sent the span, so it is read as untrusted: at most ``MAX_SCHEMA_BYTES``, strict
JSON, a valid schema of its draft, no reference outside itself, and regular expressions (``pattern``,
``patternProperties``) only on the policy's linear-time engine (RE2: ``google-re2``, the ``policy`` extra):
without it, or for a pattern RE2 refuses, a schema with patterns cannot be checked (a backtracking engine
would let a schema stall the server).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.policy import PatternError

__all__ = ["MAX_SCHEMA_BYTES", "edit_problem", "recorded_schema"]

MAX_SCHEMA_BYTES: Final = 64 * 1024
_PATTERN_KEYS: Final = frozenset({"pattern", "patternProperties"})


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


def _validator(schema: dict[str, Any]) -> Any:
    """A validator of ``schema`` that resolves no reference outside it (``ValueError`` with the reason)."""
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as e:
        raise ValueError(
            f"the recorded parameter schema is not a valid JSON Schema ({e.message[:120]})"
        ) from None
    for node in _walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            raise ValueError(f"the recorded parameter schema refers outside itself ({ref[:80]!r})")
    if any(not _PATTERN_KEYS.isdisjoint(node) for node in _walk(schema)):
        cls = jsonschema.validators.extend(cls, _linear_validators())
    return cls(schema)


def _where(path: Any) -> str:
    out = "arguments"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


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
        validator = _validator(schema)
        errors = list(validator.iter_errors(arguments))
    except PatternError as e:
        return (
            f"the recorded parameter schema has a pattern this server cannot check ({e}): an edit cannot be"
            " checked"
        )
    except ValueError as e:
        return f"{e}: an edit cannot be checked"
    except Exception as e:  # an unresolvable reference, a schema the validator cannot follow: fail closed
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
