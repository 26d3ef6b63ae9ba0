"""Where ``toolspan convert`` writes: inputs checked against the output, output replaced atomically.

The output is written to a temporary file next to the target (same directory, so on the same file
system) and renamed over it only when the whole conversion succeeded: a failed or interrupted run
leaves an existing target as it was. A target that exists and is not a regular file (``/dev/null``,
a FIFO) is written to directly: replacing it would destroy the device. An output that is also an
input (same resolved path or same inode; named explicitly, matched by a glob, or given as ``-``
through redirection) is refused before anything is read or written; an output lying inside an input
directory is left out of that directory's inputs, so a run never reads its own output back.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO

from toolspan.bridge.internal import resolve_inputs
from toolspan.errors import ToolspanError

__all__ = ["AtomicOutput", "DirectOutput", "OutputClash", "checked_inputs", "is_special", "open_output"]


class OutputClash(ToolspanError, ValueError):
    """The output would overwrite (or be read as) an input."""


def _stat(path: str | os.PathLike[str]) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _fstat(stream: IO[bytes] | IO[str]) -> os.stat_result | None:
    try:
        return os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None


def _same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    """The same regular file (a terminal or a socket that is both stdin and stdout is no clash)."""
    return a is not None and b is not None and stat.S_ISREG(a.st_mode) and os.path.samestat(a, b)


def checked_inputs(inputs: list[str], output: str | None, err: IO[str]) -> list[Path | str]:
    """The resolved inputs (as ``resolve_inputs``), refusing an output that is also an input.

    ``output`` ``None`` means standard output: refused too when it is redirected to an input file.
    Raises ``OutputClash`` (usage error) or ``BridgeReadError`` (a missing input).
    """
    if output is not None:
        if os.path.isdir(output):
            raise OutputClash(f"{output}: the output is a directory; name a file")
        target = _stat(output)
        real = os.path.realpath(output)
        shown = output
    else:
        target = _fstat(sys.stdout)
        real = ""
        shown = "standard output"
    paths: list[Path | str] = []
    for item in inputs:
        if item == "-":
            if _same(_fstat(sys.stdin), target):
                raise OutputClash(f"{shown} is also the input (standard input reads it); write elsewhere")
            paths.append("-")
            continue
        resolved = resolve_inputs([item])
        is_dir = os.path.isdir(item)
        for path in resolved:
            clash = _same(_stat(path), target) or (bool(real) and os.path.realpath(path) == real)
            if not clash:
                paths.append(path)
            elif is_dir:
                err.write(f"toolspan: note: not reading {path}: it is the output\n")
            else:
                raise OutputClash(f"{shown} is also the input {path}; write elsewhere")
    return paths


def is_special(target: str) -> bool:
    """Whether ``target`` exists and is not a regular file (``/dev/null``, a FIFO, a terminal): written
    to directly, never replaced."""
    found = _stat(target)
    return found is not None and not stat.S_ISREG(found.st_mode)


class DirectOutput:
    """A device or FIFO output (``-o /dev/null``), opened as it is: there is nothing to replace."""

    def __init__(self, target: str) -> None:
        self.file: IO[bytes] = open(target, "wb")  # noqa: SIM115 - closed by commit() or discard()
        self.committed = False

    def commit(self) -> None:
        self.file.close()
        self.committed = True

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()


class AtomicOutput:
    """A temporary file beside ``target``; ``commit()`` renames it over the target, ``discard()`` removes it.

    Only for a regular file or a new path (see ``is_special``). A new target gets the permissions a
    plain ``open`` would give it (0o666 less the umask); an existing one keeps its own. A symbolic link
    is written through (its target is replaced).
    """

    def __init__(self, target: str) -> None:
        self.target = os.path.realpath(target)
        if is_special(self.target):
            raise ValueError(f"{target} is not a regular file: write to it directly")
        directory, name = os.path.split(self.target)
        fd, self.temp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        try:
            existing = _stat(self.target)
            if existing is not None:
                mode = existing.st_mode & 0o7777
            else:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.fchmod(fd, mode)
            self.file: IO[bytes] = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            os.unlink(self.temp)
            raise
        self.committed = False

    def commit(self) -> None:
        """Flush, sync and rename over the target."""
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.temp, self.target)
        self.committed = True

    def discard(self) -> None:
        """Remove the temporary file (the target is left as it was)."""
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.temp)


def open_output(target: str) -> AtomicOutput | DirectOutput:
    """Where ``-o target`` is written: beside it and renamed on commit, or the device itself."""
    if is_special(os.path.realpath(target)):
        return DirectOutput(target)
    return AtomicOutput(target)
