"""Shared file handling of the exporters: append whole records only, flush to disk without raising.

An appended record is written completely or not at all: a short or failed write (a full disk, a file
size limit) is truncated back to where the record started, so a JSON Lines file never holds a partial
line in its middle. Only one writer per file is assumed (truncating back could cut another process's
record appended at the same moment).
"""

from __future__ import annotations

import errno
import logging
import os
from typing import IO, Any

_logger = logging.getLogger(__name__)


def open_append(path: str) -> IO[bytes]:
    """``path`` opened unbuffered for appending (and reading its tail), parent directories created."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return open(path, "a+b", buffering=0)


def ends_mid_line(file: IO[bytes]) -> bool:
    """Whether the file is non-empty and does not end with a newline (a record cut by an earlier crash)."""
    fd = file.fileno()
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def append_whole(file: IO[bytes], data: bytes) -> None:
    """Append ``data`` to an unbuffered append-mode file, all of it or nothing.

    On a short or failed write the file is truncated back to its size before the call and ``OSError``
    is raised (``ENOSPC`` for a write that made no progress). Should truncating fail too, that error is
    raised instead and the file may end in a partial record: check ``ends_mid_line`` before the next one.
    """
    fd = file.fileno()
    start = os.fstat(fd).st_size
    view = memoryview(data)
    done = 0
    try:
        while done < len(view):
            n = os.write(fd, view[done:])
            if n <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += n
    except OSError:
        if done or os.fstat(fd).st_size != start:
            os.ftruncate(fd, start)
        raise


def flush_to_disk(file: IO[Any] | None, path: object) -> bool:
    """Flush ``file`` and fsync it: ``True`` when done or no file is open; a failure is logged: ``False``."""
    if file is None:
        return True
    try:
        file.flush()
        os.fsync(file.fileno())
    except (OSError, ValueError) as exc:
        _logger.warning("toolspan: cannot flush %s: %s", path, exc)
        return False
    return True
