"""Counting what a store decodes: the stored forms a module passes to ``codec.decode``, in order."""

from __future__ import annotations

from types import ModuleType

import pytest

from toolspan.bridge.model import Span
from toolspan.server._rows.codec import decode


def count_decodes(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[str | bytes]:
    """The forms ``module`` (which imported ``decode``) decodes from now on, appended as it decodes them."""
    seen: list[str | bytes] = []

    def counting(form: str | bytes) -> Span:
        seen.append(form)
        return decode(form)

    monkeypatch.setattr(module, "decode", counting)
    return seen
