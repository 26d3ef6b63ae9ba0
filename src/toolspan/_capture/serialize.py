"""One serializer for every captured value: JSON text that is always valid and never raises.

``dumps(value, config)`` is for telemetry: redacted (``redact``), within ``config.max_attribute_bytes``
UTF-8 bytes (``truncate``: what was cut is marked). ``to_json_text(value)`` is for tool results
returned to a model: same conversion, no redaction, no budget. Output uses ``json.dumps``' separators
(``", "``, ``": "``) and keeps non-ASCII text as is.

Conversion (anything plain JSON cannot hold): dataclass instances and pydantic (v2 and v1) models become
objects; tuples, namedtuples and deques become arrays; sets/frozensets become arrays sorted by their JSON
text; ``bytes``/``bytearray``/``memoryview`` become their UTF-8 text, or ``"base64:<data>"`` when not
UTF-8; datetimes, dates and times become ISO 8601 strings, ``timedelta`` an ISO 8601 duration
(``"P1DT2.5S"``); ``Decimal``, ``UUID`` and paths their string; an ``Enum`` its value; NaN and
infinities the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; ints too long for ``str()`` their
``hex()``; non-string keys as ``json.dumps`` writes them (bytes keys: their UTF-8 text; other key
types: their ``repr``). Anything else (generators are not consumed) becomes its ``repr()`` string, or
``"[unrepresentable <type>: <error>]"`` when that raises. A structure met again inside itself becomes
``"[cycle: <type>]"``; nesting deeper than ``MAX_DEPTH`` becomes ``"[max depth: <type>]"``.

With a budget, the walk stops early: a long string, bytes value, list or dict is read only as far as
the budget can hold, so a huge value costs what the budget costs, not what the value weighs.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import enum
import hashlib
import json
import logging
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final

from toolspan._capture import truncate as _truncate
from toolspan._capture.convert import (
    bytes_text,
    clean,
    duration,
    float_value,
    int_value,
    key_text,
    model_items,
    safe_repr,
    type_name,
)
from toolspan._capture.encode import ENCODE, nbytes
from toolspan._capture.redact import Redaction, redaction
from toolspan.config import REDACTED, Config, Redactor
from toolspan.errors import ToolspanError

__all__ = [
    "MAX_DEPTH",
    "Collector",
    "canonical",
    "digest",
    "dumps",
    "dumps_exact",
    "dumps_marked",
    "json_values",
    "redact_text",
    "to_json_text",
    "Unjudgeable",
    "whole_values",
]

_logger = logging.getLogger(__name__)

MAX_DEPTH: Final = 32
_MARGIN: Final = 256  # chars read past a cut, so a secret split by the cut is still recognised


class _Walker:
    """Turns any value into JSON-native data; with a budget, stops early (cuts are marked by Cut*)."""

    __slots__ = ("budget", "cut", "left", "redact", "redacted", "redaction", "stack")

    def __init__(self, redaction: Redaction | None, redact: Redactor | None, budget: int | None) -> None:
        self.redaction = redaction
        self.redact = redact
        self.budget = budget
        # A lower bound of the bytes written so far is subtracted; past zero nothing more can fit.
        self.left = budget if budget is not None else -1
        self.stack: set[int] = set()
        self.cut = False  # whether anything was left out (then the result needs fit to render markers)
        self.redacted = False  # whether anything was redacted (replaced, or may have been by a callback)

    def spend(self, amount: int) -> None:
        if self.budget is not None:
            self.left -= amount

    def full(self) -> bool:
        return self.budget is not None and self.left <= 0

    def call_redact(self, path: str, value: Any) -> Any:
        assert self.redact is not None
        try:
            out = self.redact(path, value)
        except Exception:
            _logger.warning("toolspan: redact callback raised for %r; value redacted", path, exc_info=True)
            self.redacted = True
            return REDACTED
        if out is not value:
            self.redacted = True
        return out

    def root(self, value: Any) -> Any:
        if self.redact is not None:
            value = self.call_redact("", value)
        return self.conv(value, 0, "")

    def conv(self, value: Any, depth: int, path: str) -> Any:
        try:
            return self._conv(value, depth, path)
        except Exception as exc:
            self.spend(16)
            return f"[unrepresentable {type_name(value)}: {type_name(exc)}]"

    def text(self, text: str) -> str:
        scrub = self.redaction
        if self.budget is not None and len(text) > max(self.left, 0):
            keep = max(self.left, 0)
            head = clean(text[: keep + _MARGIN])
            if scrub is not None:
                scrubbed = scrub.text(head)
                self.redacted = self.redacted or scrubbed != head
                head = scrubbed
            self.spend(keep + 2)
            self.cut = True
            return _truncate.cut_str(head[:keep], len(text) - keep)
        text = clean(text)
        if scrub is not None:
            scrubbed = scrub.text(text)
            self.redacted = self.redacted or scrubbed != text
            text = scrubbed
        self.spend(len(text) + 2)
        return text

    def _conv(self, value: Any, depth: int, path: str) -> Any:
        if value is None or value is True or value is False:
            self.spend(4)
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int):
            out_int = int_value(value)
            self.spend(1)
            return out_int
        if isinstance(value, float):
            out_float = float_value(value)
            self.spend(1)
            return out_float
        if isinstance(value, enum.Enum):
            return self.conv(value.value, depth, path)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self.conv_bytes(value)
        if isinstance(value, (_dt.date, _dt.time)):
            return self.text(value.isoformat())
        if isinstance(value, _dt.timedelta):
            return self.text(duration(value))
        if isinstance(value, (decimal.Decimal, uuid.UUID, PurePath)):
            return self.text(str(value))
        container = isinstance(value, (dict, list, tuple, set, frozenset, deque, Mapping))
        model = None if container else model_items(value)
        if not container and model is None:
            return self.text(safe_repr(value))
        if id(value) in self.stack:
            return self.text(f"[cycle: {type_name(value)}]")
        if depth >= MAX_DEPTH:
            return self.text(f"[max depth: {type_name(value)}]")
        self.stack.add(id(value))
        try:
            if model is not None:
                return self.mapping(model, len(model), depth, path)
            if isinstance(value, (dict, Mapping)):
                return self.mapping(value.items(), len(value), depth, path)
            if isinstance(value, (set, frozenset)):
                return self.conv_set(value, depth, path)
            if self.redaction is not None and self.redaction.is_secret_pair(value):
                self.redacted = True
                return self.sequence((value[0], REDACTED), 2, depth, path)  # a (secret name, value) pair
            return self.sequence(value, len(value), depth, path)
        finally:
            self.stack.discard(id(value))

    def conv_bytes(self, value: bytes | bytearray | memoryview) -> str:
        size = value.nbytes if isinstance(value, memoryview) else len(value)
        keep = size if self.budget is None else min(size, max(self.left, 0))
        if isinstance(value, memoryview):
            data = value[:keep].tobytes()
        else:
            data = bytes(value[:keep] if keep < size else value)
        text = bytes_text(data, size - keep)
        if self.redaction is not None and not text.startswith("base64:"):
            scrubbed = self.redaction.text(text)
            if scrubbed is not text:
                self.redacted = self.redacted or scrubbed != text
                omitted = getattr(text, "omitted", 0)
                text = _truncate.cut_str(scrubbed, omitted) if omitted else scrubbed
        self.cut = self.cut or keep < size
        self.spend(len(text) + 2)
        return text

    def mapping(self, items: Any, size: int, depth: int, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.spend(2)
        taken = 0
        scrub = self.redaction
        for raw_key, item in items:
            if self.full():
                break
            taken += 1
            key = key_text(raw_key)
            if scrub is not None:
                if scrub.is_secret(key):
                    self.spend(len(key) + len(REDACTED) + 6)
                    self.redacted = True
                    out[key] = REDACTED
                    continue
                scrubbed_key = scrub.text(key)
                self.redacted = self.redacted or scrubbed_key != key
                key = scrubbed_key
            self.spend(len(key) + 4)
            if self.redact is not None:
                child_path = f"{path}.{key}" if path else key
                out[key] = self.conv(self.call_redact(child_path, item), depth + 1, child_path)
            else:
                out[key] = self.conv(item, depth + 1, "")
        if taken < size:
            self.cut = True
            cut = _truncate.CutDict(out)
            cut.omitted = size - taken
            return cut
        return out

    def sequence(self, items: Any, size: int, depth: int, path: str) -> list[Any]:
        out: list[Any] = []
        self.spend(2)
        for index, item in enumerate(items):
            if self.full():
                break
            self.spend(2)
            child_path = "" if self.redact is None else f"{path}.{index}" if path else str(index)
            out.append(self.conv(item, depth + 1, child_path))
        if len(out) < size:
            self.cut = True
            cut = _truncate.CutList(out)
            cut.omitted = size - len(out)
            return cut
        return out

    def conv_set(self, value: set[Any] | frozenset[Any], depth: int, path: str) -> list[Any]:
        # Sorted by JSON text for a deterministic order; every element is converted to sort it.
        saved = self.budget
        self.budget = None
        try:
            items = [self.conv(item, depth + 1, path) for item in value]
        finally:
            self.budget = saved
        items.sort(key=ENCODE)
        return self.sequence(items, len(items), depth, path)


_SCALARS: Final = frozenset({int, float, bool, type(None)})
_INITIALS: Final = frozenset("BbDdTt")  # first letters of the authorization schemes ``may_hold`` knows


def _plain(value: Any, budget: int, scrub: Redaction) -> bool:
    """Whether the C encoder may write ``value`` as it is: JSON-native, surely within ``budget``, and
    holding no secret (key, pair or text). One walk that stops at the first doubt, or as soon as the
    sizes add up past the budget, so a huge value is never encoded whole."""
    if type(value) is str:  # the common result: one text
        return len(value) <= budget and not (
            ("=" in value or ":" in value or "earer" in value or "EARER" in value or value[:1] in _INITIALS)
            and scrub.may_hold(value)
        )
    scalars, initials, safe = _SCALARS, _INITIALS, scrub.safe
    if type(value) is dict and safe.issuperset(value):
        # The common case, a tool's flat arguments or result: known safe keys over scalars and plain text.
        total = 4 * len(value) + sum(map(len, value))
        for item in value.values():
            kind = type(item)
            if kind in scalars:
                continue
            if kind is not str:
                break  # something nested: the walk below decides
            total += len(item)
            if item.isalnum():  # one word: no space, "=", ":" or "://", which every secret pattern needs
                continue
            if (
                "=" in item or ":" in item or "earer" in item or "EARER" in item or item[:1] in initials
            ) and scrub.may_hold(item):
                return False
        else:
            return total <= budget
    total = 0
    stack = [(value,)]
    while stack:
        for item in stack.pop():
            kind = type(item)
            if kind in scalars:
                continue
            if kind is str:
                total += len(item)
                if total > budget:
                    return False
                if (
                    "=" in item or ":" in item or "earer" in item or "EARER" in item or item[:1] in initials
                ) and scrub.may_hold(item):
                    return False
            elif kind is dict:
                total += 4 * len(item)
                if total > budget:
                    return False
                if not safe.issuperset(item):
                    for key in item:
                        if type(key) is not str or scrub.is_secret(key) or key not in safe:
                            return False
                total += sum(map(len, item))
                stack.append(item.values())
            elif kind is list or kind is tuple:
                total += len(item)
                if total > budget or scrub.is_secret_pair(item):
                    return False
                stack.append(item)
            else:
                return False
    return total <= budget


def dumps(value: Any, config: Config) -> str:
    """JSON text of ``value`` for a span attribute: redacted, at most ``config.max_attribute_bytes``
    UTF-8 bytes, always valid JSON, never raising."""
    return _dumps_exact(value, config)[0]


def dumps_exact(value: Any, config: Config) -> tuple[str, bool]:
    """``dumps(value, config)`` and whether that text is the whole value as ``json_values`` gives it: false
    when anything may have been cut, redacted or converted (then ``digest`` tells calls apart)."""
    budget = config.max_attribute_bytes
    scrub = redaction(config.redact_keys)
    if config.redact is None and _plain(value, budget, scrub):
        # Fast path: plain JSON that fits and holds no secret is returned as the C encoder wrote it.
        try:
            text = ENCODE(value)
            size = len(text) if text.isascii() else len(text.encode("utf-8"))  # raises on lone surrogates
            if size <= budget:
                return text, True
        except Exception:
            pass
    try:
        return _dumps_slow(value, scrub, config.redact, budget), False
    except Exception:
        _logger.warning("toolspan: could not serialise a %s value", type_name(value), exc_info=True)
        text = ENCODE(f"[unrepresentable {type_name(value)}]")
        return (text if nbytes(text) <= budget else "null"), False


_dumps_exact = dumps_exact


def dumps_marked(value: Any, config: Config) -> tuple[str, bool]:
    """``dumps(value, config)`` and whether that copy lost anything: cut at the budget or redacted (a value
    only converted, a tuple to an array, a dataclass to an object, is whole)."""
    budget = config.max_attribute_bytes
    scrub = redaction(config.redact_keys)
    if config.redact is None and _plain(value, budget, scrub):
        try:
            text = ENCODE(value)
            size = len(text) if text.isascii() else len(text.encode("utf-8"))
            if size <= budget:
                return text, False
        except Exception:
            pass
    try:
        walker = _Walker(scrub, config.redact, budget)
        tree = walker.root(value)
        text, cut = _finish_marked(tree, walker.cut, budget)
        return text, cut or walker.redacted
    except Exception:
        _logger.warning("toolspan: could not serialise a %s value", type_name(value), exc_info=True)
        text = ENCODE(f"[unrepresentable {type_name(value)}]")
        return (text if nbytes(text) <= budget else "null"), True


def _dumps_slow(value: Any, scrub: Redaction, redact: Redactor | None, budget: int) -> str:
    walker = _Walker(scrub, redact, budget)
    return _finish(walker.root(value), walker.cut, budget)


def _finish(tree: Any, cut: bool, budget: int) -> str:
    """The JSON text of a walked ``tree`` within ``budget``, cut and marked where needed."""
    return _finish_marked(tree, cut, budget)[0]


def _finish_marked(tree: Any, cut: bool, budget: int) -> tuple[str, bool]:
    """``_finish`` and whether the text lost anything of ``tree`` (it was cut, now or in the walk)."""
    if not cut:
        text = ENCODE(tree)
        if nbytes(text) <= budget:
            return text, False
    fitted = _truncate.fit(tree, budget)
    cut_text = None
    if fitted is not None:
        text = ENCODE(fitted[0])
        if nbytes(text) <= budget:
            if not _truncate.only_marker(tree, fitted[0]):
                return text, True
            cut_text = text
    return _truncate.fallback(ENCODE(_truncate.render(tree)), budget, cut_text), True


class Collector:
    """The items of a generator's result, kept only as far as the budget can hold them.

    Each item is converted (and redacted) when it arrives, within what is left of the budget; once the
    budget is full the items are only counted. ``dumps()`` gives the JSON array, whose last element
    says how many items were left out. The ``redact`` callback sees each item under its index path.
    """

    __slots__ = ("budget", "count", "cut", "inexact", "items", "left", "redact", "scrub")

    def __init__(self, config: Config) -> None:
        self.budget = config.max_attribute_bytes
        self.left = self.budget - 2
        self.scrub = redaction(config.redact_keys)
        self.redact = config.redact
        self.items: list[Any] = []
        self.count = 0
        self.cut = False
        self.inexact = False  # an item may have been cut, redacted or converted (``dumps_exact``'s sense)

    def add(self, value: Any) -> None:
        """Take the next item (never raises)."""
        self.count += 1
        if self.left <= 0:
            return
        try:
            walker = _Walker(self.scrub, self.redact, self.left)
            path = str(self.count - 1)
            if self.redact is not None:
                value = walker.call_redact(path, value)
            tree = walker.conv(value, 1, path if self.redact is not None else "")
        except Exception:
            _logger.warning("toolspan: could not record a %s item", type_name(value), exc_info=True)
            tree = f"[unrepresentable {type_name(value)}]"
            walker.left -= len(tree)
        self.items.append(tree)
        self.cut = self.cut or walker.cut
        self.inexact = self.inexact or walker.cut or walker.redacted
        self.left = walker.left - 2

    def dumps(self) -> str:
        """The JSON text of the items seen so far, within the budget (never raises)."""
        try:
            omitted = self.count - len(self.items)
            tree: list[Any] = self.items
            if omitted:
                tree = _truncate.CutList(self.items)
                tree.omitted = omitted
            text, cut = _finish_marked(tree, self.cut or bool(omitted), self.budget)
            self.inexact = self.inexact or cut
            return text
        except Exception:
            _logger.warning("toolspan: could not serialise generator items", exc_info=True)
            return "null"


def redact_text(text: str, config: Config) -> str:
    """Free ``text`` (a thought, an exception message) redacted and cut to the budget, never raising."""
    try:
        return _truncate.fit_text(redaction(config.redact_keys).text(clean(text)), config.max_attribute_bytes)
    except Exception:
        _logger.warning("toolspan: could not redact a text", exc_info=True)
        return REDACTED


def to_json_text(value: Any) -> str:
    """Full JSON text of ``value`` for returning to a model: not redacted, not truncated, never raising."""
    try:
        text = ENCODE(value)
        if not text.isascii():
            text.encode("utf-8")
        return text
    except Exception:
        pass
    try:
        return ENCODE(_Walker(None, None, None).root(value))
    except Exception:
        _logger.warning("toolspan: could not serialise a %s value", type_name(value), exc_info=True)
        return ENCODE(f"[unrepresentable {type_name(value)}]")


def json_values(value: Any) -> Any:
    """``value`` as JSON-native data, whole: no redaction, no budget (what a decision judges), never
    raising. The conversion is ``to_json_text``'s; containers deeper than ``MAX_DEPTH`` become markers."""
    try:
        return _Walker(None, None, None).root(value)
    except Exception:
        _logger.warning("toolspan: could not convert a %s value", type_name(value), exc_info=True)
        return f"[unrepresentable {type_name(value)}]"


