"""An edited call, from the user's side (``toolspan convert`` / ``toolspan audit``): wherever a call's
arguments appear they are the arguments the body received, marked edited, with the model's own, who and when.

The trace is a real run (``tests.support.edited_runs``): the model asked ``transfer(amount=5000)``, the
approver ``alice`` allowed it with ``amount=50``, and the body returned ``sent 50 ...``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.edited_runs import (
    CALL_ID,
    EDITED_ARGUMENTS,
    EDITED_BY,
    MODEL_ARGUMENTS,
    decided_at_ns,
    edited_mark,
    edited_run,
)
from toolspan.bridge import to_otlp_json
from toolspan.bridge.model import Span
from toolspan.cli import main


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Span]]:
    spans = edited_run()
    path = tmp_path_factory.mktemp("edited") / "run.json"
    path.write_text(json.dumps(to_otlp_json(spans)), "utf-8")
    return path, spans


def convert(capsys: pytest.CaptureFixture[str], path: Path, to: str) -> str:
    assert main(["convert", str(path), "--to", to]) == 0
    return capsys.readouterr().out


def lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_events_act_carries_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    (act,) = [e for e in lines(convert(capsys, path, "events")) if e["type"] == "act"]
    validate("events", act)
    assert act["tool_input"] == EDITED_ARGUMENTS
    assert act["edited"] == edited_mark(spans)


def test_tree_node_and_tool_called_carry_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    doc = json.loads(convert(capsys, path, "tree"))
    validate("tree", doc)
    (node,) = [n for n in doc["execution_tree"]["children"][0]["children"] if n["type"] == "tool"]
    assert (node["input"], node["edited"]) == (EDITED_ARGUMENTS, edited_mark(spans))
    (called,) = [e["payload"] for e in doc["timeline"] if e["type"] == "tool_called"]
    assert (called["input"], called["edited"]) == (EDITED_ARGUMENTS, edited_mark(spans))


def test_timeline_tool_call_carries_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    (doc,) = json.loads(convert(capsys, path, "timeline"))
    validate("timeline", doc)
    (item,) = [i for i in doc["timeline"] if i["type"] == "tool_call"]
    assert item["toolInput"] == EDITED_ARGUMENTS
    assert item["edited"] == edited_mark(spans, "modelInput")


def test_plans_act_tool_info_carries_the_received_parameters_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = recorded
    doc = json.loads(convert(capsys, path, "plans"))
    validate("plans", doc)
    (plan,) = doc["plans"]
    (info,) = [i for s in plan["agentExecutionSequence"][0]["thinkActSteps"] for i in s["actToolInfoList"]]
    assert json.loads(info["parameters"]) == EDITED_ARGUMENTS
    edited = info["edited"]
    assert edited["by"] == EDITED_BY
    assert json.loads(edited["modelParameters"]) == MODEL_ARGUMENTS
    assert edited["at"].startswith("20")


def test_progress_call_previews_the_received_arguments_once_decided(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    envelopes = lines(convert(capsys, path, "progress"))
    for envelope in envelopes:
        validate("progress", envelope)
    calls = [(e["event"]["type"], e["event"]["call"]) for e in envelopes if "call" in e["event"]]
    # While it waits, the person deciding sees the model's arguments; from the decision on, the edit.
    assert calls[0][0] == "permission_required"
    assert calls[0][1]["inputPreview"] == MODEL_ARGUMENTS
    assert "edited" not in calls[0][1]
    assert [kind for kind, _ in calls[1:]] == ["tool:start", "tool:end", "tool_executed"]
    for _, call in calls[1:]:
        assert call["inputPreview"] == EDITED_ARGUMENTS
        assert call["edited"] == edited_mark(spans, "modelInput")


def test_ag_ui_approval_carries_the_edit_marked(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    events = lines(convert(capsys, path, "ag-ui"))
    for event in events:
        validate("ag-ui", event)
    (decided,) = [e["value"] for e in events if e["type"] == "CUSTOM" and e["value"]["decision"] == "allow"]
    assert decided["arguments"] == EDITED_ARGUMENTS
    assert decided["edited"] == edited_mark(spans, "modelInput")


def test_ai_sdk_tool_part_ends_with_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    chunks = lines(convert(capsys, path, "ai-sdk"))
    for chunk in chunks:
        validate("ai-sdk", chunk)
    inputs = [c for c in chunks if c["type"] == "tool-input-available" and c["toolCallId"] == CALL_ID]
    assert [c["input"] for c in inputs] == [MODEL_ARGUMENTS, EDITED_ARGUMENTS]
    assert inputs[-1]["providerMetadata"] == {"toolspan": {"edited": edited_mark(spans, "modelInput")}}
    # The edit arrives before the outcome: the part the frontend shows with its output holds the edit.
    output = next(i for i, c in enumerate(chunks) if c["type"] == "tool-output-available")
    assert chunks.index(inputs[-1]) < output


def test_html_page_data_shows_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, spans = recorded
    html = convert(capsys, path, "html")
    match = re.search(r'<script id="ts-data" type="application/json">(.*?)</script>', html, re.S)
    assert match is not None
    (page,) = json.loads(match.group(1))
    validate("page", page)
    (step,) = [s for s in page["steps"] if s["kind"] == "tool"]
    assert step["input"] == EDITED_ARGUMENTS
    assert step["edited"] == {
        "by": EDITED_BY,
        "t_us": (decided_at_ns(spans) - min(s.start_ns for s in spans)) // 1000,
        "model_input": MODEL_ARGUMENTS,
    }
    # The edit is not repeated under the raw attributes any more: it is the step's arguments.
    assert "toolspan.tool.call.edited_arguments" not in step.get("attributes", {})


def test_audit_trees_show_the_received_arguments_marked_edited(
    recorded: tuple[Path, list[Span]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, spans = recorded
    policy = tmp_path / "policy.json"
    rule = {"id": "transfer-limit", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 1000}
    policy.write_text(json.dumps({"id": "payments", "version": 1, "rules": [rule]}), "utf-8")
    # The model asked for 5000 (over the limit), the body received 50: the audit judges both.
    code = main(["audit", str(path), "--policy", str(policy), "--to", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    validate("audit", report)
    (tree,) = report["trees"]
    (node,) = [n for n in tree["execution_tree"]["children"][0]["children"] if n["type"] == "tool"]
    assert (node["input"], node["edited"]) == (EDITED_ARGUMENTS, edited_mark(spans))
