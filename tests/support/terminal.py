"""A script started as a terminal starts its foreground job, for the tests that stop one with Ctrl-C
(``scripts/jaeger.sh``, ``scripts/demo.sh --serve``).

A terminal's job has SIGINT at its default disposition, and Ctrl-C is a SIGINT to its process group. A test
run may not have it so: a shell without job control starts its background jobs with SIGINT ignored, their
children inherit that, and a bash script cannot trap a signal that was ignored when it started, so Ctrl-C
would do nothing. ``start`` restores the default in the child before the script runs (a Python that resets
it, then ``exec``s the command: no ``preexec_fn`` in a process with threads).

``stop`` ends what a test left running: SIGTERM first, which these scripts trap to stop what they started
(programs in sessions of their own, beyond the group's reach), then SIGKILL to whatever is left of its
group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ctrl_c", "start", "stop"]

_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
    " os.execvp(sys.argv[1], sys.argv[1:])"
)
_TERM_WAIT_S = 30


def start(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    """``argv`` in a session of its own with SIGINT at its default, its output piped as text."""
    return subprocess.Popen(
        [sys.executable, "-c", _SIGINT_DEFAULT, *argv],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def ctrl_c(proc: subprocess.Popen[str]) -> None:
    """What Ctrl-C in its terminal sends: SIGINT to the job's process group."""
    os.killpg(proc.pid, signal.SIGINT)


def stop(proc: subprocess.Popen[str]) -> None:
    """End ``proc`` if it still runs: SIGTERM (the script stops what it started), then SIGKILL to what is
    left of its group."""
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(_TERM_WAIT_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
