"""The decision chain installed and removed explicitly, as a contrib instrumentation's instrument() and
uninstrument(): importing it installs nothing, ``install()`` puts every decided tool body behind it,
``uninstall()`` takes it away, both idempotent; what starts deciding (a replay, an approver's run, a policy)
installs it first. In a process started while a replay ran, tool bodies are refused whether it is
installed or not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

import toolspan
from tests.support.paths import REPO
from toolspan._decisions import chain
from toolspan._decisions.guard import PolicyGuard
from toolspan._instrument import hooks
from toolspan.policy import parse_policy
from toolspan.testing import capture_spans

ROOT = REPO


def _fresh(code: str, **env: str) -> object:
    """Run ``code`` in a new interpreter and return the JSON it prints."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **env},
        cwd=ROOT,
    )
    return json.loads(proc.stdout)


@pytest.fixture
def uninstalled() -> Iterator[None]:
    """The chain uninstalled for the test, and put back as it was after it."""
    was = chain._installed[0]
    chain.uninstall()
    yield
    if was:
        chain.install()
    else:
        chain.uninstall()


@pytest.mark.processes
def test_importing_the_chain_installs_nothing() -> None:
    seen = _fresh(
        "import json\n"
        "from toolspan._decisions import chain\n"
        "from toolspan._instrument import hooks\n"
        "print(json.dumps([hooks.DECIDER[0] is chain.substitute, hooks.ACTIVE[0]]))\n"
    )
    assert seen == [False, 0]


def test_install_and_uninstall_are_symmetric_and_idempotent(uninstalled: None) -> None:
    default = hooks.DECIDER[0]
    assert default is not chain.substitute
    chain.install()
    chain.install()
    assert hooks.DECIDER[0] is chain.substitute
    assert hooks.ACTIVE[0] == 0  # installed, but nothing decides yet: a tool call pays one list read
    chain.uninstall()
    chain.uninstall()
    assert hooks.DECIDER[0] is default
    assert hooks.ACTIVE[0] == 0


def test_a_body_goes_behind_the_chain_only_while_it_is_installed(uninstalled: None) -> None:
    @toolspan.tool
    def pay(amount: int) -> str:
        return f"paid {amount}"

    policy = parse_policy(
        {"id": "p", "version": "1", "rules": [{"id": "no-pay", "kind": "tools", "deny": ["pay"]}]}
    )
    chain.install_guard(None)  # no policy: nothing decides, nothing is installed
    assert hooks.DECIDER[0] is not chain.substitute
    try:
        with capture_spans():
            chain.install_guard(PolicyGuard(policy))  # a policy starts deciding: the chain is installed first
            assert hooks.DECIDER[0] is chain.substitute
            with pytest.raises(toolspan.ToolDenied, match="rule no-pay"):
                pay(1)
            chain.uninstall()  # the guard stays, but nothing stands between the call and its body
            assert pay(2) == "paid 2"
    finally:
        chain.install_guard(None)
    assert hooks.ACTIVE[0] == 0


@pytest.mark.processes
def test_a_process_started_while_a_replay_ran_refuses_bodies_installed_or_not() -> None:
    seen = _fresh(
        "import json, toolspan\n"
        "from toolspan._decisions import chain\n"
        "from toolspan._instrument import hooks\n"
        "@toolspan.tool\n"
        "def touch() -> str:\n"
        "    return 'ran'\n"
        "def call():\n"
        "    try:\n"
        "        return touch()\n"
        "    except Exception as e:\n"
        "        return type(e).__name__\n"
        "out = [call(), hooks.ACTIVE[0]]\n"
        "chain.install()\n"
        "out += [call(), hooks.ACTIVE[0]]\n"
        "chain.uninstall()\n"
        "out += [call(), hooks.ACTIVE[0]]\n"
        "print(json.dumps(out))\n",
        TOOLSPAN_REPLAYING="1",
    )
    assert seen == ["ReplayError", 1, "ReplayError", 2, "ReplayError", 1]
