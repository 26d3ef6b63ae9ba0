"""smolagents through OpenInference: it records the provider's response only as the text of the SDK object
(``raw``) in a model call's output message; the one field the OpenAI SDK prints in a fixed form,
``finish_reason='...'``, is its finish reason."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json

__all__ = ["SMOLAGENTS"]

_RAW_FINISH: Final = re.compile(r"\bfinish_reason='([a-z_]{1,40})'")


def _finish_reason(attrs: Mapping[str, Any]) -> str | None:
    output = parse_json(attrs.get(sc.OI_OUTPUT_VALUE))
    raw = output.get("raw") if isinstance(output, Mapping) else None
    if isinstance(raw, str):
        found = _RAW_FINISH.findall(raw)
        if found:
            return str(found[-1])
    return None


SMOLAGENTS = Dialect(precedence=150, name="smolagents", finish_reason_of=_finish_reason)
