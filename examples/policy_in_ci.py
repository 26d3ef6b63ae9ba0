"""A policy file gating CI: ``toolspan audit`` finds the call that broke a rule in a recorded run, and
``configure(policy=...)`` denies the same call live, before its body runs.

    python examples/policy_in_ci.py [OUT_DIR]

What it shows: an agent's run is recorded to ``OUT_DIR/run.jsonl``; one of its calls (``run_shell``)
breaks the ``no-shell`` rule of ``OUT_DIR/policy.json``. ``python -m toolspan audit run.jsonl --policy
policy.json`` (what a CI step runs) prints one ``VIOLATION`` line and exits 1. Then the same process
sets ``configure(policy=...)`` and runs the agent again: ``run_shell`` never runs, its span ends
``DENIED`` and the model gets an error result. What to look at: the audit's report and exit status, the
denied result, and ``OUT_DIR/shell.log`` (one line: only the recorded run's call ran).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import toolspan

POLICY = {
    "id": "ci-gate",
    "version": 1,
    "rules": [
        {"id": "no-shell", "kind": "tools", "deny": ["run_shell"]},
        {"id": "tmp-only", "kind": "arguments", "tool": "list_files", "path": "path", "pattern": "^/tmp"},
    ],
}
# What a model asked for (OpenAI Chat Completions tool calls, as dicts).
TOOL_CALLS = [
    {
        "id": "call_ls",
        "type": "function",
        "function": {"name": "list_files", "arguments": '{"path": "/tmp"}'},
    },
    {
        "id": "call_sh",
        "type": "function",
        "function": {"name": "run_shell", "arguments": '{"cmd": "make clean"}'},
    },
]
SHELL_LOG = Path("example-output") / "shell.log"


@toolspan.tool
def list_files(path: str) -> list[str]:
    """List a directory (a fixed answer here)."""
    return ["notes.txt", "build.log"]


@toolspan.tool
def run_shell(cmd: str) -> str:
    """Run a shell command (only logged here)."""
    with SHELL_LOG.open("a", encoding="utf-8") as log:
        log.write(cmd + "\n")
    return "ok"


def run_agent() -> list[dict[str, Any]]:
    with toolspan.agent("ops", input="Clean the build, please."):
        return toolspan.run_tool_calls(TOOL_CALLS, [list_files, run_shell], parallel=False)


def main(out: Path) -> None:
    global SHELL_LOG
    out.mkdir(parents=True, exist_ok=True)
    SHELL_LOG = out / "shell.log"
    SHELL_LOG.write_text("", encoding="utf-8")
    recording, policy = out / "run.jsonl", out / "policy.json"
    recording.unlink(missing_ok=True)
    policy.write_text(json.dumps(POLICY, indent=2) + "\n", encoding="utf-8")

    # 1. A run recorded with no policy in force: run_shell runs.
    provider = toolspan.configure(service_name="ops-agent", file=recording)
    run_agent()
    getattr(provider, "force_flush", lambda: None)()

    # 2. The CI step: audit the recording against the policy; exit status 1 fails the build.
    command = [sys.executable, "-m", "toolspan", "audit", str(recording), "--policy", str(policy)]
    audit = subprocess.run(command, capture_output=True, text=True, check=False)
    print(audit.stdout, end="")
    print("audit exit status:", audit.returncode)

    # 3. The same policy, live: the call is denied before run_shell's body runs.
    toolspan.configure(policy=policy)
    results = run_agent()
    print("live result for run_shell:", json.dumps(results[1]))
    print("shell commands run:", SHELL_LOG.read_text(encoding="utf-8").splitlines())
    getattr(provider, "shutdown", lambda: None)()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
