"""The exporters' shared file handling: flushing to disk never raises."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from toolspan.exporters._files import append_whole, ends_mid_line, flush_to_disk, open_append


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


def test_append_whole_appends_and_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "out.jsonl"
    with open_append(str(path)) as f:
        assert ends_mid_line(f) is False
        append_whole(f, b'{"n": 1}\n')
        append_whole(f, b'{"n": 2}\n')
        assert ends_mid_line(f) is False
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2}\n'


def test_a_file_not_ending_in_a_newline_ends_mid_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": ')
    with open_append(str(path)) as f:
        assert ends_mid_line(f) is True


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_write_to_a_full_device_raises_enospc() -> None:
    with open_append("/dev/full") as f, pytest.raises(OSError) as info:
        append_whole(f, b"line\n")
    assert info.value.errno == errno.ENOSPC
