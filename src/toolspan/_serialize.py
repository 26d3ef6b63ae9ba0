"""One serializer that never raises (minimal first version)."""

from __future__ import annotations

import json
from typing import Any

from toolspan.config import REDACTED, Config


def _redact(value: Any, config: Config) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            norm = str(k).lower().replace("-", "").replace("_", "")
            if any(s in norm for s in config.redact_keys):
                out[k] = REDACTED
            else:
                out[k] = _redact(v, config)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact(v, config) for v in value]
    return value


def dumps(value: Any, config: Config) -> str:
    """JSON text of ``value``: redacted, within ``config.max_attribute_bytes``, never raising."""
    try:
        text = json.dumps(_redact(value, config), default=repr, ensure_ascii=False)
    except Exception:
        text = json.dumps("<unserializable>")
    if len(text.encode()) > config.max_attribute_bytes:
        text = json.dumps({"toolspan.truncated": True, "preview": text[: config.max_attribute_bytes // 2]})
    return text
