"""A tool for ``test_decision_chain_hostile``'s spawned workers: ``touch(path)`` creates the file ``path``
(so a test sees whether its body ran); ``call_touch`` calls it in a worker and says what happened."""

from __future__ import annotations

from pathlib import Path

import toolspan


@toolspan.tool
def touch(path: str) -> str:
    """Create a file."""
    Path(path).touch()
    return "touched"


def call_touch(path: str) -> str:
    """``touch(path)`` in this process: ``"ran"``, or the error it raised (``"<type>: <message>"``)."""
    try:
        touch(path)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "ran"
