"""BeeAI Framework through OpenInference (``openinference-instrumentation-beeai``): what it records in shapes
of its own (versions checked: ``docs/frameworks.md``).

- **Event records.** Each emitter event of a run that the instrumentor does not fold into the run's span (a
  tool's ``error`` event, the agent's ``final_answer`` event) is a child span of the run's span, of the
  run's kind (OpenInference ``TOOL`` inside a tool span), named by the event, with the event's path
  (``metadata.path``: ``tool.custom.get_population.error``) and its trace's ids (``metadata.trace.run_id``):
  inside a tool span, a second record of that call.
- **A run's input.** A tool span's ``input.value`` is the run's ``{"input": {...}, "options": ...}``: the
  arguments are its ``input``; an agent's, ``{"input": "<the user's request>"}``.
- **A run's error.** A failing tool's exception reaches the span as BeeAI's ``ToolError`` (``Tool Error``),
  and the span's ``output.value`` is BeeAI's explanation of it, one line an error, each cause indented
  further (``  ValueError(builtins): unknown city: Atlantis``): the error is the deepest cause.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["BEEAI"]

# A line of BeeAI's explanation of an error: ``ValueError(builtins): unknown city: Atlantis``, each cause
# indented one step more than the error it caused.
_EXPLAINED: Final = re.compile(r"^( *)([A-Za-z_]\w*)\(([A-Za-z_][\w.]*)\): (.*)$")


def _event_record(attrs: Mapping[str, Any]) -> bool:
    return isinstance(attrs.get(sc.BEEAI_EVENT_PATH), str) and sc.BEEAI_EVENT_RUN_ID in attrs


def _arguments(value: Any) -> Any:
    if (
        isinstance(value, dict)
        and value.keys() == {sc.BEEAI_RUN_INPUT, sc.BEEAI_RUN_OPTIONS}
        and isinstance(value[sc.BEEAI_RUN_INPUT], dict)
    ):
        return value[sc.BEEAI_RUN_INPUT]
    return None


def _agent_text(attrs: Mapping[str, Any], output: bool) -> str | None:
    if output:
        return None
    value = parse_json(attrs.get(sc.OI_INPUT_VALUE))
    if isinstance(value, dict) and value.keys() == {sc.BEEAI_RUN_INPUT}:
        text = value[sc.BEEAI_RUN_INPUT]
        return text if isinstance(text, str) else None
    return None


def _explained_error(span: Span) -> str | None:
    exception = next((e for e in span.events if e.name == sc.EXCEPTION_EVENT), None)
    output = span.attributes.get(sc.OI_OUTPUT_VALUE)
    if exception is None or not isinstance(output, str):
        return None
    etype = exception.attributes.get(sc.EXCEPTION_TYPE)
    lines = [m for m in map(_EXPLAINED.match, output.splitlines()) if m is not None]
    if not lines or not isinstance(etype, str):
        return None
    head = lines[0]
    if head.group(1) or f"{head.group(3)}.{head.group(2)}" != etype:
        return None  # not BeeAI's explanation of this span's error
    deepest = max(lines, key=lambda m: len(m.group(1)))
    name = deepest.group(2) if deepest.group(3) == "builtins" else f"{deepest.group(3)}.{deepest.group(2)}"
    return f"{name}: {deepest.group(4)}"


BEEAI = Dialect(
    precedence=160,
    name="BeeAI",
    arguments_of=_arguments,
    agent_text_of=_agent_text,
    event_record=_event_record,
    explained_error=_explained_error,
)
