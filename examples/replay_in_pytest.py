"""Replay a recorded run in a test: the recorded results come back, the side-effecting tool never runs.

    python examples/replay_in_pytest.py [OUT_DIR]

What it shows: a tiny agent whose ``send_email`` tool has a side effect (it appends to
``OUT_DIR/outbox.txt``) records one run to ``OUT_DIR/run.jsonl``. Then ``toolspan.replay(...)`` serves
that run's results with no tool body running, and a pytest file written to ``OUT_DIR/test_replayed.py``
does the same through ``toolspan.testing.replay_fixture(...)``; the example runs it with
``python -m pytest``. What to look at: the outbox holds one mail after the three runs, the replayed
results equal the recorded ones, and pytest's ``1 passed``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import toolspan

OUTBOX = Path("example-output") / "outbox.txt"
# What a model asked for (an Anthropic tool_use block).
MODEL_CALLS = [
    {"type": "tool_use", "id": "toolu_mail", "name": "send_email", "input": {"to": "ada@example.org"}},
]

TEST_FILE = '''\
"""Written by examples/replay_in_pytest.py: a test replaying the recorded run."""

import sys
from pathlib import Path

import toolspan.testing

sys.path.insert(0, {examples!r})
import replay_in_pytest as agent  # noqa: E402

HERE = Path(__file__).parent
recorded_run = toolspan.testing.replay_fixture(HERE / "run.jsonl")


def test_the_agent_replays_without_sending(recorded_run) -> None:
    agent.OUTBOX = HERE / "outbox.txt"
    before = agent.OUTBOX.read_text()
    results = agent.run_agent()
    assert results[0]["tool_use_id"] == "toolu_mail"
    assert "queued" in results[0]["content"]
    assert agent.OUTBOX.read_text() == before  # the body did not run
'''


@toolspan.tool
def send_email(to: str) -> dict[str, Any]:
    """Send an email (a side effect: a line in the outbox)."""
    with OUTBOX.open("a", encoding="utf-8") as outbox:
        outbox.write(f"to {to}\n")
    return {"to": to, "status": "queued"}


def run_agent() -> list[dict[str, Any]]:
    with toolspan.agent("mailer", input="Mail Ada, please."):
        return toolspan.run_tool_calls(MODEL_CALLS, [send_email])


def main(out: Path) -> None:
    global OUTBOX
    out = out.resolve()  # pytest below runs in OUT_DIR: relative paths would point elsewhere there
    out.mkdir(parents=True, exist_ok=True)
    OUTBOX = out / "outbox.txt"
    OUTBOX.write_text("", encoding="utf-8")
    recording = out / "run.jsonl"
    recording.unlink(missing_ok=True)

    # 1. Record a run (the mail is sent once).
    provider = toolspan.configure(service_name="mailer", file=recording)
    recorded = run_agent()
    getattr(provider, "force_flush", lambda: None)()  # the recording is complete on disk
    print("recorded:", recorded[0]["content"])

    # 2. Replay it: the same call gets the recorded result; send_email's body does not run.
    with toolspan.replay(recording):
        replayed = run_agent()
    print("replayed:", replayed[0]["content"])
    print("same results:", replayed == recorded)

    # 3. The same in a pytest test, through the fixture.
    test_file = out / "test_replayed.py"
    test_file.write_text(TEST_FILE.format(examples=str(Path(__file__).resolve().parent)), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)]
    proc = subprocess.run(command, capture_output=True, text=True, check=False, cwd=out)
    print("pytest:", proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr)
    print("mails sent:", len(OUTBOX.read_text(encoding="utf-8").splitlines()))
    getattr(provider, "shutdown", lambda: None)()
    if proc.returncode:
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
