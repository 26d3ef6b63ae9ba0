"""docs/formats: one page per output format, each example valid against its JSON Schema and real output.

Each page links its schema (``.../schemas/<name>.schema.json``) and marks its example with
``<!-- format-example -->`` before a fenced ``json`` block: one document, or for the streams (events,
progress) one JSON value per line. Every example is taken from the golden test data, so it is what the
views really produce.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.paths import REPO
from toolspan.bridge.views import SCHEMA_NAMES, load_schema
from toolspan.cli import main

DOCS = REPO / "docs" / "formats"
GOLDEN = REPO / "tests" / "golden"
PAGES = {
    "events": "act-observe-events.md",
    "plans": "plan-records.md",
    "timeline": "conversation-timeline.md",
    "progress": "progress-stream.md",
    "tree": "execution-tree.md",
    "audit": "policy-audit.md",
    "page": "trace-page.md",
    "page-delta": "page-delta.md",
    "ag-ui": "ag-ui.md",
    "ai-sdk": "ai-sdk.md",
}
STREAMS = {"events", "progress", "ag-ui", "ai-sdk"}
_EXAMPLE = re.compile(r"^<!-- format-example -->\n```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def example(page: str, name: str) -> list[Any]:
    """The example's values: one per line for a stream, else the one document."""
    (block,) = _EXAMPLE.findall((DOCS / page).read_text(encoding="utf-8"))
    if name in STREAMS:
        return [json.loads(line) for line in block.splitlines()]
    return [json.loads(block)]


def golden(name: str) -> list[Any]:
    data = json.loads((GOLDEN / f"hand_{name}.json").read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def test_one_page_per_format_and_nothing_else() -> None:
    assert set(PAGES) == set(SCHEMA_NAMES)
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(PAGES.values())


@pytest.mark.parametrize(("name", "page"), sorted(PAGES.items()))
def test_page_links_its_schema_and_its_example_validates(name: str, page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    link = f"(../../src/toolspan/bridge/schemas/{name}.schema.json)"
    assert link in text
    assert (DOCS / link[1:-1]).resolve().is_file()
    values = example(page, name)
    assert values
    for value in values:
        validate(name, value)
        assert value in golden(name)  # real output of the views, not hand-written


@pytest.mark.parametrize(("name", "page"), sorted(PAGES.items()))
def test_page_names_the_format_and_documents_every_top_level_field(name: str, page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert "seed" not in text.lower()
    fields = {key for value in example(page, name) for key in value}
    undocumented = sorted(f for f in fields if f"`{f}`" not in text)
    assert undocumented == []


def test_trace_page_audit_example_is_real_output() -> None:
    text = (DOCS / PAGES["page"]).read_text(encoding="utf-8")
    (block,) = re.findall(r"^<!-- audit-example -->\n```json\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    example_doc = json.loads(block)
    pages = json.loads((GOLDEN / "hand_audit_page.json").read_text(encoding="utf-8"))
    (page,) = [
        p for p in pages if p["audit"] == example_doc["audit"] and example_doc["steps"][0] in p["steps"]
    ]
    validate("page", page)
    assert [s for s in page["steps"] if "policy_findings" in s] == example_doc["steps"]
    assert "`audit`" in text
    assert "`policy_findings`" in text


def test_an_invalid_example_is_rejected() -> None:
    (first,) = example(PAGES["tree"], "tree")
    broken = dict(first, job_id=7)
    with pytest.raises(Exception, match="is not of type 'string'"):
        validate("tree", broken)


FORMAT_NAMES = {
    "events": "act/observe event stream",
    "plans": "plan records",
    "timeline": "conversation timeline",
    "progress": "progress stream",
    "tree": "execution tree",
}


def test_formats_are_named_for_what_they_are_wherever_a_user_sees_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not by the number of the design document they came from ("seed 000", ...)."""
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    cli_help = " ".join(capsys.readouterr().out.split())
    readme = (DOCS.parent / "bridge.md").read_text(encoding="utf-8")
    for name, title in FORMAT_NAMES.items():
        schema = load_schema(name)
        assert title in schema["title"]
        assert f"docs/formats/{PAGES[name]}" in schema["description"]
        assert f"{name} ({title})" in cli_help
        assert f"[{title}](formats/{PAGES[name]})" in readme
        assert (DOCS / PAGES[name]).read_text(encoding="utf-8").lower().startswith(f"# {title}")
    texts = [readme, cli_help, *(json.dumps(load_schema(n)) for n in FORMAT_NAMES)]
    assert [t for t in texts if re.search(r"seed \d", t, re.IGNORECASE)] == []
