"""The JSON writers give the same bytes with orjson as with the standard library: on every view document of
the framework corpus, on floats whose orjson text is not ``repr``'s, on non-finite floats and on what orjson
refuses."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import corpus
from toolspan.bridge import dumps_document, to_otlp_json
from toolspan.bridge._json_write import _writes_alike, dumps_function
from toolspan.bridge.views.registry import VIEWS

orjson = pytest.importorskip("orjson")

JSON_VIEWS = sorted(name for name, view in VIEWS.items() if view.media == "json" and not view.lines)


def _both(monkeypatch: pytest.MonkeyPatch, value: Any) -> tuple[bytes, bytes]:
    """``dumps_document(value)`` with the standard library, then with orjson."""
    out = []
    for backend in ("stdlib", "auto"):
        monkeypatch.setenv("TOOLSPAN_JSON", backend)
        out.append(dumps_document(value))
    return out[0], out[1]


@pytest.mark.parametrize("setup", corpus.SETUPS)
def test_every_corpus_document_has_the_same_bytes_with_orjson_as_with_the_standard_library(
    monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    spans = corpus.spans(setup, "traces.pb")
    documents = {name: VIEWS[name].build(spans) for name in JSON_VIEWS}
    documents["otlp"] = to_otlp_json(spans)
    for name, document in documents.items():
        stdlib, fast = _both(monkeypatch, document)
        assert fast == stdlib, name
        compact = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        assert stdlib == compact.encode(), name


# Floats orjson writes otherwise than ``repr`` (below 1e-4) and their neighbours, where ``repr`` switches to
# an exponent.
EDGE_FLOATS = [1e-05, 2.5e-07, -1.5e-05, 9.99e-05, 0.0001, 1e-10, 5e-324, 1e16, 1e15, 1.7976931348623157e308]


@pytest.mark.parametrize("number", EDGE_FLOATS)
def test_a_float_is_written_as_repr_writes_it_by_both_backends(
    monkeypatch: pytest.MonkeyPatch, number: float
) -> None:
    value = {"a": [number, "x"], "b": number}
    stdlib, fast = _both(monkeypatch, value)
    assert fast == stdlib == f'{{"a":[{number!r},"x"],"b":{number!r}}}'.encode()


@given(
    st.floats(allow_nan=False, allow_infinity=False)
    | st.builds(lambda b: struct.unpack("<d", b)[0], st.binary(min_size=8, max_size=8))
)
def test_any_float_has_the_same_text_with_both_backends(number: float) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        stdlib, fast = _both(monkeypatch, [number, {"k": number}])
        monkeypatch.setenv("TOOLSPAN_JSON", "auto")
        line = dumps_function()([number])
    assert fast == stdlib
    text = "null" if not math.isfinite(number) else repr(number)
    assert stdlib == f'[{text},{{"k":{text}}}]'.encode()
    assert line == f"[{text}]".encode()


def test_text_that_looks_like_a_small_float_inside_a_string_is_written_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = {"note": "ratio:0.00001,", "exponent": "[1e-5]", "model": "claude-3-5"}
    stdlib, fast = _both(monkeypatch, value)
    assert fast == stdlib == json.dumps(value, separators=(",", ":")).encode()


def test_non_finite_floats_and_what_orjson_refuses_give_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Text(str):
        pass

    value = {
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "big": 2**70,
        "surrogate": "a\ud800b",
        "line separator": "\u2028\u2029",
        "controls": "\x00\x1f\x7f\t\n",
        "subclass": Text("t"),
        "tuple": (1, 2.5),
    }
    stdlib, fast = _both(monkeypatch, value)
    assert fast == stdlib
    assert b'"a\\ud800b"' in stdlib  # the surrogate's escape: strict UTF-8
    assert json.loads(stdlib) == {
        "nan": None,
        "inf": [None, None],
        "big": 2**70,
        "surrogate": "a\ud800b",
        "line separator": "\u2028\u2029",
        "controls": "\x00\x1f\x7f\t\n",
        "subclass": "t",
        "tuple": [1, 2.5],
    }


def test_the_installed_orjson_writes_the_probes_alike_and_one_that_writes_otherwise_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _writes_alike(orjson)

    class ExponentsWithoutSign:
        """orjson writing ``1e16`` where ``repr`` writes ``1e+16`` (as a writer on the Ryu algorithm can)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(orjson, name)

        @staticmethod
        def dumps(value: Any, option: int = 0) -> bytes:
            return bytes(orjson.dumps(value, option=option)).replace(b"e+", b"e")

    other = ExponentsWithoutSign()
    assert not _writes_alike(other)  # type: ignore[arg-type]
    monkeypatch.setattr("toolspan.bridge._json_write.orjson_module", lambda: other)
    assert dumps_document({"x": 1e16}) == b'{"x":1e+16}'
    assert dumps_function()([1e16]) == b"[1e+16]"
