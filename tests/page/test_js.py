"""The trace page's script as checked files: ``toolspan.page.TRACE_SCRIPTS`` is every file of ``page/trace/``,
once; their JSDoc types pass ``tsc --checkJs`` (``tests/page/js/tsconfig.json``, strict), and the pure
helpers pass their ``node --test`` tests (``tests/page/js/*.test.mjs``). ``scripts/test.sh`` runs both as
lint steps; these tests run them too when Node.js and TypeScript (``npm ci`` in ``tests/node``) are here,
so a plain pytest run catches a type error."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.bridge_data import scenario
from tests.support.paths import REPO, TESTS
from toolspan.bridge.model import Span
from toolspan.bridge.views import page_delta, to_page
from toolspan.page import TRACE_SCRIPTS, render_html, trace_script

TRACE = REPO / "src" / "toolspan" / "page" / "trace"
JS = TESTS / "page" / "js"
# A string literal that starts as a path ("/api/...") or holds a scheme ("https://..."); "#" and "/" alone
# (a fragment, the search key) are no URL.
URL_LITERAL = re.compile(r"""["'`](?:/[\w.-]|[a-z][\w+.-]*://)""")
TSC = TESTS / "node" / "node_modules" / "typescript" / "bin" / "tsc"
DELTAS = JS / "deltas.json"  # what model.test.mjs applies: rewritten with TOOLSPAN_UPDATE_GOLDEN=1


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js not installed (scripts/test.sh installs it)")
    return node


def test_the_declared_order_names_every_trace_file_once() -> None:
    assert sorted(TRACE_SCRIPTS) == sorted(p.name for p in TRACE.glob("*.js"))
    assert len(set(TRACE_SCRIPTS)) == len(TRACE_SCRIPTS)
    assert TRACE_SCRIPTS[-1] == "main.js"  # it starts the page: after every name it uses
    config = json.loads((JS / "tsconfig.json").read_text("utf-8"))
    checked = {Path(f).name for f in config["files"] if f.startswith("../../../src/toolspan/page/trace/")}
    assert checked == set(TRACE_SCRIPTS)


def test_the_page_holds_the_files_in_that_order_in_one_function() -> None:
    script = trace_script()
    starts = [script.index(f"// ---- trace/{name} ----\n") for name in TRACE_SCRIPTS]
    assert starts == sorted(starts)
    for name in TRACE_SCRIPTS:
        assert (TRACE / name).read_text("utf-8") in script
    assert script.startswith('"use strict";\n')
    assert script.count("(function () {\n") >= 1
    assert script.endswith("})();\n")
    assert f"<script>{script}</script>" in render_html({"trace_id": "t", "title": "", "steps": []})


def test_no_url_in_the_trace_page_script() -> None:
    """Every URL the trace page asks for comes from its config (``LiveOptions``)."""
    for name in TRACE_SCRIPTS:
        text = (TRACE / name).read_text("utf-8")
        assert URL_LITERAL.search(text) is None, f"{name} holds {URL_LITERAL.search(text)}"


def test_no_url_in_any_page_script_nor_in_the_top_bar() -> None:
    """Every URL the served pages ask for or link to comes from their config: common.js, the list's and the
    inbox's scripts hold none (the list of runs, the stream, a run's page, where a decision goes: ``urls``),
    and neither do the top bar's links."""
    page = REPO / "src" / "toolspan" / "page"
    for name in ("common.js", "list.js", "inbox.js"):
        text = (page / name).read_text("utf-8")
        assert URL_LITERAL.search(text) is None, f"{name} holds {URL_LITERAL.search(text)}"
    top = (page / "top.html").read_text("utf-8")
    assert re.findall(r"\b(?:href|src)=\"([^\"]*)\"", top) == ["{icon}"]
    config = json.loads((JS / "tsconfig.json").read_text("utf-8"))
    checked = {Path(f).name for f in config["files"] if f.startswith("../../../src/toolspan/page/")}
    assert {"common.js", "list.js", "inbox.js"} <= checked  # type-checked like the trace page's files


@pytest.mark.processes
def test_the_trace_page_types_check() -> None:
    node = _node()
    if not TSC.is_file():
        pytest.skip("TypeScript not installed: run `npm ci` in tests/node (scripts/test.sh does)")
    done = subprocess.run(
        [node, str(TSC), "-p", str(JS / "tsconfig.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.processes
def test_the_pure_helpers_pass_their_node_tests() -> None:
    node = _node()
    tests = sorted(str(p) for p in JS.glob("*.test.mjs"))
    assert tests
    done = subprocess.run([node, "--test", *tests], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout


def _exported(spans: list[Span]) -> list[Span]:
    """The records of a run as an application with pending records exports them: each span's pending
    record when it starts, its ended record when it ends."""
    timed = [(s.start_ns, 0, dataclasses.replace(s, end_ns=None)) for s in spans]
    timed += [(s.end_ns, 1, s) for s in spans if s.end_ns is not None]
    return [record for _, _, record in sorted(timed, key=lambda t: (t[0], t[1]))]


def _step(span_id: str, parent: int | None, start_us: int) -> dict[str, object]:
    return {
        "id": span_id,
        "parent": parent,
        "kind": "tool",
        "label": span_id,
        "name": span_id,
        "start_us": start_us,
        "dur_us": 1,
        "state": "COMPLETED",
    }


def _doc(steps: list[dict[str, object]]) -> dict[str, object]:
    return {**to_page([], live=True), "trace_id": "t", "steps": steps}


def delta_cases() -> list[dict[str, object]]:
    """Documents in a row and the delta from each to the next (``page_delta``): the hand-built scenario's
    traces grown record by record, a duplicate record, steps kept in another order, a step gone, keys that
    collide."""
    spans = scenario()
    rows: list[tuple[str, list[dict[str, object]]]] = []
    for trace_id in sorted({s.trace_id for s in spans}):
        records = _exported([s for s in spans if s.trace_id == trace_id])
        docs = [to_page(records[:n], live=True) for n in range(1, len(records) + 1)]
        rows.append((f"trace {trace_id[-1]} grown record by record", [*docs, to_page(records)]))
    first = spans[1]
    rows.append(
        (
            "a duplicate record",
            [to_page([first]), to_page([first, dataclasses.replace(first, name="again", end_ns=None)])],
        )
    )
    a, b = _step("a", None, 0), _step("b", None, 5)
    rows.append(
        ("steps kept in another order", [_doc([a, {**b, "parent": 0}]), _doc([b, {**a, "parent": 0}])])
    )
    rows.append(("a step gone", [_doc([a, b]), _doc([{**a, "dur_us": 2}])]))
    rows.append(("keys that collide", [_doc([a]), _doc([a, a, _step("a#2", None, 0)])]))
    return [
        {
            "name": name,
            "docs": docs,
            "deltas": [page_delta(x, y) for x, y in itertools.pairwise(docs)],
        }
        for name, docs in rows
    ]


def test_the_deltas_the_node_tests_apply_are_the_bridge_s() -> None:
    cases = json.loads(json.dumps(delta_cases()))
    if os.environ.get("TOOLSPAN_UPDATE_GOLDEN") == "1":
        DELTAS.write_text(json.dumps(cases, separators=(",", ":"), ensure_ascii=False) + "\n", "utf-8")
    assert json.loads(DELTAS.read_text("utf-8")) == cases
    kinds = {k for case in cases for delta in case["deltas"] for k, v in delta.items() if v}
    assert {"added", "changed", "removed", "order", "conversation", "page"} <= kinds
