"""Hostile policies and hostile traces: a malformed policy is always a one-line ``PolicyError`` (exit 2 from
``toolspan audit``, never a traceback nor 1, which means "violated"); patterns run in linear time; the
reports write hostile names as data, in every format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolspan
from toolspan.policy import PolicyError, load_policy, parse_policy
from toolspan.policy._engine import Call, Checker
from toolspan.policy._model import ArgumentRule

BASE = {"id": "p", "version": 1}


def _rule(**fields: Any) -> dict[str, Any]:
    return {**BASE, "rules": [{"id": "r", "kind": "arguments", "tool": "t", "path": "x", **fields}]}


def _audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolspan", "audit", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


HOSTILE_FILES: list[tuple[str, bytes, str]] = [
    ("huge-max.json", json.dumps(_rule(max=10**400)).encode(), "rules[0].max: expected a finite number"),
    (
        "huge-int.json",
        b'{"id": "p", "version": ' + b"9" * 4301 + b', "rules": []}',
        "not a usable JSON document",
    ),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (
        "deep-object.json",
        json.dumps(
            _rule(enum=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])
        ).encode(),
        "nested deeper than 32",
    ),
    (
        "dup.json",
        b'{"id": "p", "version": 1, "rules": [{"id": "a", "kind": "tools", "deny": "shell"}], "rules": []}',
        "duplicate key 'rules'",
    ),
    (
        "dup.yaml",
        b"id: p\nversion: 1\nrules:\n  - {id: a, kind: tools, deny: shell}\nrules: []\n",
        "duplicate key 'rules'",
    ),
    (
        "bomb.yaml",
        b"id: p\nversion: 1\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"rules:\n  - {id: r, kind: arguments, tool: t, path: x, enum: [*b, *b, *b, *b, *b, *b, *b, *b]}\n",
        "anchors are not allowed",
    ),
    ("merge.yaml", b"id: p\nversion: 1\nrules:\n  - {<<: {id: r}, kind: tools, deny: x}\n", "merge keys"),
    (
        "big-int.yaml",
        b"id: p\nversion: 1\nrules: []\nx: " + b"9" * 5000 + b"\n",
        "not a usable YAML document",
    ),
    ("deep.yaml", b"[" * 20_000 + b"]" * 20_000, "nested too deeply"),
    ("binary.json", b"\xff\xfe\x00", "not UTF-8 text"),
    ("large.json", b" " * ((1 << 20) + 1), "larger than 1048576 bytes"),
    ("lookahead.json", json.dumps(_rule(pattern="(?=a)a")).encode(), "not a valid RE2 regular expression"),
    ("backref.json", json.dumps(_rule(not_pattern=r"(a)\1")).encode(), "not a valid RE2 regular expression"),
    (
        "long-path.json",
        json.dumps(
            _rule(max=1) | {"rules": [{**_rule(max=1)["rules"][0], "path": ".".join("a" * 40)}]}
        ).encode(),
        "40 segments",
    ),
    (
        "huge-count.json",
        json.dumps({**BASE, "rules": [{"id": "b", "kind": "budget", "max_calls": 10**30}]}).encode(),
        "expected a whole number",
    ),
    (
        "nan.json",
        b'{"id": "p", "version": 1, "rules": [{"id": "r", "kind": "arguments", "tool": "t", "path": "x",'
        b' "max": NaN}]}',
        "expected a finite number",
    ),
]


@pytest.mark.processes
@pytest.mark.parametrize(
    ("name", "content", "message"), HOSTILE_FILES, ids=lambda v: v if isinstance(v, str) and "." in v else ""
)
def test_a_hostile_policy_file_is_a_one_line_policy_error_and_exit_2(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert message in str(info.value)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 400
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    done = _audit(str(trace), "--policy", str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("toolspan: error: "), done.stderr
    assert message in done.stderr


def test_a_policy_read_from_a_device_that_never_ends_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(PolicyError, match="larger than 1048576 bytes"):
        load_policy("/dev/zero")  # read (never written): at most the cap plus one byte


def test_configure_raises_policy_error_for_a_hostile_policy(tmp_path: Path, fresh_config: None) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_rule(max=10**400)))
    with pytest.raises(PolicyError, match="expected a finite number"):
        toolspan.configure(policy=path, instrument_threading=False)


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("a.0", ("a", 0)),
        ("a.\u00b2", ("a", "\u00b2")),  # a superscript two is a key, not index 2
        ("a.\u0663", ("a", "\u0663")),  # nor is an Arabic-Indic three index 3
        ("a.12.b", ("a", 12, "b")),
    ],
)
def test_only_ascii_digits_make_a_list_index(path: str, parts: tuple[Any, ...]) -> None:
    (rule,) = parse_policy(
        {**BASE, "rules": [{"id": "r", "kind": "arguments", "tool": "t", "path": path, "required": True}]}
    ).rules
    assert isinstance(rule, ArgumentRule)
    assert rule.path == parts


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "id",
        "kind",
        "agent",
        "tool",
        "tools",
        "path",
        "pattern",
        "not_pattern",
        "min",
        "max",
        "max_length",
        "enum",
        "required",
        "allow",
        "deny",
        "max_calls",
        "after",
        "forbid",
        "unless_approved",
    ]
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["tools", "arguments", "approval", "budget", "order", "nope"]),
    fields=st.dictionaries(
        FIELDS, JSONISH | st.integers(min_value=-(10**500), max_value=10**500), max_size=6
    ),
)
def test_any_rule_is_a_policy_or_a_policy_error(kind: str, fields: dict[str, Any]) -> None:
    try:
        policy = parse_policy({**BASE, "rules": [{"id": "r", "kind": kind, **fields}]}, "f.json")
    except PolicyError as e:
        message = str(e)
    else:
        message = ""
    if message:
        assert "\n" not in message
        assert message.startswith("f.json")
        return
    # What parsed can be used: checking any call never raises.
    checker = Checker(policy)
    checker.check(Call(tool="t", arguments={"x": fields.get("enum"), "a": [1, "b"]}))


@settings(max_examples=200, deadline=None)
@given(number=st.integers(min_value=-(10**400), max_value=10**400) | st.floats())
def test_numbers_in_a_policy_are_finite_or_refused(number: Any) -> None:
    try:
        (rule,) = parse_policy(_rule(max=number, min=number)).rules
    except PolicyError as e:
        message = str(e)
    else:
        message = ""
    if message:
        assert "expected a finite number" in message
        return
    assert isinstance(rule, ArgumentRule)
    assert rule.max is not None
    assert abs(rule.max) < float("inf")


@settings(max_examples=200, deadline=None)
@given(pattern=st.text(max_size=40))
def test_any_pattern_compiles_to_a_linear_time_matcher_or_is_refused(pattern: str) -> None:
    try:
        (rule,) = parse_policy(_rule(not_pattern=pattern)).rules
    except PolicyError as e:
        message = str(e)
    else:
        message = ""
    if message:
        assert "\n" not in message
        return
    assert isinstance(rule, ArgumentRule)
    assert rule.not_pattern is not None
    assert type(rule.not_pattern._compiled).__module__.startswith("re2")
    rule.not_pattern.search("a" * 1000 + "\ud800")  # a lone surrogate in an argument never raises


def test_a_backtracking_pattern_runs_in_linear_time_on_hostile_arguments() -> None:
    (rule,) = parse_policy(_rule(pattern="^(a+)+$")).rules
    assert isinstance(rule, ArgumentRule)
    # On Python's backtracking engine this argument takes longer than the test suite; RE2 answers at once.
    verdict = Checker(parse_policy(_rule(pattern="^(a+)+$"))).check(
        Call(tool="t", arguments={"x": "a" * 28 + "b"})
    )
    assert [f.rule_id for f in verdict.violations] == ["r"]
    verdict = Checker(parse_policy(_rule(pattern="^(a+)+$"))).check(
        Call(tool="t", arguments={"x": "a" * 70 + "!"})
    )
    assert [f.rule_id for f in verdict.violations] == ["r"]


HOSTILE_NAMES = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), min_size=1, max_size=12
).filter(lambda s: s.strip())


def _trace(tool: str, agent: str) -> dict[str, Any]:
    def attrs(d: dict[str, str]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in d.items()]

    root = {
        "traceId": "0" * 31 + "1",
        "spanId": "0" * 15 + "1",
        "name": "invoke_agent",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "9",
        "attributes": attrs({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}),
    }
    child = {
        "traceId": "0" * 31 + "1",
        "spanId": "0" * 15 + "2",
        "parentSpanId": "0" * 15 + "1",
        "name": "execute_tool",
        "startTimeUnixNano": "2",
        "endTimeUnixNano": "3",
        "attributes": attrs(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": "{}",
            }
        ),
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [root, child]}]}]}


def _as_read(name: str) -> str:
    """``name`` as a trace file's reader gives it back: each lone surrogate as the text of its escape."""
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", name)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=HOSTILE_NAMES, agent=HOSTILE_NAMES)
def test_hostile_names_are_data_in_every_report_format(tmp_path: Path, tool: str, agent: str) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(_trace(tool, agent)), "utf-8")  # lone surrogates as JSON escapes
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({**BASE, "rules": [{"id": "deny-all", "kind": "tools", "deny": "*"}]}))
    from toolspan.cli import _main as cli

    for fmt in ("text", "json", "html"):
        out = tmp_path / f"report.{fmt}"
        assert cli.main(["audit", str(trace), "--policy", str(policy), "--to", fmt, "-o", str(out)]) == 1
        data = out.read_bytes()
        text = data.decode("utf-8")  # always valid UTF-8
        if fmt == "text":
            lines = text.splitlines(keepends=True)
            assert len(lines) == 2
            assert all(line.endswith("\n") for line in lines)
            assert lines[0].startswith("VIOLATION deny-all: ")
            assert not any(0xD800 <= ord(c) < 0xE000 or (ord(c) < 0x20 and c != "\n") for c in text)
        elif fmt == "json":
            report = json.loads(text)
            # A lone surrogate is read as the text of its escape (the readers' one boundary), all else as is.
            assert report["violations"][0]["tool_name"] == _as_read(tool)
            assert report["violations"][0]["agent"] == _as_read(agent)
        else:
            assert text.startswith("<!DOCTYPE html>")


