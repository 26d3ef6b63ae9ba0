"""``configure()`` and the policy it installs: a later ``configure()`` without a policy removes the earlier
one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolspan
from toolspan._decisions import chain
from toolspan.testing import capture_spans


def test_configure_without_a_policy_removes_an_earlier_one(
    tmp_path: Path, fresh_config: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLSPAN_POLICY", raising=False)
    policy = tmp_path / "p.json"
    policy.write_text(
        json.dumps({"id": "p", "version": 1, "rules": [{"id": "x", "kind": "tools", "deny": "*"}]})
    )
    try:
        with capture_spans():  # the application's provider: configure() installs none, none is left behind
            toolspan.configure(policy=policy, instrument_threading=False)
            assert chain.GUARD[0] is not None
            assert chain.ACTIVE[0] == 1
            toolspan.configure(instrument_threading=False)
            assert chain.GUARD[0] is None
            assert chain.ACTIVE[0] == 0
    finally:
        chain.install_guard(None)
