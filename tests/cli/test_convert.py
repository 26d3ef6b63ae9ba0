"""``toolspan convert``: inputs, outputs, streaming, exit codes and stderr reporting."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import toolspan
from tests.support.formats import parity_trace, render
from tests.support.paths import REPO, TESTS
from toolspan.bridge import facts, views
from toolspan.bridge.link import LOOKAHEAD
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.cli import main
from toolspan.cli._main import _events_stream

AGENT = TESTS / "fixtures" / "jaeger" / "v1_ui_genai_agent_trace.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def tool_record(end: bool, **attrs: str) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7",
        "name": "execute_tool search",
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": '{"q": "x"}'}},
        ]
        + [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if end:
        span["endTimeUnixNano"] = "1700000000250000000"
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_events_of_the_agent_fixture_are_valid_json_lines_with_one_pair_per_tool_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "convert", str(AGENT), "--to", "events")
    assert (code, err) == (0, "")
    events = [json.loads(line) for line in out.splitlines()]
    schema = views.load_schema("events")
    for event in events:
        jsonschema.validate(event, schema)
    spans, _ = read_spans(AGENT)
    assert sorted(map(json.dumps, events)) == sorted(map(json.dumps, as_json(views.to_events(spans))))
    acts = [e for e in events if e["type"] == "act"]
    observes = [e for e in events if e["type"] == "observe"]
    assert len(acts) == len(observes) > 0
    assert [a["execution_id"] for a in acts] == [o["execution_id"] for o in observes]


def test_sorted_events_are_exactly_the_view_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "convert", str(AGENT), "--to", "events", "--sorted")
    assert code == 0
    spans, _ = read_spans(AGENT)
    assert [json.loads(line) for line in out.splitlines()] == as_json(views.to_events(spans))


@pytest.mark.parametrize(
    ("target", "render_view"),
    [
        ("timeline", views.to_timelines),
        ("tree", views.to_tree),
        ("plans", views.to_plans),
    ],
)
def test_document_targets_write_the_view_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, render_view: Any
) -> None:
    src = tmp_path / "trace.json"
    src.write_bytes(render("tempo_v2", parity_trace()))
    out_file = tmp_path / "out.json"
    code, out, err = run(capsys, "convert", str(src), "--to", target, "-o", str(out_file))
    assert (code, out, err) == (0, "", "")
    assert json.loads(out_file.read_text()) == as_json(render_view(parity_trace()))


def test_progress_target_writes_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_bytes(render("otlp_jsonl", parity_trace()))
    code, out, _ = run(capsys, "convert", str(src), "--to", "progress")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == as_json(views.to_progress(parity_trace()))


def test_tree_of_several_traces_is_an_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    trace = parity_trace()
    other = [dataclasses.replace(s, trace_id="f" * 32) for s in trace]
    (tmp_path / "a.json").write_bytes(render("otlp_json", trace))
    (tmp_path / "b.json").write_bytes(render("tempo_v2", other))
    code, out, _ = run(capsys, "convert", str(tmp_path), "--to", "tree")
    assert code == 0
    assert json.loads(out) == as_json(views.to_trees(trace + other))


def test_an_open_act_record_and_its_completion_stream_as_one_act_and_one_observe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "traces.jsonl"
    src.write_text(
        json.dumps(tool_record(end=False))
        + "\n"
        + json.dumps(tool_record(end=True, **{"gen_ai.tool.call.result": '{"ok": true}'}))
        + "\n"
    )
    code, out, _ = run(capsys, "convert", str(src), "--to", "events")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["type"], e["execution_id"]) for e in events] == [
        ("act", "exec_00f067aa0ba902b7"),
        ("observe", "exec_00f067aa0ba902b7"),
    ]
    assert events[1]["observation"] == {"ok": True}
    assert events[1]["duration_ms"] == 250


def test_events_stream_reads_a_bounded_number_of_spans_ahead() -> None:
    # A tool span may come before its model call in a file: the stream reads LOOKAHEAD spans ahead, no more.
    pulled: list[str] = []
    tool = next(s for s in parity_trace() if s.name.startswith("execute_tool"))
    trace = [
        dataclasses.replace(tool, span_id=f"{0xABC0_0000_0000_0000 + i:016x}") for i in range(LOOKAHEAD + 5)
    ]

    def source() -> Iterator[Span]:
        for span in trace:
            pulled.append(span.span_id)
            yield span

    stream = _events_stream(source())
    first = next(stream)
    assert (first["type"], first["span_id"]) == ("act", trace[0].span_id)
    assert pulled == [s.span_id for s in trace[: LOOKAHEAD + 1]]
    second = next(stream)
    assert (second["type"], second["span_id"]) == ("observe", trace[0].span_id)
    assert len(pulled) == LOOKAHEAD + 1
    third = next(stream)
    assert third["span_id"] == trace[1].span_id
    assert len(pulled) == LOOKAHEAD + 2
    assert len(list(stream)) == 2 * len(trace) - 3


@pytest.mark.processes
def test_stdin_and_the_module_entry_point(tmp_path: Path) -> None:
    data = render("jaeger_v1", parity_trace())
    proc = subprocess.run(
        [sys.executable, "-m", "toolspan", "convert", "-", "--to", "events", "--sorted"],
        input=data,
        capture_output=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert [json.loads(line) for line in proc.stdout.splitlines()] == as_json(views.to_events(parity_trace()))


def test_bad_input_exits_1_with_a_one_line_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(tool_record(end=True)) + "\n" + '{"resourceSpans": 5}\n')
    code, _out, err = run(capsys, "convert", str(src), "--to", "events")
    assert code == 1
    assert err == f"toolspan: error: {src}:2: resourceSpans: not a list: 5\n"
    code, _, err = run(capsys, "convert", str(tmp_path / "missing.json"), "--to", "tree")
    assert (code, err) == (1, f"toolspan: error: {tmp_path / 'missing.json'}: no such file or directory\n")


def test_lenient_mode_reports_skipped_records_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(tool_record(end=True)) + "\n" + '{"resourceSpans": 5}\n')
    code, out, err = run(capsys, "convert", str(src), "--to", "events", "--lenient")
    assert code == 0
    assert len(out.splitlines()) == 2
    assert err.splitlines() == [
        f"toolspan: skipped: {src}:2: resourceSpans: not a list: 5",
        "toolspan: read 1 span(s); skipped 1 bad record(s)",
    ]


def test_partial_traces_are_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(render("tempo_v2", parity_trace()))
    doc["status"] = "PARTIAL"
    src = tmp_path / "partial.json"
    src.write_text(json.dumps(doc))
    code, _, err = run(capsys, "convert", str(src), "--to", "tree")
    assert code == 0
    assert err == (
        f"toolspan: warning: {src}:1: status: PARTIAL trace 0000000000000000a1b2c3d4e5f60718: "
        "the backend returned a partial trace\n"
    )


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["convert", "x.json", "--to", "nonsense"])
    assert info.value.code == 2
    assert main([]) == 2
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "usage", "error"),
    [
        (["convert", "x.json", "--too", "events"], "usage: toolspan convert", "--too (did you mean --to?)"),
        (["convert", "x.json", "--to", "events", "--lenent"], "usage: toolspan convert", "--lenient?)"),
        (
            ["audit", "x.json", "--polcy", "p.json"],
            "usage: toolspan audit",
            "--polcy (did you mean --policy?)",
        ),
        (["serve", "--tokn", "t"], "usage: toolspan serve", "--tokn (did you mean --token?)"),
    ],
)
def test_a_misspelled_flag_gets_its_command_s_usage(
    argv: list[str], usage: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's own usage (which lists the flag meant) and the closest flag, not the top-level usage."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith(usage)
    (last,) = [line for line in err.splitlines() if "error:" in line]
    assert last.startswith(f"toolspan {argv[0]}: error: unrecognized arguments: ")
    assert last.endswith(error)
    assert "usage: toolspan [-h]" not in err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["convrt", "x.json", "--to", "events"], " (did you mean convert?);"),
        (["fech", "--jaeger", "http://127.0.0.1:1", "1"], " (did you mean fetch?);"),
        (["serv"], " (did you mean serve?);"),
        (["zzz"], ";"),  # nothing close: no guess, the list alone
    ],
)
def test_a_mistyped_command_gets_the_command_it_meant(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = argv[0]
    commands = "convert, audit, fetch, find, serve"
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: toolspan [-h]")
    (last,) = [line for line in err.splitlines() if "error:" in line]
    assert last == (f"toolspan: error: unknown command {command!r}{hint} the commands are {commands}")


def test_progress_bar_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_bytes(render("otlp_jsonl", parity_trace()))
    code, _, err = run(capsys, "convert", str(src), "--to", "events", "--progress", "-o", str(tmp_path / "o"))
    assert code == 0
    assert err.startswith("\r[")
    assert err.rstrip("\n").endswith(f"100.0%  0.0/0.0 MB  {len(parity_trace())} spans")


@pytest.mark.processes
def test_the_convert_benchmark_runs_end_to_end_on_a_tiny_input(tmp_path: Path) -> None:
    repo = REPO
    data, results = tmp_path / "spans.jsonl", tmp_path / "convert.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(repo / "benchmarks" / "bench_convert.py"),
            "--spans",
            "2000",
            "--input",
            str(data),
            "--results",
            str(results),
            "--skip-inprocess",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(results.read_text())
    assert doc["input"]["spans"] == 2000
    assert doc["input"]["lines"] == 10  # 200 spans per request line
    stdlib = doc["convert_subprocess"]["stdlib"]
    assert stdlib["ratio_to_json_loads_cpu"] > 0
    assert stdlib["peak_rss_bytes"] > 0
    spans, report = read_spans(data)
    assert len(spans) == 2000
    assert report.issues == []
    kinds = {facts.classify(s) for s in spans}
    assert {"tool", "agent", "llm"} <= kinds


def test_the_json_backends_write_the_same_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    outputs = []
    for backend in ("stdlib", "auto"):
        monkeypatch.setenv("TOOLSPAN_JSON", backend)
        target = tmp_path / f"{backend}.jsonl"
        assert main(["convert", str(AGENT), "--to", "events", "-o", str(target)]) == 0
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == len(outputs[0].splitlines()) > 0


@pytest.mark.processes
def test_version_flag_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"toolspan {metadata.version('toolspan')}\n"
    done = subprocess.run(
        [sys.executable, "-m", "toolspan", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout == f"toolspan {toolspan.__version__}\n"
    assert done.stderr == ""


# --- hostile input through the CLI ------------------------------------------------------------------

NOT_A_TRACE = (
    "not a trace file (expected OTLP JSON or JSON Lines, Jaeger, Tempo or Phoenix JSON, OTLP protobuf, "
    "or gzip of one)"
)


RANDOM = b"\x9c\x13" + bytes(range(200, 256))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(30)


def hostile_corpus(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Input files no reader should accept, each with the one-line reason the CLI must give."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = json.dumps(tool_record(end=True)) + "\n"
    gz = gzip.compress(good.encode() * 20)
    cut_at = len(zlib.decompressobj(31).decompress(gz[:-30]))
    cases: dict[str, tuple[bytes, str]] = {
        "random.bin": (RANDOM, f": {NOT_A_TRACE}; it starts with the bytes {RANDOM[:16].hex(' ')}..."),
        "notes.txt": (b"hello\n", f': {NOT_A_TRACE}; it starts with the text "hello\\n"'),
        "image.png": (PNG, f": {NOT_A_TRACE}; it is a PNG image"),
        "zeros.bin": (bytes(64), f": {NOT_A_TRACE}; it starts with the bytes {bytes(16).hex(' ')}..."),
        "cut.jsonl.gz": (gz[:-30], f": gzip data cut off after {cut_at:,} decompressed bytes"),
        "time.jsonl": (
            good.replace("1700000000000000000", "100000000000000000000000000").encode(),
            ":1: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: out of range: "
            "100000000000000000000000000 (nanoseconds since the Unix epoch: 0 to 2**64-1)",
        ),
    }
    out = {}
    for name, (data, reason) in cases.items():
        path = corpus / name
        path.write_bytes(data)
        out[name] = (path, f"{path}{reason}")
    return out


def test_every_hostile_file_exits_1_with_its_one_line_reason_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (path, reason) in hostile_corpus(tmp_path).items():
        target = tmp_path / f"{name}.out"
        code, out, err = run(capsys, "convert", str(path), "--to", "events", "-o", str(target))
        assert (code, out, err) == (1, "", f"toolspan: error: {reason}\n"), name
        assert not target.exists()


def test_lenient_reports_each_hostile_file_counts_them_and_converts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = hostile_corpus(tmp_path)
    good = tmp_path / "corpus" / "zz-good.jsonl"
    good.write_text(json.dumps(tool_record(end=True)) + "\n")
    paths = [str(path) for path, _ in sorted(corpus.values())]
    code, out, err = run(capsys, "convert", *paths, str(good), "--to", "events", "--lenient")
    assert code == 0
    reasons = [reason for _, reason in sorted(corpus.values())]
    # The cut gzip holds whole lines before its cut: they are converted too.
    whole_lines = zlib.decompressobj(31).decompress(corpus["cut.jsonl.gz"][0].read_bytes()).count(b"\n")
    assert whole_lines > 0
    assert err.splitlines() == [f"toolspan: skipped: {r}" for r in reasons] + [
        f"toolspan: read {1 + whole_lines} span(s); skipped {len(reasons)} bad record(s)"
    ]
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in events] == ["act", "observe"] * (1 + whole_lines)


@pytest.mark.parametrize("to", ["events", "tree", "html"])
def test_an_input_without_spans_is_said_and_exits_1_leaving_no_output(
    tmp_path: Path, to: str, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / "out"
    assert main(["convert", str(empty), "--to", to, "-o", str(out)]) == 1
    assert capsys.readouterr().err == f"toolspan: no spans in {empty}\n"
    assert not out.exists()  # no page with an empty axis, no empty stream


@pytest.mark.processes
def test_dev_zero_stops_at_once_in_both_modes(tmp_path: Path) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.fail("/dev/zero missing")
    for extra in ([], ["--lenient"]):
        proc = subprocess.run(
            [sys.executable, "-m", "toolspan", "convert", "/dev/zero", "--to", "events", *extra],
            capture_output=True,
            timeout=60,
            check=False,
        )
        label = "skipped" if extra else "error"
        assert proc.stderr.decode().splitlines()[0] == (
            f"toolspan: {label}: /dev/zero: {NOT_A_TRACE}; it starts with the bytes {bytes(16).hex(' ')}..."
        )
        # Leniency skips the bad record; with nothing else read, nothing was converted: exit 1 all the same.
        assert (proc.returncode, proc.stdout) == (1, b"")
        if extra:
            assert proc.stderr.decode().splitlines()[-1] == "toolspan: no spans in /dev/zero"


@pytest.mark.parametrize("backend", ["stdlib", "auto"])
@pytest.mark.parametrize("target", ["events", "tree", "timeline", "progress", "plans"])
def test_output_is_strict_json_with_non_finite_numbers_in_the_input(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    target: str,
) -> None:
    monkeypatch.setenv("TOOLSPAN_JSON", backend)
    record = tool_record(end=True)
    attrs = record["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attrs[2]["value"]["stringValue"] = '{"q": NaN, "r": [Infinity, -Infinity]}'
    attrs.append({"key": "score", "value": {"doubleValue": "NaN"}})
    attrs.append({"key": "gen_ai.tool.call.result", "value": {"stringValue": "1e999"}})
    src = tmp_path / "nan.jsonl"
    src.write_text(json.dumps(record) + "\n")
    code, out, err = run(capsys, "convert", str(src), "--to", target)
    assert (code, err) == (0, "")

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in the {backend} output")

    docs = (
        [json.loads(line, parse_constant=refuse) for line in out.splitlines()]
        if target in ("events", "progress")
        else [json.loads(out, parse_constant=refuse)]
    )
    assert docs
    if target == "events":
        act = docs[0]
        # A non-finite number in JSON text reads as the OTLP/JSON string, whichever the JSON library.
        assert act["tool_input"] == {"q": "NaN", "r": ["Infinity", "-Infinity"]}


def test_a_directory_holding_convert_outputs_converts_its_traces_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`toolspan convert .` in the Quickstart's directory: the views it wrote there before (and the
    timeline exporter's files) are not traces and are left out; the traces convert as alone."""
    traces = tmp_path / "traces.json"
    traces.write_bytes(AGENT.read_bytes())
    policy = tmp_path.parent / f"{tmp_path.name}-policy.json"  # outside: a policy is no output
    policy.write_text(json.dumps({"id": "p", "version": 1, "rules": []}))
    audit = [
        "audit",
        str(traces),
        "--policy",
        str(policy),
        "--to",
        "json",
        "-o",
        str(tmp_path / "audit.json"),
    ]
    assert run(capsys, *audit)[0] == 0
    for target, name, extra in [
        ("timeline", "timeline.json", ("--indent", "2")),
        ("tree", "tree.json", ()),
        ("plans", "plans.json", ("--indent", "4")),
        ("events", "events.jsonl", ()),
        ("progress", "progress.jsonl", ()),
        ("html", "run.html", ()),
    ]:
        assert run(capsys, "convert", str(traces), "--to", target, "-o", str(tmp_path / name), *extra)[0] == 0
    sub = tmp_path / "toolspan-timeline"
    sub.mkdir()
    (sub / "events.jsonl").write_bytes((tmp_path / "events.jsonl").read_bytes())
    assert run(capsys, "convert", str(traces), "--to", "tree", "-o", str(sub / "abc.tree.json"))[0] == 0
    alone = run(capsys, "convert", str(traces), "--to", "events")
    assert run(capsys, "convert", str(tmp_path), "--to", "events") == alone
    assert alone[0] == 0
    assert alone[1].count("\n") >= 2
    # Named explicitly, an output file is still an error: the user asked for it.
    code, out, err = run(capsys, "convert", str(tmp_path / "timeline.json"), "--to", "events")
    assert (code, out) == (1, "")
    assert "not a trace document of a known format" in err


