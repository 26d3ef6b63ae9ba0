"""``toolspan convert -o``: the output replaces its target only on success, and is never an input."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolspan.cli import main

TRACE = "0af7651916cd43dd8448eb211c80319c"


def record(span_id: str = "00f067aa0ba902b7", name: str = "execute_tool search") -> str:
    span = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000250000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def expected_events(tmp_path: Path, capsys: pytest.CaptureFixture[str], *records: str) -> str:
    """What stdout gets for these records (the reference for what ``-o`` should hold)."""
    ref = tmp_path / "reference" / "in.jsonl"
    ref.parent.mkdir()
    ref.write_text("".join(records))
    code, out, err = run(capsys, "convert", str(ref), "--to", "events")
    assert (code, err) == (0, "")
    return out


def test_output_equal_to_the_input_is_refused_and_the_input_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_text(record())
    code, out, err = run(capsys, "convert", str(src), "--to", "events", "-o", str(src))
    assert (code, out) == (2, "")
    assert err == f"toolspan: error: {src} is also the input {src}; write elsewhere\n"
    assert src.read_text() == record()
    assert listing(tmp_path) == ["trace.jsonl"]


@pytest.mark.parametrize("spelling", ["dot", "link", "hardlink", "glob"])
def test_every_spelling_of_the_same_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_text(record())
    output = str(src)
    given = str(src)
    if spelling == "dot":
        output = str(tmp_path / "." / "sub" / ".." / "trace.jsonl")
        (tmp_path / "sub").mkdir()
    elif spelling == "link":
        os.symlink(src, tmp_path / "link.jsonl")
        output = str(tmp_path / "link.jsonl")
    elif spelling == "hardlink":
        os.link(src, tmp_path / "hard.jsonl")
        output = str(tmp_path / "hard.jsonl")
    else:
        given = str(tmp_path / "*.jsonl")
    code, _, err = run(capsys, "convert", given, "--to", "tree", "-o", output)
    assert code == 2
    assert err == f"toolspan: error: {output} is also the input {src}; write elsewhere\n"
    assert src.read_text() == record()


def test_a_failed_read_leaves_an_existing_output_untouched_and_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(record() + '{"resourceSpans": 5}\n')
    out = tmp_path / "events.jsonl"
    out.write_text("previous run\n")
    code, stdout, err = run(capsys, "convert", str(src), "--to", "events", "-o", str(out))
    assert (code, stdout) == (1, "")
    assert err == f"toolspan: error: {src}:2: resourceSpans: not a list: 5\n"
    assert out.read_text() == "previous run\n"
    assert listing(tmp_path) == ["bad.jsonl", "events.jsonl"]


def test_success_replaces_the_output_keeping_its_permissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = expected_events(tmp_path, capsys, record())
    src = tmp_path / "in.jsonl"
    src.write_text(record())
    out = tmp_path / "events.jsonl"
    out.write_text("previous run, a longer text than the new output would be if it were not replaced\n" * 9)
    out.chmod(0o640)
    code, stdout, err = run(capsys, "convert", str(src), "--to", "events", "-o", str(out))
    assert (code, stdout, err) == (0, "", "")
    assert out.read_text() == want
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert listing(tmp_path) == ["events.jsonl", "in.jsonl", "reference"]


def test_a_new_output_gets_the_permissions_of_a_plain_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(record())
    out = tmp_path / "new.json"
    old = os.umask(0o027)
    try:
        code, _, err = run(capsys, "convert", str(src), "--to", "tree", "-o", str(out))
    finally:
        os.umask(old)
    assert (code, err) == (0, "")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert json.loads(out.read_text())["job_id"] == TRACE


def test_a_symlinked_output_is_written_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(record())
    real = tmp_path / "real.json"
    real.write_text("old")
    (tmp_path / "link.json").symlink_to(real)
    code, _, err = run(capsys, "convert", str(src), "--to", "tree", "-o", str(tmp_path / "link.json"))
    assert (code, err) == (0, "")
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads(real.read_text())["job_id"] == TRACE


def test_an_output_inside_an_input_directory_is_never_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = expected_events(tmp_path, capsys, record())
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "a.jsonl").write_text(record())
    out = traces / "out.jsonl"
    # The second run finds the first run's output in the directory: a file toolspan wrote, skipped as such.
    # The third finds a trace there (the output path now holds one): not read either, and said so.
    for run_number in (1, 2, 3):
        if run_number == 3:
            out.write_text(record())
        code, _, err = run(capsys, "convert", str(traces), "--to", "events", "-o", str(out))
        assert code == 0
        assert err == ("" if run_number < 3 else f"toolspan: note: not reading {out}: it is the output\n")
        assert out.read_text() == want
        assert listing(traces) == ["a.jsonl", "out.jsonl"]


@pytest.mark.parametrize(
    ("output", "code", "message"),
    [
        ("dir", 2, "{p}: the output is a directory; name a file"),
        ("missing/out.json", 1, "{p}: cannot write: No such file or directory"),
    ],
)
def test_unusable_outputs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, code: int, message: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(record())
    (tmp_path / "dir").mkdir()
    target = str(tmp_path / output)
    got, _, err = run(capsys, "convert", str(src), "--to", "tree", "-o", target)
    assert (got, err) == (code, f"toolspan: error: {message.format(p=target)}\n")


def cli(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "toolspan", *args], capture_output=False, check=False, **kwargs
    )


@pytest.mark.processes
def test_stdin_that_is_the_output_file_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_text(record())
    with src.open("rb") as stdin:
        proc = cli(["convert", "-", "--to", "events", "-o", str(src)], stdin=stdin, stderr=subprocess.PIPE)
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"toolspan: error: {src} is also the input (standard input reads it); write elsewhere\n"
    )
    assert src.read_text() == record()


@pytest.mark.processes
def test_stdout_redirected_onto_an_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "trace.jsonl"
    src.write_text(record())
    with src.open("ab") as stdout:  # toolspan convert trace.jsonl >> trace.jsonl
        proc = cli(["convert", str(src), "--to", "events"], stdout=stdout, stderr=subprocess.PIPE)
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"toolspan: error: standard output is also the input {src}; write elsewhere\n"
    )
    assert src.read_text() == record()


def test_a_device_or_fifo_output_is_written_to_never_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o /dev/null`` must stay a device: a FIFO stands in for it (a failure here breaks nothing)."""
    want = expected_events(tmp_path, capsys, record())
    src = tmp_path / "in.jsonl"
    src.write_text(record())
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # The read end, opened without blocking: the CLI's open for writing then never waits.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code, out, err = run(capsys, "convert", str(src), "--to", "events", "-o", str(fifo))
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert (code, out, err) == (0, "", "")
    assert received == want.encode()
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert listing(tmp_path) == ["in.jsonl", "pipe", "reference"]


