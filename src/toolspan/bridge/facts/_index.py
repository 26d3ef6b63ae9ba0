"""What a store must keep of a span to index it without reading it all: ``INDEX_KEYS``, every attribute
``classify``, ``tool_name``, ``tool_state``, ``tool_error`` and the conversation id read, computed here
once: the GenAI and toolspan keys the shared readers read, and every convention's ``index_keys``."""

from __future__ import annotations

from typing import Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import DIALECTS, keys

__all__ = ["CONVERSATION_KEYS", "INDEX_KEYS"]

# Where a span names its conversation: GenAI's key, then every convention's (``session.id``).
CONVERSATION_KEYS: Final = (sc.GEN_AI_CONVERSATION_ID, *keys(lambda d: d.conversation_keys))

# What the shared readers read themselves (``_classify``, ``_tools``), whatever the convention.
_SHARED: Final = frozenset(
    {
        sc.TOOLSPAN_PLAN_NAME,
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_TOOL_NAME,
        sc.TOOLSPAN_TOOL_STATE,
        sc.ERROR_TYPE,
        sc.LEGACY_ERROR_TAG,
    }
)

INDEX_KEYS: Final[frozenset[str]] = _SHARED.union(CONVERSATION_KEYS, *(d.index_keys for d in DIALECTS))
