"""CrewAI through OpenInference: an agent span records CrewAI's ``TaskOutput`` as its output, the task it
was given (``description``) and its answer (``raw``). Its input is CrewAI's own record of the agent's
configuration, no message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json

__all__ = ["CREWAI"]

_TASK_OUTPUT: Final = frozenset({"description", "raw", "expected_output", "agent"})


def _agent_text(attrs: Mapping[str, Any], output: bool) -> str | None:
    value = parse_json(attrs.get(sc.OI_OUTPUT_VALUE))
    if isinstance(value, dict) and value.keys() >= _TASK_OUTPUT:
        text = value["raw" if output else "description"]
        return text if isinstance(text, str) else None
    return None


CREWAI = Dialect(precedence=120, name="CrewAI", agent_text_of=_agent_text)
