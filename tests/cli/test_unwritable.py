"""``toolspan convert`` on traces that hold what JSON text or UTF-8 cannot carry, or what a careless reader
reads in quadratic time (issue 35), from the user's side: the command exits 0 and every view writes strict
UTF-8.

- Console-exporter and OTLP/JSON files with a lone surrogate (a ``\\ud800`` escape, or its bytes) in a span's
  name, its tool's name, its result and its status: the readers read each as the text of its escape
  (``\\ud800``, six characters), so every view of the registry can write it.
- A tool's arguments recorded as a Python literal (LangChain's ``input_str``) that reads to a lone surrogate
  or to an integer of 20,000 hex digits: the literal is kept as its text.
- A 1 MiB attribute of every adversarial shape (``tests.support.adversarial``) in the attributes the fact
  readers parse (a tool's arguments, MLflow's ``mlflow.spanType`` and inputs, ``input.value``): converted in
  a child process that a guard ends should it hang (before the fix, the unterminated string of escaped
  quotes alone took hours at this size); no time is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.adversarial import MIB, SHAPES, shape
from toolspan import semconv
from toolspan.bridge.views.registry import VIEWS
from toolspan.cli import main

TRACE = "a" * 32
SPAN = "b" * 16
# What a lone surrogate of the input reads as: the text of its escape.
ESCAPED = "\\ud800"


def _otlp_span(name: str, attrs: dict[str, str], status_message: str = "") -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": name,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if status_message:
        span["status"] = {"code": 2, "message": status_message}
    return span


def _console_span(name: str, attrs: dict[str, str], status_message: str) -> dict[str, Any]:
    return {
        "name": name,
        "context": {"trace_id": "0x" + TRACE, "span_id": "0x" + SPAN, "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2023-11-14T22:13:20.000000Z",
        "end_time": "2023-11-14T22:13:21.000000Z",
        "status": {"status_code": "ERROR", "description": status_message},
        "attributes": attrs,
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "svc"}, "schema_url": ""},
    }


def _tool_attrs(text: str) -> dict[str, str]:
    return {
        semconv.GEN_AI_OPERATION_NAME: "execute_tool",
        semconv.GEN_AI_TOOL_NAME: "t" + text,
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"city": "x" + text}),
        semconv.GEN_AI_TOOL_CALL_RESULT: "r" + text,
    }


def _request(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


MARK = "@@LONE@@"


def _surrogate_files() -> dict[str, bytes]:
    """Every input format with a lone surrogate (``MARK``, replaced by its escape or its bytes) in the
    span's name, tool name, arguments, result and status message."""
    name, attrs = "execute_tool t" + MARK, _tool_attrs(MARK)
    otlp = _request(_otlp_span(name, attrs, "failed" + MARK))
    console = json.dumps(_console_span(name, attrs, "failed" + MARK), indent=4)
    other = _console_span("other", {}, "")
    other["context"]["span_id"] = "0x" + "c" * 16
    texts = {
        "otlp.json": otlp,
        "otlp.jsonl": otlp + "\n" + _request(_otlp_span("other", {})) + "\n",
        "console.json": console,
        "console-two.json": console + "\n" + json.dumps(other, indent=4),
    }
    files = {key: text.replace(MARK, "\\\\ud800").encode() for key, text in texts.items()}
    files["otlp-bytes.json"] = otlp.replace(MARK, "LONE").encode().replace(b"LONE", b"\xed\xa0\x80")
    return files


def _convert(tmp_path: Path, source: Path, view: str) -> bytes:
    target = tmp_path / f"out.{view}"
    assert main(["convert", str(source), "--to", view, "-o", str(target)]) == 0
    return target.read_bytes()


def _documents(view: str, out: bytes) -> list[Any]:
    text = out.decode("utf-8")  # strict: a lone surrogate written raw fails here
    if VIEWS[view].media == "html":
        return []
    if VIEWS[view].lines:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


