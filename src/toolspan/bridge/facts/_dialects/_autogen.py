"""AutoGen through OpenInference: a model client's result object (``CreateResult``) as a model call's
``output.value``, with its ``finish_reason``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json

__all__ = ["AUTOGEN"]


def _finish_reason(attrs: Mapping[str, Any]) -> str | None:
    output = parse_json(attrs.get(sc.OI_OUTPUT_VALUE))
    reason = output.get("finish_reason") if isinstance(output, Mapping) else None
    return reason if isinstance(reason, str) and reason else None


AUTOGEN = Dialect(precedence=140, name="AutoGen", finish_reason_of=_finish_reason)