@settings(max_examples=300, deadline=None)
@given(path=st.text(max_size=60))
def test_any_path_is_keys_and_ascii_indices_or_refused(path: str) -> None:
    try:
        (rule,) = parse_policy(_rule(path=path, required=True)).rules
    except PolicyError as e:
        message = str(e)
    else:
        message = ""
    if message:
        assert message.startswith("policy: rules[0].path:")
        return
    assert isinstance(rule, ArgumentRule)
    assert len(rule.path) <= 32
    for part, text in zip(rule.path, path.split("."), strict=True):
        if isinstance(part, int):
            assert text.isascii()
            assert text.isdigit()
        else:
            assert part == text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where_key=st.sampled_from(
        [("top", k) for k in ("id", "version", "rules")] + [("rule", k) for k in ("id", "kind", "deny")]
    ),
    yaml_format=st.booleans(),
)
def test_a_duplicate_key_anywhere_is_refused(
    tmp_path: Path, where_key: tuple[str, str], yaml_format: bool
) -> None:
    where, key = where_key
    rule = '{"id": "a", "kind": "tools", "deny": "x"' + (f', "{key}": "y"' if where == "rule" else "") + "}"
    top = f', "{key}": "z"' if where == "top" else ""
    text = '{"id": "p", "version": 1, "rules": [' + rule + "]" + top + "}"
    path = tmp_path / ("p.yaml" if yaml_format else "p.json")  # JSON is YAML: the same text both ways
    path.write_text(text)
    with pytest.raises(PolicyError, match=f"duplicate key '{key}'"):
        load_policy(path)
