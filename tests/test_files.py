"""The exporters' shared file handling: flushing to disk never raises."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from toolspan.exporters._files import flush_to_disk


def test_flushes_written_bytes_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with path.open("w", encoding="utf-8") as f:
        f.write("line\n")
        assert flush_to_disk(f, path) is True
        assert path.read_text(encoding="utf-8") == "line\n"


def test_no_open_file_is_nothing_to_flush() -> None:
    assert flush_to_disk(None, "never-opened.jsonl") is True


def test_a_closed_file_is_logged_and_reported_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "out.jsonl"
    f = path.open("w", encoding="utf-8")
    f.close()
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters._files"):
        assert flush_to_disk(f, path) is False
    assert f"toolspan: cannot flush {path}: I/O operation on closed file" in caplog.text