@pytest.mark.parametrize("backend", ["orjson", "stdlib"])
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("fmt", list(_surrogate_files()))
def test_every_view_writes_strict_utf8_of_lone_surrogates_in_names_tools_results_and_statuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, view: str, backend: str
) -> None:
    monkeypatch.setenv("TOOLSPAN_JSON", "auto" if backend == "orjson" else "stdlib")
    source = tmp_path / fmt
    source.write_bytes(_surrogate_files()[fmt])
    out = _convert(tmp_path, source, view)
    documents = _documents(view, out)
    if view == "events":
        act = next(e for e in documents if e["type"] == "act" and e["span_id"] == SPAN)
        observe = next(e for e in documents if e["type"] == "observe" and e["span_id"] == SPAN)
        assert act["tool_name"] == "t" + ESCAPED
        # The arguments' JSON text then holds a surrogate's escape, which no JSON value carries: its text.
        assert act["tool_input"] == '{"city": "x' + ESCAPED + '"}'
        assert observe["observation"] == {"error": "failed" + ESCAPED}
    elif view == "html":
        assert ("t" + ESCAPED) in out.decode("utf-8")


LITERALS = {
    "lone surrogate": "{'city': '\\ud800'}",
    "lone surrogate key": "{'\\udc00': 'Paris'}",
    "20,000 hex digits": "{'n': 0x" + "f" * 20_000 + "}",
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("literal", list(LITERALS))
def test_a_python_literal_no_json_can_hold_is_kept_as_its_text(
    tmp_path: Path, view: str, literal: str
) -> None:
    attrs = {
        semconv.GEN_AI_OPERATION_NAME: "execute_tool",
        semconv.GEN_AI_TOOL_NAME: "get_weather",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"input_str": LITERALS[literal]}),
        semconv.GEN_AI_TOOL_CALL_RESULT: LITERALS[literal],  # Semantic Kernel's str() of a result
    }
    source = tmp_path / "trace.json"
    source.write_text(_request(_otlp_span("execute_tool get_weather", attrs)))
    out = _convert(tmp_path, source, view)
    documents = _documents(view, out)
    if view == "events":
        act = next(e for e in documents if e["type"] == "act")
        observe = next(e for e in documents if e["type"] == "observe")
        assert act["tool_input"] == LITERALS[literal]
        assert observe["observation"] == LITERALS[literal]
    elif view == "html":
        assert json.dumps(LITERALS[literal])[1:-1] in out.decode("utf-8")
    elif view == "plans":  # a tool call of no agent is in no plan: nothing to keep
        assert [d["plans"] for d in documents] == [[]]
    else:  # every other view carries the text whole, as a string
        assert LITERALS[literal] in _strings(documents)


def _strings(value: Any) -> set[str]:
    """Every string inside a JSON value (keys too)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {*value, *(s for v in value.values() for s in _strings(v))}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()


def _shape_spans(n: int) -> list[dict[str, Any]]:
    """Per shape: a tool span with it as arguments, result and ``input.value``; an MLflow tool span with it
    as inputs; an MLflow span with it as ``mlflow.spanType``."""
    spans = []
    for number, name in enumerate(SHAPES):
        text = shape(name, n)
        arguments = json.dumps({"input_str": text}) if name == "python literal" else text
        each = [
            {**_tool_attrs(""), semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments, semconv.OI_INPUT_VALUE: text},
            {semconv.MLFLOW_SPAN_TYPE: '"TOOL"', semconv.MLFLOW_SPAN_INPUTS: text},
            {semconv.MLFLOW_SPAN_TYPE: text},
        ]
        for kind, attrs in enumerate(each):
            span = _otlp_span(f"span {name}", attrs)
            span["spanId"] = f"{number + 1:08x}{kind + 1:08x}"
            spans.append(span)
    return spans


@pytest.mark.processes
@pytest.mark.parametrize("view", ["events", "tree", "html"])
def test_a_mebibyte_attribute_of_every_adversarial_shape_converts(tmp_path: Path, view: str) -> None:
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(_request(span) + "\n" for span in _shape_spans(MIB)))
    target = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "toolspan", "convert", str(source), "--to", view, "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=300,  # a guard against a hang only (this takes seconds): no time is asserted
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    documents = _documents(view, target.read_bytes())
    if view == "events":
        inputs = {e["span_id"]: e["tool_input"] for e in documents if e["type"] == "act"}
        # The deep shapes stay the text they are; the others are read as JSON where JSON can read them.
        assert inputs["0000000100000001"] == shape("deep brackets", MIB)
        assert inputs["0000000300000001"] == shape("unterminated escaped quotes", MIB)