@pytest.mark.processes
@pytest.mark.parametrize("command", ["convert", "audit", "serve"])
def test_help_reads_as_text_with_defaults(command: str) -> None:
    """`--help` of every command: no reST markup from the docstrings, each meaningful default shown."""
    done = subprocess.run(
        [sys.executable, "-m", "toolspan", command, "--help"], capture_output=True, text=True, check=True
    )
    text = done.stdout
    assert "``" not in text
    assert ":func:" not in text
    flat = " ".join(text.split())
    expected = {
        "convert": ["Reads spans from files", "--to {events,timeline,tree,plans,progress,ag-ui,ai-sdk,html}"],
        "audit": ["(default: text)", "--format is its old name"],
        "serve": [
            "Open http://HOST:PORT/traces in a browser (/ leads there)",
            "address to bind (default: 127.0.0.1)",
            "(default: 4318)",
            "(default: 4317)",
            "SQLite file (WAL; created if missing), or a postgresql:// URL for replicas sharing one store"
            " (or TOOLSPAN_DATABASE_URL; default toolspan.db)",
            "(or TOOLSPAN_SERVER_TOKEN)",
        ],
    }[command]
    for phrase in expected:
        assert phrase in flat, phrase
    assert "(default: None)" not in flat
    assert "(default: False)" not in flat


@pytest.mark.processes
def test_the_top_level_help_points_at_each_command() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "toolspan", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "'toolspan COMMAND --help' describes each command" in " ".join(text.split())
    for command in ("convert", "audit", "serve"):
        assert command in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("serve"))
    assert "the trace list at /traces" in " ".join(" ".join(lines[at : at + 2]).split())