_FULL_DISK_CONVERT = """
import resource, signal, sys
from toolspan.cli import main

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, hard))
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.processes
def test_a_full_disk_while_writing_keeps_the_old_output_and_names_it(tmp_path: Path) -> None:
    """A real EFBIG (RLIMIT_FSIZE in a child process) while the output is written."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(record(f"{n:016x}") for n in range(1, 40)))  # far more than 2,000 bytes of events
    out = tmp_path / "events.jsonl"
    out.write_text("previous run\n")
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_CONVERT, "convert", str(src), "--to", "events", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"toolspan: error: {out}: cannot write: File too large\n"
    assert out.read_text() == "previous run\n"
    assert listing(tmp_path) == ["events.jsonl", "in.jsonl"]


@pytest.mark.processes
def test_stdin_and_stdout_on_one_terminal_or_socket_are_no_clash(tmp_path: Path) -> None:
    """Interactive use: stdin and stdout are the same terminal; a socket pair stands in for it."""
    src = tmp_path / "trace.jsonl"
    src.write_text(record())
    parent, child = socket.socketpair()
    with parent, child:
        parent.sendall(record().encode())
        parent.shutdown(socket.SHUT_WR)
        proc = subprocess.run(
            [sys.executable, "-m", "toolspan", "convert", "-", "--to", "tree"],
            stdin=child,
            stdout=child,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        child.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := parent.recv(1 << 16):
            received += chunk
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert json.loads(received)["job_id"] == TRACE
