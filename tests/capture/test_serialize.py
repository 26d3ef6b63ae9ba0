"""The one serializer: conversion rules, redaction, byte budget, never raising."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import json
import logging
import math
import pathlib
import tracemalloc
import uuid
from typing import Any

import pydantic
import pydantic.v1
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolspan._capture.redact import redaction
from toolspan._capture.serialize import MAX_DEPTH, dumps, to_json_text
from toolspan.config import DEFAULT_REDACT_KEYS, REDACTED, Config, normalize_key, resolve_config

CONFIG = Config()


def small(budget: int) -> Config:
    return Config(max_attribute_bytes=budget)


def check(text: str, config: Config = CONFIG) -> Any:
    """The text is valid JSON within the budget; return it parsed."""
    assert len(text.encode("utf-8")) <= config.max_attribute_bytes
    return json.loads(text)


# --- conversion ---------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    NUM = 3


class Level(enum.IntEnum):
    HIGH = 2


Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Trip:
    city: str
    when: dt.date
    tags: set[str]


class Model2(pydantic.BaseModel):
    name: str
    at: dt.datetime


class Model1(pydantic.v1.BaseModel):
    name: str
    count: int


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


@dataclasses.dataclass
class WithBrokenField:
    ok: int
    broken: int = dataclasses.field(default=0)

    def __getattribute__(self, name: str) -> Any:
        if name == "broken":
            raise ValueError("boom")
        return super().__getattribute__(name)


CONVERSIONS: list[tuple[Any, Any]] = [
    ("ok", "ok"),
    (None, None),
    (True, True),
    (12, 12),
    (1.5, 1.5),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    ((1, "a"), [1, "a"]),
    (Point(1, 2), [1, 2]),
    (collections.deque([1, 2]), [1, 2]),
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", "a", "c"}), ["a", "b", "c"]),
    ({1, "1"}, ["1", 1]),  # sorted by JSON text: '"1"' < '1'
    (b"hello", "hello"),
    (bytearray(b"hi"), "hi"),
    (memoryview(b"mv"), "mv"),
    (b"\xff\x00\x01", "base64:/wAB"),
    (dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc), "2024-05-06T07:08:09+00:00"),
    (dt.date(2024, 5, 6), "2024-05-06"),
    (dt.time(7, 8, 9, 500), "07:08:09.000500"),
    (dt.timedelta(days=1, seconds=2, microseconds=500000), "P1DT2.5S"),
    (dt.timedelta(seconds=90), "PT90S"),
    (-dt.timedelta(seconds=1), "-PT1S"),
    (decimal.Decimal("1.10"), "1.10"),
    (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    (pathlib.PurePosixPath("/a/b"), "/a/b"),
    (Color.RED, "red"),
    (Color.NUM, 3),
    (Level.HIGH, 2),
    (
        Trip("Paris", dt.date(2024, 1, 2), {"b", "a"}),
        {"city": "Paris", "when": "2024-01-02", "tags": ["a", "b"]},
    ),
    (Model2(name="n", at=dt.datetime(2024, 1, 1)), {"name": "n", "at": "2024-01-01T00:00:00"}),
    (Model1(name="n", count=2), {"name": "n", "count": 2}),
    (
        {1: "a", None: "b", False: "c", 2.5: "d", (1, 2): "e"},
        {"1": "a", "null": "b", "false": "c", "2.5": "d", "(1, 2)": "e"},
    ),
    ({Color.RED: 1}, {"red": 1}),
    (BadRepr(), "[unrepresentable BadRepr: RuntimeError]"),
    (WithBrokenField(1), {"ok": 1, "broken": "[unavailable: ValueError]"}),
    ("\ud800x", "\ufffdx"),
]


@pytest.mark.parametrize(("value", "expected"), CONVERSIONS, ids=lambda v: type(v).__name__)
def test_conversion(value: Any, expected: Any) -> None:
    assert check(dumps(value, CONFIG)) == expected
    assert json.loads(to_json_text(value)) == expected


def test_string_result_is_a_json_string() -> None:
    assert dumps("ok", CONFIG) == '"ok"'
    assert to_json_text("ok") == '"ok"'


def test_output_matches_json_dumps_for_plain_values() -> None:
    value = {"city": "Zürich", "days": 3, "tags": ["a", "b"], "ratio": 0.5, "ok": None}
    assert dumps(value, CONFIG) == json.dumps(value, ensure_ascii=False)
    assert to_json_text(value) == json.dumps(value, ensure_ascii=False)


def test_generator_is_not_consumed() -> None:
    def numbers() -> Any:
        yield 1
        yield 2

    gen = numbers()
    text = check(dumps({"g": gen}, CONFIG))
    assert text["g"].startswith("<generator object")
    assert json.loads(to_json_text(gen)).startswith("<generator object")
    assert list(gen) == [1, 2]


def test_self_referencing_structures_are_marked() -> None:
    items: list[Any] = [1]
    items.append(items)
    mapping: dict[str, Any] = {"a": 1}
    mapping["me"] = mapping
    assert check(dumps(items, CONFIG)) == [1, "[cycle: list]"]
    assert check(dumps(mapping, CONFIG)) == {"a": 1, "me": "[cycle: dict]"}
    assert json.loads(to_json_text(mapping)) == {"a": 1, "me": "[cycle: dict]"}


def test_shared_non_cyclic_references_are_written_twice() -> None:
    shared = {"x": 1}
    assert check(dumps([shared, shared], CONFIG)) == [{"x": 1}, {"x": 1}]


def test_deep_nesting_is_cut_at_the_depth_limit() -> None:
    deep: list[Any] = []
    current = deep
    for _ in range(5000):
        inner: list[Any] = []
        current.append(inner)
        current = inner
    for text in (dumps(deep, CONFIG), to_json_text(deep)):
        parsed = json.loads(text)
        depth = 0
        while isinstance(parsed, list):
            parsed = parsed[0]
            depth += 1
        assert depth == MAX_DEPTH
        assert parsed == "[max depth: list]"


def test_huge_int_becomes_hex() -> None:
    huge = 1 << 20000
    assert check(dumps(huge, Config(max_attribute_bytes=100_000))) == hex(huge)
    assert json.loads(to_json_text(huge)) == hex(huge)
    assert dumps(2**64, CONFIG) == str(2**64)


def test_raising_mapping_items_does_not_raise() -> None:
    class Exploding(collections.abc.Mapping[str, int]):
        def __getitem__(self, key: str) -> int:
            raise KeyError(key)

        def __iter__(self) -> Any:
            raise RuntimeError("no iteration")

        def __len__(self) -> int:
            return 1

    assert check(dumps({"m": Exploding()}, CONFIG)) == {"m": "[unrepresentable Exploding: RuntimeError]"}


# --- redaction ----------------------------------------------------------------------------------------


def test_secret_keys_redacted_at_any_depth_and_any_spelling() -> None:
    value = {
        "X-Api-Key": "k1",
        "apiKey": "k2",
        "headers": {"Authorization": "Bearer k3", "Set-Cookie": "k4"},
        "env": [{"OPENAI_API_KEY": "k5", "github_token": "k6", "user": "bob"}],
        "max_tokens": 100,
        "tokens": ["a"],
        "client_secret": {"nested": "k7"},
        "db": Trip("PASSWORD", dt.date(2024, 1, 1), set()),
    }
    assert check(dumps(value, CONFIG)) == {
        "X-Api-Key": REDACTED,
        "apiKey": REDACTED,
        "headers": {"Authorization": REDACTED, "Set-Cookie": REDACTED},
        "env": [{"OPENAI_API_KEY": REDACTED, "github_token": REDACTED, "user": "bob"}],
        "max_tokens": 100,
        "tokens": ["a"],
        "client_secret": REDACTED,
        "db": {"city": "PASSWORD", "when": "2024-01-01", "tags": []},
    }


def test_redaction_in_models_and_dataclasses() -> None:
    @dataclasses.dataclass
    class Login:
        user: str
        password: str

    class Creds(pydantic.BaseModel):
        access_token: str
        scope: str

    assert check(dumps(Login("bob", "hunter2"), CONFIG)) == {"user": "bob", "password": REDACTED}
    assert check(dumps([Creds(access_token="t", scope="s")], CONFIG)) == [
        {"access_token": REDACTED, "scope": "s"}
    ]


def test_user_keys_add_to_builtin_keys() -> None:
    config = resolve_config(redact_keys=["ssn", "Card-Number"])
    assert check(dumps({"SSN": "1", "card_number": "2", "password": "3", "name": "n"}, config)) == {
        "SSN": REDACTED,
        "card_number": REDACTED,
        "password": REDACTED,
        "name": "n",
    }


def test_to_json_text_does_not_redact() -> None:
    assert json.loads(to_json_text({"api_key": "k"})) == {"api_key": "k"}


def test_redact_callback_gets_paths_and_can_replace_values() -> None:
    calls: list[tuple[str, Any]] = []

    def redact(path: str, value: Any) -> Any:
        calls.append((path, value))
        if path.endswith("email"):
            return "<email>"
        return value

    config = Config(redact=redact)
    value = {"user": {"email": "a@b.c", "password": "p"}, "items": [{"email": "x@y.z"}]}
    assert check(dumps(value, config)) == {
        "user": {"email": "<email>", "password": REDACTED},
        "items": [{"email": "<email>"}],
    }
    assert calls == [
        ("", value),
        ("user", value["user"]),
        ("user.email", "a@b.c"),
        ("items", value["items"]),
        ("items.0.email", "x@y.z"),
    ]


def test_raising_redact_callback_redacts(caplog: pytest.LogCaptureFixture) -> None:
    def redact(path: str, value: Any) -> Any:
        if path == "b":
            raise RuntimeError("bug in callback")
        return value

    with caplog.at_level(logging.WARNING, logger="toolspan._capture.serialize"):
        text = dumps({"a": 1, "b": "sensitive"}, Config(redact=redact))
    assert check(text) == {"a": 1, "b": REDACTED}
    assert "redact callback raised" in caplog.text


# --- byte budget --------------------------------------------------------------------------------------


def test_long_string_cut_with_marker() -> None:
    text = dumps("y" * 500, small(64))
    assert text == '"' + "y" * 38 + '...[truncated 462 chars]"'
    assert len(text.encode()) <= 64


def test_long_list_cut_with_marker_element() -> None:
    assert check(dumps(list(range(1000)), small(64)), small(64)) == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        9,
        10,
        "...[truncated 989 items]",
    ]


def test_long_dict_cut_with_marker_key() -> None:
    value = {f"k{i}": i for i in range(1000)}
    parsed = check(dumps(value, small(100)), small(100))
    kept = {k: v for k, v in parsed.items() if k != "...[truncated]"}
    assert kept == {f"k{i}": i for i in range(len(kept))}
    assert parsed["...[truncated]"] == 1000 - len(kept)


def test_multibyte_text_cut_within_budget() -> None:
    text = dumps({"msg": "你好世界" * 1000}, small(200))
    parsed = check(text, small(200))
    assert parsed["msg"].startswith("你好世界你好")
    assert parsed["msg"].endswith("chars]")


def test_fallback_wrapper_when_structure_cannot_fit() -> None:
    value = {"k" * 300: 1}
    parsed = check(dumps(value, small(100)), small(100))
    assert parsed["toolspan.truncated"] is True
    assert parsed["preview"].startswith('{"kkkk')
    assert "...[truncated" in parsed["preview"]


def test_huge_values_are_cut_quickly_and_bounded() -> None:
    value = {"rows": [{"id": i, "text": "x" * 50} for i in range(200_000)], "blob": b"z" * 10_000_000}
    parsed = check(dumps(value, CONFIG))
    assert parsed["rows"][0] == {"id": 0, "text": "x" * 50}
    assert parsed["rows"][-1].startswith("...[truncated ")


# --- properties ---------------------------------------------------------------------------------------

SECRET = "S3CR3T-VALUE"
safe_keys = st.text(max_size=12).filter(lambda k: not normalize_key(k).endswith(tuple(DEFAULT_REDACT_KEYS)))
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(safe_keys, children, max_size=6),
    max_leaves=40,
)
budgets = st.integers(min_value=64, max_value=4096)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, budget=budgets)
def test_property_valid_json_within_budget_and_exact_when_it_fits(value: Any, budget: int) -> None:
    config = small(budget)
    text = dumps(value, config)
    parsed = check(text, config)
    full = json.dumps(value, ensure_ascii=False)
    if len(full.encode()) <= budget:
        assert text == full
        assert parsed == value
    else:
        assert "...[truncated" in text or '"toolspan.truncated": true' in text
    assert json.loads(to_json_text(value)) == value


secret_keys = st.sampled_from(
    [
        "api_key",
        "X-Api-Key",
        "apiKey",
        "OPENAI_API_KEY",
        "Authorization",
        "password",
        "access_token",
        "Cookie",
    ]
)


def with_secrets(children: Any) -> Any:
    # SECRET only ever appears as the value (or inside the value) of a secret key.
    safe_part = st.dictionaries(safe_keys, children, max_size=4)
    secret_part = st.dictionaries(secret_keys, children | st.just(SECRET), max_size=3)
    mixed = st.builds(lambda a, b: {**a, **b, "client_secret": SECRET}, safe_part, secret_part)
    return st.lists(children, max_size=5) | mixed


odd_leaves = json_leaves | st.binary(max_size=20) | st.datetimes() | st.sets(st.integers())
secret_values = st.recursive(odd_leaves, with_secrets, max_leaves=30)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=secret_values, budget=budgets)
def test_property_secrets_never_appear(value: Any, budget: int) -> None:
    config = small(budget)
    text = dumps(value, config)
    check(text, config)
    assert SECRET not in text


@settings(max_examples=200, deadline=None)
@given(
    value=st.recursive(
        odd_leaves | st.floats() | st.tuples(st.integers()) | st.decimals() | st.uuids() | st.timedeltas(),
        lambda c: (
            st.lists(c, max_size=4) | st.dictionaries(st.integers() | st.text(max_size=5), c, max_size=4)
        ),
        max_leaves=25,
    ),
    budget=budgets,
)
def test_property_any_value_gives_valid_json_within_budget(value: Any, budget: int) -> None:
    budgeted = dumps(value, small(budget))
    assert len(budgeted.encode("utf-8")) <= budget
    json.loads(budgeted)  # raises on invalid JSON
    # The text returned to a model is complete: valid JSON, never cut.
    full = to_json_text(value)
    json.loads(full)
    assert "...[truncated" not in full or "...[truncated" in repr(value)


words = st.text(
    st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"]), min_size=1, max_size=40
)


@settings(max_examples=100, deadline=None)
@given(word=words, key=secret_keys | safe_keys)
def test_property_a_single_word_holds_no_secret_text(word: str, key: str) -> None:
    """The serializer passes one-word texts (``str.isalnum``) without the secret scan: no secret pattern
    matches a text without a space, ``=``, ``:`` or ``://``."""
    assert word.isalnum()
    scrub = redaction(DEFAULT_REDACT_KEYS)
    assert scrub.may_hold(word) is False
    assert scrub.text(word) == word
    # Under a secret key the value is still redacted: the key decides, not the text.
    assert json.loads(dumps({key: word}, CONFIG))[key] == (REDACTED if scrub.is_secret(key) else word)


def test_nan_output_is_strict_json() -> None:
    text = dumps({"x": [math.nan, math.inf]}, CONFIG)
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}")) == {
        "x": ["NaN", "Infinity"]
    }


# --- huge values: read only as far as the budget needs ----------------------------------------------

MIB = 1 << 20


def _peak_during(fn: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "make",
    [
        lambda: {"data": "x" * (200 * MIB), "n": 1},
        lambda: {"blob": b"\x00" * (200 * MIB)},
        lambda: [list(range(1_000_000))],
        lambda: {"rows": {str(i): i for i in range(300_000)}},
    ],
    ids=["str-in-dict", "bytes", "long-list", "big-dict"],
)
def test_huge_values_are_not_serialized_whole(make: Any) -> None:
    value = make()
    text, peak = _peak_during(lambda: dumps(value, CONFIG))
    assert peak < 2 * MIB  # before: the whole value was encoded first (+200 MB for the string)
    assert "...[truncated" in text
    check(text)
