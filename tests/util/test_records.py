"""``quick_init``: a frozen, slotted dataclass's ``__init__`` that sets each slot through its descriptor; and
``quick_replace``, ``dataclasses.replace`` for such a class."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolspan._util.records import quick_init, quick_replace


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    count: int
    note: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    items: tuple[int, ...] = ()


# Plain's fields, made by quick_init's __init__.
Quick: type[Any] = quick_init(
    dataclasses.make_dataclass(
        "Quick",
        [
            (f.name, f.type, field(default=f.default, default_factory=f.default_factory))
            for f in dataclasses.fields(Plain)
        ],
        frozen=True,
        slots=True,
    )
)


@quick_init
@dataclass(frozen=True, slots=True)
class QuickPicklable:  # at module level: pickle finds it by name
    name: str
    count: int = 0


def _fields(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("a", 1), {}), (("a", 1, "n"), {"items": (1, 2)}), ((), {"count": 2, "name": "b", "tags": {"k": 1}})],
)
def test_an_instance_holds_what_the_dataclass_init_would_have_set(args: Any, kwargs: Any) -> None:
    assert _fields(Quick(*args, **kwargs)) == _fields(Plain(*args, **kwargs))


def test_the_signature_defaults_and_factories_are_the_dataclass_ones() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    first, second = Quick("a", 1), Quick("a", 1)
    assert first.tags == {}
    assert first.tags is not second.tags  # a fresh dict each time, as the factory makes
    with pytest.raises(TypeError, match="count"):
        Quick("a")
    with pytest.raises(TypeError, match="unexpected keyword"):
        Quick("a", 1, colour="red")


def test_instances_stay_frozen_equal_hashable_copyable_and_picklable() -> None:
    one = Quick("a", 1, items=(3,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.name = "b"
    assert one == Quick("a", 1, items=(3,))
    assert one != Quick("a", 2, items=(3,))
    assert dataclasses.replace(one, count=5) == Quick("a", 5, items=(3,))
    assert copy.copy(one) == one
    assert pickle.loads(pickle.dumps(QuickPicklable("x", 2))) == QuickPicklable("x", 2)


def test_only_a_frozen_slotted_dataclass_of_plain_arguments_is_taken() -> None:
    @dataclass(slots=True)
    class Unfrozen:
        name: str

    @dataclass(frozen=True)
    class Unslotted:
        name: str

    @dataclass(frozen=True, slots=True)
    class Posted:
        name: str

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        name: str = field(kw_only=True)

    @dataclass(frozen=True, slots=True)
    class Derived:
        name: str
        size: int = field(init=False, default=0)

    for cls in (Unfrozen, Unslotted, Posted, KeywordOnly, Derived, int):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)


def test_the_quick_init_sets_slots_through_their_descriptors_where_it_is_applied() -> None:
    """What makes it quicker, on the records toolspan makes per span: no ``object.__setattr__`` by name
    (which the dataclass's own ``__init__`` calls for each field)."""
    from toolspan.bridge.facts import ToolCallRecord
    from toolspan.bridge.model import Span, SpanEvent

    assert "__setattr__" in Plain.__init__.__code__.co_names
    for cls in (Quick, QuickPicklable, Span, SpanEvent, ToolCallRecord):
        assert "__setattr__" not in cls.__init__.__code__.co_names, cls
        assert "_set0" in cls.__init__.__code__.co_names, cls


@pytest.mark.parametrize(
    "changes", [{}, {"count": 5}, {"name": "b", "tags": {"k": 2}, "items": (4,)}, {"note": None, "count": 0}]
)
def test_quick_replace_makes_what_dataclasses_replace_makes(changes: dict[str, Any]) -> None:
    quick, plain = Quick("a", 1, "n", {"k": 1}, (3,)), Plain("a", 1, "n", {"k": 1}, (3,))
    made = quick_replace(quick, **changes)
    assert type(made) is Quick
    assert _fields(made) == _fields(dataclasses.replace(plain, **changes))
    assert made == dataclasses.replace(quick, **changes)
    assert _fields(quick) == _fields(plain)  # the one copied is left as it was
    if "tags" not in changes:  # a field not named is the same object, as dataclasses.replace keeps it
        assert made.tags is quick.tags


def test_quick_replace_refuses_a_field_the_class_lacks_and_a_class_not_given_quick_init() -> None:
    with pytest.raises(TypeError, match="Quick has no field 'colour'"):
        quick_replace(Quick("a", 1), count=2, colour="red")
    with pytest.raises(TypeError, match="quick_replace: Plain was not given quick_init"):
        quick_replace(Plain("a", 1), count=2)


def test_a_linked_tool_call_is_its_record_with_what_linking_changed() -> None:
    """Where ``quick_replace`` is used: a view's linked call keeps every field of the call as read that
    linking does not set (a field added to ``ToolCallRecord`` is carried over without naming it)."""
    from toolspan.bridge.facts import ArgumentsEdit, ToolCallRecord
    from toolspan.bridge.link import RequestIndex
    from toolspan.bridge.model import Span

    span = Span("a" * 32, "b" * 16, None, "execute_tool search", 1, 2, attributes={})
    edit = ArgumentsEdit({"q": "model"}, "alice", 5)
    values = {f.name: f"value of {f.name}" for f in dataclasses.fields(ToolCallRecord)}
    read = ToolCallRecord(**{**values, "span": span, "is_error": True, "edit": edit})
    linked = RequestIndex().link(read)
    changed = {
        f.name for f in dataclasses.fields(ToolCallRecord) if getattr(linked, f.name) != getattr(read, f.name)
    }
    assert changed <= {"output", "call_id", "input", "edit", "requested_by"}
    assert linked.name == "value of name"
    assert linked.parent_call_id == "value of parent_call_id"
    assert linked.edit is not None
    assert linked.edit.by == "alice"