class Unjudgeable(ToolspanError, ValueError):
    """A value a decision cannot judge as the body will read it (``whole_values``): the reason, one line."""


# Containers whose reads (``d[k]``, iteration, ``items()``) are their storage's: a subclass that overrides one
# of these may show a check one thing and the body another.
_READS: Final = {
    dict: ("__getitem__", "get", "items", "keys", "values", "__iter__", "__len__", "__contains__"),
    list: ("__getitem__", "__iter__", "__len__", "__reversed__"),
    tuple: ("__getitem__", "__iter__", "__len__"),
}
# Standard subclasses whose overrides read their storage (C implementations, or the same data).
_FAITHFUL: Final = ("collections.OrderedDict", "collections.defaultdict", "collections.Counter")


def _storage(value: Any) -> tuple[type, Any] | None:
    """``(base, value)`` for a dict, list or tuple (a subclass: read through its base type, after checking it
    reads its storage as the base does), else ``None``."""
    for base, reads in _READS.items():
        if isinstance(value, base):
            kind = type(value)
            if kind is not base and f"{kind.__module__}.{kind.__qualname__}" not in _FAITHFUL:
                for cls in kind.__mro__:
                    if cls is base:
                        break
                    lying = [name for name in reads if name in vars(cls)]
                    if lying:
                        raise Unjudgeable(
                            f"a {type_name(value)} overrides {lying[0]}: what a check reads of it may not be"
                            " what the tool reads"
                        )
            return base, value
    return None


