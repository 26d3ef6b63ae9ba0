"""The trace page's script as checked files: ``toolspan.page.TRACE_SCRIPTS`` is every file of ``page/trace/``,
once; their JSDoc types pass ``tsc --checkJs`` (``tests/page/js/tsconfig.json``, strict), and the pure
helpers pass their ``node --test`` tests (``tests/page/js/*.test.mjs``). ``scripts/test.sh`` runs both as
lint steps; these tests run them too when Node.js and TypeScript (``npm ci`` in ``tests/node``) are here,
so a plain pytest run catches a type error."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO, TESTS
from toolspan.page import TRACE_SCRIPTS, render_html, trace_script

TRACE = REPO / "src" / "toolspan" / "page" / "trace"
JS = TESTS / "page" / "js"
# A string literal that starts as a path ("/api/...") or holds a scheme ("https://..."); "#" and "/" alone
# (a fragment, the search key) are no URL.
URL_LITERAL = re.compile(r"""["'`](?:/[\w.-]|[a-z][\w+.-]*://)""")
TSC = TESTS / "node" / "node_modules" / "typescript" / "bin" / "tsc"


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
