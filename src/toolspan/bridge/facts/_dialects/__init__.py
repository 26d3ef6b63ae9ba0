"""Framework conventions: one module per convention, each a ``Dialect`` record, read in ``DIALECTS``' order.

A framework's tracer says in its own attribute names what the GenAI conventions say elsewhere (a span is a
tool call, its name, its arguments, ...). Each convention is one module here holding one ``Dialect``
(``_record.py`` says what every field means); the shared readers of ``toolspan.bridge.facts`` never name a
framework: they ask the conventions of ``DIALECTS``, in its order, through the functions below.

``DIALECTS`` is every module's ``Dialect``, found when this package is imported, in increasing
``precedence`` (each convention states its own; the bands, documented in ``docs/frameworks.md``): below 30
the conventions whose tracers state a kind (OpenInference 10, OpenLLMetry 20); 30 to 89 those whose own
attributes are read as GenAI ones (the Vercel AI SDK, MLflow, Logfire, Langfuse, Genkit, Spring AI: the first
whose marker a span carries is the span's dialect, read once per span); 90 to 109 those recognised by names
or content (Google ADK, Haystack); from 110 the conventions with no markers, hooks only: the frameworks
read through another's instrumentation (DSPy, CrewAI, LlamaIndex, AutoGen, smolagents, BeeAI), then the
MCP SDK's records of its calls (MCP 170). Where two conventions' keys are on
one span, the earlier one's are read first.

**Adding a convention** (a new framework's tracer, say ``acme``):

1. its keys in ``toolspan.semconv`` (``ACME_*``), every one;
2. a module here, ``_acme.py``, holding ``ACME = Dialect(name="Acme", precedence=..., ...)``: its place
   in the order (a number of its band no other convention has), its ``markers`` (the keys
   whose presence marks a span as its own), its ``kind`` (tool / llm / agent / chain / retriever), a
   ``read`` giving the GenAI names of what it records (``tool_attributes(...)``, ``gen_ai.input.messages``,
   the model, usage) and its ``error`` text; its ``index_keys``: every key ``markers``, ``kind``, ``error``,
   ``failed``, ``other`` and the tool name read (``tests/bridge/facts/test_dialect_registry.py`` fails when
   one is missing); a hook of the record for what does not fit (no ``if acme`` in a shared module: a new
   kind of rule is a new optional field of ``Dialect``, read by the shared reader that needs it);
3. its recorded run under ``tests/corpus/acme/`` (``scripts/corpus/``), its name in
   ``tests/support/corpus.py``'s ``SETUPS`` and its lines in ``tests/frameworks/test_corpus.py``'s tables
   (its span kinds, its finish reasons), and its row in ``docs/frameworks.md``.

Nothing else: ``DIALECTS`` finds the module, and the server's index (``INDEX_KEYS``) and every shared reader
pick it up from there.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, ParamSpec, TypeVar

from toolspan.bridge.facts._dialects._record import Dialect, Requested, int_value
from toolspan.bridge.model import Span

__all__ = [
    "DIALECTS",
    "Dialect",
    "Requested",
    "asks_unrecorded_calls",
    "dialect_error",
    "dialect_failed",
    "dispatched_id",
    "every",
    "first",
    "hooks",
    "is_event_record",
    "is_transport_record",
    "int_value",
    "keys",
    "recognised_kind",
    "sent_responses",
    "stated_kind",
    "unrecorded",
    "with_dialect",
]


def _discovered() -> tuple[Dialect, ...]:
    """The ``Dialect`` of every module of this package (``_record`` holds none), in increasing precedence:
    a new convention is its module, found here, in the place its ``precedence`` says."""
    found: list[Dialect] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name != "_record":
            module = importlib.import_module(f"{__name__}.{info.name}")
            found.extend(value for value in vars(module).values() if isinstance(value, Dialect))
    return tuple(sorted(found, key=lambda d: d.precedence))


DIALECTS: Final[tuple[Dialect, ...]] = _discovered()

_STATED: Final = tuple(d for d in DIALECTS if not d.recognised and (d.markers or d.span_names))
_RECOGNISED: Final = tuple(d for d in DIALECTS if d.recognised)
_READERS: Final = tuple(d for d in DIALECTS if d.read is not None)


# Every marker of a group, for a quick test that a span carries none (most spans: GenAI's), inlined below.
_STATED_MARKERS: Final = frozenset(key for d in _STATED for key in d.markers)
_STATED_NAMES: Final = frozenset(name for d in _STATED for name in d.span_names)
_RECOGNISED_MARKERS: Final = frozenset(key for d in _RECOGNISED for key in d.markers)
_RECOGNISED_NAMES: Final = frozenset(name for d in _RECOGNISED for name in d.span_names)
_READER_MARKERS: Final = frozenset(key for d in _READERS for key in d.markers)
_READER_NAMES: Final = frozenset(name for d in _READERS for name in d.span_names)


def keys(field: Callable[[Dialect], tuple[str, ...]]) -> tuple[str, ...]:
    """Every convention's keys of one kind (``keys(lambda d: d.tool_name_keys)``), in ``DIALECTS``' order."""
    out: list[str] = []
    for dialect in DIALECTS:
        out.extend(key for key in field(dialect) if key not in out)
    return tuple(out)


_Hook = TypeVar("_Hook")


def hooks(field: Callable[[Dialect], _Hook | None]) -> tuple[_Hook, ...]:
    """Every convention's hook of one kind (``hooks(lambda d: d.failed)``), in order, the unset left out."""
    return tuple(hook for hook in map(field, DIALECTS) if hook is not None)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def first(found: tuple[Callable[_P, _R | None], ...]) -> Callable[_P, _R | None]:
    """One hook answering what the first of ``found`` to answer (not ``None``) says, each asked in order
    (a single hook is itself: the shared readers call it directly)."""
    if len(found) == 1:
        return found[0]

    def ask(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        for hook in found:
            answer = hook(*args, **kwargs)
            if answer is not None:
                return answer
        return None

    return ask


def every(tests: tuple[Callable[[Span], bool], ...]) -> Callable[[Span], bool]:
    """One test true when all of ``tests`` are (a single test is itself)."""
    if len(tests) == 1:
        return tests[0]

    def all_of(span: Span) -> bool:
        return all(test(span) for test in tests)

    return all_of


def _either(
    tests: tuple[Callable[[Mapping[str, Any]], bool], ...],
) -> Callable[[Mapping[str, Any]], bool]:
    """One test true when one of ``tests`` is (each asked in order; one test is itself)."""
    if len(tests) == 1:
        return tests[0]

    def either(attrs: Mapping[str, Any]) -> bool:
        return any(test(attrs) for test in tests)

    return either


# Whether a convention says a span (its attributes) records no call of its own (its kind is ``other``).
unrecorded: Final = _either(hooks(lambda d: d.other))
# Whether a convention's own attributes say the call failed.
dialect_failed: Final = _either(hooks(lambda d: d.failed))
_ERRORS: Final = hooks(lambda d: d.error)
# The model's id for the call a dispatching span records for the tool span under it (``None``: none).
dispatched_id: Final = first(hooks(lambda d: d.dispatched_id_of))
_EVENT_RECORDS: Final = _either(hooks(lambda d: d.event_record))
_RESPONSES: Final = hooks(lambda d: d.responses_of)


def is_event_record(span: Span) -> bool:
    """Whether a convention says tool span ``span`` records an event of its parent tool span's call (no call
    of its own): BeeAI's ``error`` event span."""
    return _EVENT_RECORDS(span.attributes)


def sent_responses(span: Span) -> dict[str, Any]:
    """``{call id: response}``: the tools' responses model call ``span`` sent back to the model, as a
    convention records them (Google ADK's request)."""
    out: dict[str, Any] = {}
    for hook in _RESPONSES:
        out.update(hook(span.attributes))
    return out


_TRANSPORT_RECORDS: Final = hooks(lambda d: d.transport_record)


def is_transport_record(span: Span) -> bool:
    """Whether a convention says tool span ``span`` is a transport library's record of a call (an MCP
    client's or server's): a leg of the call when a tool span of the same tool is above it."""
    return any(test(span) for test in _TRANSPORT_RECORDS)


_ASKS_UNRECORDED: Final = hooks(lambda d: d.asks_unrecorded_calls)


def asks_unrecorded_calls(span: Span) -> bool:
    """Whether a convention says model call ``span`` asked for tool calls it does not record."""
    return any(asks(span) for asks in _ASKS_UNRECORDED)


def stated_kind(span: Span) -> str | None:
    """The kind a tracer's own marker states for ``span``, asked before GenAI's rule for tools. A
    convention whose attributes are read as GenAI ones claims a span it marks: none after it is asked."""
    if span.attributes.keys().isdisjoint(_STATED_MARKERS) and span.name not in _STATED_NAMES:
        return None
    for dialect in _STATED:
        if dialect.marks(span):
            kind = dialect.kind(span)
            if kind is not None:
                return kind
            if dialect.read is not None:
                return None
    return None


def recognised_kind(span: Span) -> str | None:
    """The kind a convention recognises ``span`` by (names, content), asked after GenAI's rule for tools."""
    if span.attributes.keys().isdisjoint(_RECOGNISED_MARKERS) and span.name not in _RECOGNISED_NAMES:
        return None
    for dialect in _RECOGNISED:
        if dialect.marks(span):
            kind = dialect.kind(span)
            if kind is not None:
                return kind
    return None


def dialect_error(span: Span) -> str | None:
    """The error message a convention recorded as an attribute (Logfire's ``error``, Langfuse's
    ``langfuse.observation.status_message``), if any."""
    for error in _ERRORS:
        found = error(span)
        if found is not None:
            return found
    return None


# The last spans read, by their attributes' identity (the entry holds the attributes, so an id is not reused
# while cached): the readers of one span (name, arguments, requests, usage, messages) each ask for its
# dialect, which parses its JSON values once.
_MEMO_SIZE: Final = 64
_memo: OrderedDict[int, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = OrderedDict()
_memo_lock = threading.Lock()


def _dialect(span: Span, attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    key = id(attrs)
    with _memo_lock:
        hit = _memo.get(key)
        if hit is not None and hit[0] is attrs:
            return hit[1]
    dialect = next((d for d in _READERS if d.marks(span)), None)
    read = None if dialect is None or dialect.read is None else dialect.read(span)
    found = None
    if read:
        extra = {k: v for k, v in read.items() if v is not None and k not in attrs}
        found = {**extra, **attrs} if extra else None
    with _memo_lock:
        _memo[key] = (attrs, found)
        if len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return found


def with_dialect(span: Span) -> Mapping[str, Any]:
    """The span's attributes, plus the GenAI names its dialect's own attributes give (the span's win).
    Values parsed from JSON are shared by the calls on one span: readers never change them."""
    attrs = span.attributes
    if attrs.keys().isdisjoint(_READER_MARKERS) and span.name not in _READER_NAMES:
        return attrs  # asked by every reader of every span: most carry no marker
    found = _dialect(span, attrs)
    return attrs if found is None else found
