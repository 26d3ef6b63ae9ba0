"""``toolspan audit``: the real command on recorded runs; exit status gates CI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.paths import REPO
from tests.support.policy_runs import record_run
from toolspan.exporters.otlp_file import OtlpJsonFileExporter

POLICY = {
    "id": "ci-gate",
    "version": "2026.11",
    "rules": [
        {"id": "no-shell", "kind": "tools", "deny": ["shell"]},
        {"id": "limit", "kind": "arguments", "tool": "transfer", "path": "amount", "max": 100},
    ],
}
POLICY_YAML = """\
id: ci-gate
version: "2026.11"
rules:
  - {id: no-shell, kind: tools, deny: [shell]}
  - {id: limit, kind: arguments, tool: transfer, path: amount, max: 100}
"""


def _audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolspan", "audit", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _record(path: Path, agent: str, steps: list[Any]) -> None:
    exporter = OtlpJsonFileExporter(path)
    exporter.export(record_run(agent, steps))
    exporter.shutdown()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    _record(tmp_path / "clean.jsonl", "assistant", [("transfer", {"amount": 100}, None)])
    _record(
        tmp_path / "bad.jsonl",
        "assistant",
        [("shell", {"cmd": "ls"}, None), ("transfer", {"amount": 101}, None), ("shell", {"cmd": "x"}, False)],
    )
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "policy.yaml").write_text(POLICY_YAML)
    return {p.stem + p.suffix: p for p in tmp_path.iterdir()}


@pytest.mark.processes
def test_clean_run_exits_0_with_a_summary(files: dict[str, Path]) -> None:
    proc = _audit(str(files["clean.jsonl"]), "--policy", str(files["policy.json"]))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        "policy ci-gate version 2026.11: 1 tool call(s) in 1 trace(s):"
        " 0 violation(s), 0 denied, 0 unchecked\n"
    )


@pytest.mark.processes
def test_violations_exit_1_one_line_each(files: dict[str, Path]) -> None:
    proc = _audit(str(files["bad.jsonl"]), str(files["clean.jsonl"]), "--policy", str(files["policy.yaml"]))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("VIOLATION no-shell: trace=")
    assert lines[0].endswith(" tool=shell agent=assistant: tool 'shell' is denied")
    assert lines[1].endswith(
        " tool=transfer agent=assistant: argument 'amount' is 101, above the maximum 100"
    )
    assert lines[2].startswith("DENIED no-shell: ")
    assert lines[3] == (
        "policy ci-gate version 2026.11: 4 tool call(s) in 2 trace(s): 2 violation(s), 1 denied, 0 unchecked"
    )


@pytest.mark.processes
def test_json_report_to_a_file(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = _audit(
        str(files["bad.jsonl"]), "--policy", str(files["policy.json"]), "--format", "json", "-o", str(out)
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    report = json.loads(out.read_text())
    validate("audit", report)
    assert [v["rule_id"] for v in report["violations"]] == ["no-shell", "limit"]
    assert [e["rule_id"] for e in report["enforced"]] == ["no-shell"]
    tool_nodes = report["trees"][0]["execution_tree"]["children"][0]["children"]
    assert [n.get("policy_violations") for n in tool_nodes] == [["no-shell"], ["limit"], None]


def _page_data(html: str) -> Any:
    start = html.index('<script id="ts-data" type="application/json">') + len(
        '<script id="ts-data" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


@pytest.mark.processes
def test_html_page_to_a_file_marks_the_violations_and_exits_1(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "audit.html"
    proc = _audit(
        str(files["bad.jsonl"]),
        str(files["clean.jsonl"]),
        "--policy",
        str(files["policy.json"]),
        "--to",
        "html",
        "-o",
        str(out),
    )
    summary = (
        "toolspan: policy ci-gate version 2026.11: 4 tool call(s) in 2 trace(s): 2 violation(s), 1 denied,"
        " 0 unchecked\n"
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", summary)
    html = out.read_text("utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "connect-src 'none'" in html  # self-contained: no request allowed
    pages = _page_data(html)
    for page in pages:
        validate("page", page)
    marks = [
        (step["label"], step["state"], [(f["outcome"], f["rule_id"]) for f in step["policy_findings"]])
        for page in pages
        for step in page["steps"]
        if "policy_findings" in step
    ]
    assert marks == [
        ("shell", "COMPLETED", [("violation", "no-shell")]),
        ("transfer", "COMPLETED", [("violation", "limit")]),
        ("shell", "DENIED", [("enforced", "no-shell")]),
    ]
    assert sorted(p["audit"]["violations"] for p in pages) == [0, 2]


@pytest.mark.processes
def test_html_page_of_a_clean_run_to_stdout_exits_0(files: dict[str, Path]) -> None:
    proc = _audit(str(files["clean.jsonl"]), "--policy", str(files["policy.json"]), "--to", "html")
    assert proc.returncode == 0
    assert proc.stderr == (
        "toolspan: policy ci-gate version 2026.11: 1 tool call(s) in 1 trace(s): 0 violation(s), 0 denied,"
        " 0 unchecked\n"
    )
    (page,) = _page_data(proc.stdout)
    assert page["audit"] == {
        "policy_id": "ci-gate",
        "policy_version": "2026.11",
        "violations": 0,
        "enforced": 0,
        "unchecked": 0,
    }
    assert [s for s in page["steps"] if "policy_findings" in s] == []


@pytest.mark.processes
def test_to_is_format(files: dict[str, Path]) -> None:
    by_to = _audit(str(files["bad.jsonl"]), "--policy", str(files["policy.json"]), "--to", "json")
    by_format = _audit(str(files["bad.jsonl"]), "--policy", str(files["policy.json"]), "--format", "json")
    assert (by_to.returncode, json.loads(by_to.stdout)) == (
        by_format.returncode,
        json.loads(by_format.stdout),
    )


@pytest.mark.processes
def test_strict_fails_on_unchecked_rules(files: dict[str, Path], tmp_path: Path) -> None:
    doc = {
        "id": "p",
        "version": 1,
        "rules": [{"id": "r", "kind": "arguments", "tool": "t", "path": "x", "max": 1}],
    }
    (tmp_path / "p.json").write_text(json.dumps(doc))
    trace = tmp_path / "t.jsonl"
    spans = record_run("assistant", [("read_file", {"path": "/a"}, None)])
    # A run recorded without arguments: drop the captured content from the exported file.
    exporter = OtlpJsonFileExporter(trace)
    exporter.export(spans)
    exporter.shutdown()
    text = trace.read_text()
    for key in ("gen_ai.tool.call.arguments", "input.value"):
        text = text.replace(f'"key":"{key}"', '"key":"x.removed"').replace(
            f'"key": "{key}"', '"key": "x.removed"'
        )
    trace.write_text(text)
    doc["rules"][0]["tool"] = "read_file"
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert _audit(str(trace), "--policy", str(tmp_path / "p.json")).returncode == 0
    proc = _audit(str(trace), "--policy", str(tmp_path / "p.json"), "--strict")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].endswith(": arguments of 'read_file' were not recorded (capture off?)")


@pytest.mark.processes
def test_unusable_policy_or_input_exits_2_naming_the_problem(files: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{"id": "p", "version": 1, "rules": [{"id": "r", "kind": "x"}]}')
    proc = _audit(str(files["clean.jsonl"]), "--policy", str(tmp_path / "broken.json"))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"toolspan: error: {tmp_path / 'broken.json'}: rules[0].kind: unknown kind 'x'; expected one of"
        " approval, arguments, budget, order, tools\n"
    )
    proc = _audit(str(tmp_path / "nothing-here.jsonl"), "--policy", str(files["policy.json"]))
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolspan: error: ")
    assert "nothing-here.jsonl" in proc.stderr


def test_the_policy_guide_s_example_is_a_valid_policy() -> None:
    import yaml

    from toolspan.policy import parse_policy

    readme = (REPO / "docs" / "policy.md").read_text("utf-8")
    block = next(b.split("```", 1)[0] for b in readme.split("```yaml\n")[1:] if b.startswith("# policy.yaml"))
    pol = parse_policy(yaml.safe_load(block), "docs/policy.md")
    assert (pol.id, pol.version, len(pol.rules)) == ("support-agents", "3", 7)
    assert {type(r).__name__ for r in pol.rules} == {
        "ToolsRule",
        "ArgumentRule",
        "ApprovalRule",
        "BudgetRule",
        "OrderRule",
    }