def whole_values(value: Any) -> Any:
    """``value`` as JSON-native data, whole and at any depth (no redaction, no budget, no depth limit; walked
    without recursion): what a decision judges, the values the body will read. A dict, list or tuple is read
    through its base type (what ``d[k]`` and iteration give); a subclass that overrides those reads, a value
    whose conversion fails, are ``Unjudgeable`` (the decision then denies). Otherwise the conversion is
    ``json_values``' (a structure met again inside itself: its ``[cycle]`` marker; its content is judged
    where it was met first)."""
    walker = _Walker(None, None, None)
    root: list[Any] = [None]
    # (value, where the converted value goes, its key there, the ids of the containers above it)
    todo: list[tuple[Any, Any, Any, frozenset[int]]] = [(value, root, 0, frozenset())]
    sets: list[list[Any]] = []  # converted sets, to sort once their items are converted (inner ones first)
    while todo:
        item, holder, key, above = todo.pop()
        while isinstance(item, enum.Enum):
            item = item.value
        found = _storage(item)
        if found is None and not isinstance(item, (set, frozenset, deque, Mapping)):
            model = model_items(item) if not isinstance(item, (str, bytes, bytearray, memoryview)) else None
            if model is None:
                try:
                    holder[key] = walker._conv(item, 0, "")
                except Exception as exc:
                    raise Unjudgeable(f"a {type_name(item)} could not be read: {type_name(exc)}") from None
                continue
            found = (dict, dict(model))
        if id(item) in above:
            holder[key] = f"[cycle: {type_name(item)}]"
            continue
        inside = above | {id(item)}
        base, data = found if found is not None else (None, item)
        if base is dict or (base is None and isinstance(item, Mapping)):
            pairs = list(dict.items(data) if base is dict else item.items())
            keys = [key_text(raw_key) for raw_key, _ in pairs]
            out: dict[str, Any] = dict.fromkeys(keys)
            holder[key] = out
            todo.extend(
                (child, out, k, inside) for k, (_, child) in reversed(list(zip(keys, pairs, strict=True)))
            )
            continue
        items = list(list.__iter__(data) if base is list else tuple.__iter__(data) if base is tuple else item)
        out_list: list[Any] = [None] * len(items)
        holder[key] = out_list
        if isinstance(item, (set, frozenset)):
            sets.append(out_list)
        todo.extend((child, out_list, n, inside) for n, child in reversed(list(enumerate(items))))
    for converted in reversed(sets):
        converted.sort(key=ENCODE)
    return root[0]


def canonical(tree: Any) -> str:
    """The canonical JSON text of JSON-native ``tree``: sorted keys, no spaces, text as is."""
    return json.dumps(tree, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=True)


def digest(tree: Any) -> str:
    """``"sha256:<hex>"`` of the canonical JSON of ``tree`` (JSON-native data, e.g. from ``json_values``)."""
    text = canonical(tree)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
