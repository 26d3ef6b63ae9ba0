"""What a tool span is written with under each conventions setting (``Config.conventions``): the
keys of the call id, arguments and result, the static start attributes, and the start attributes
whose arguments are serialized only when the SDK reads them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from toolspan import _serialize, semconv
from toolspan.config import CONVENTIONS_BOTH, CONVENTIONS_GENAI, CONVENTIONS_OPENINFERENCE

__all__ = ["KEYS", "Keys", "StartAttributes", "template"]

_logger = logging.getLogger(__name__)


class Keys:
    """The keys one conventions setting writes the call id, arguments and result under."""

    __slots__ = ("arguments", "call_id", "mime", "result", "toolspan_ids")

    def __init__(self, genai: bool, openinference: bool) -> None:
        self.arguments = (
            *((semconv.GEN_AI_TOOL_CALL_ARGUMENTS,) if genai else ()),
            *((semconv.OI_INPUT_VALUE,) if openinference else ()),
        )
        self.result = (
            *((semconv.GEN_AI_TOOL_CALL_RESULT,) if genai else ()),
            *((semconv.OI_OUTPUT_VALUE,) if openinference else ()),
        )
        self.mime = openinference
        # toolspan's ids and the COMPLETED state: derivable from the span (``exec_``/``call_`` + span
        # id; no error), written with the OpenInference keys that UIs show, left out of lean GenAI spans.
        self.toolspan_ids = openinference
        # The model's id of the call; OpenInference alone has no GenAI key to hold it.
        self.call_id = semconv.GEN_AI_TOOL_CALL_ID if genai else semconv.OI_TOOL_CALL_ID


KEYS: dict[str, Keys] = {
    CONVENTIONS_GENAI: Keys(True, False),
    CONVENTIONS_OPENINFERENCE: Keys(False, True),
    CONVENTIONS_BOTH: Keys(True, True),
}


def template(name: str, description: str | None, tool_type: str, conventions: str) -> dict[str, Any]:
    """The static start attributes of a tool span in ``conventions``."""
    attrs: dict[str, Any] = {}
    if conventions != CONVENTIONS_OPENINFERENCE:
        attrs[semconv.GEN_AI_OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
        attrs[semconv.GEN_AI_TOOL_NAME] = name
        attrs[semconv.GEN_AI_TOOL_TYPE] = tool_type
        if description:
            attrs[semconv.GEN_AI_TOOL_DESCRIPTION] = description
    if conventions != CONVENTIONS_GENAI:
        attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OI_KIND_TOOL
        attrs[semconv.OI_TOOL_NAME] = name
        if description:
            attrs[semconv.OI_TOOL_DESCRIPTION] = description
    return attrs


class StartAttributes(dict[str, Any]):
    """The start attributes of a tool span; the arguments are added on the first read.

    The SDK reads the attributes given to ``start_span`` only when it records the span (samplers
    that drop a span do not look at them), so a dropped span never pays for serialization.
    """

    __slots__ = ("_keys", "_pending")

    def __init__(self, base: dict[str, Any], pending: tuple[Any, ...] | None, keys: Keys) -> None:
        super().__init__(base)
        self._pending = pending
        self._keys = keys

    def fill(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        info, instance, args, kwargs, config = pending
        try:
            bound = info.params.bind(instance, args, kwargs)
            text, exact = _serialize.dumps_exact(bound, config)
            if not exact:  # the copy may differ from the call: its digest tells calls apart (replay)
                dict.__setitem__(
                    self,
                    semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST,
                    _serialize.digest(_serialize.json_values(bound)),
                )
        except Exception:
            _logger.warning("toolspan: could not record the arguments of %s", info.name, exc_info=True)
            return
        keys = self._keys
        for key in keys.arguments:
            dict.__setitem__(self, key, text)
        if keys.mime:
            dict.__setitem__(self, semconv.OI_INPUT_MIME_TYPE, semconv.MIME_JSON)

    @property
    def filled(self) -> bool:
        return self._pending is None

    def __len__(self) -> int:
        self.fill()
        return dict.__len__(self)

    def __iter__(self) -> Iterator[str]:
        self.fill()
        return dict.__iter__(self)

    def __contains__(self, key: object) -> bool:
        self.fill()
        return dict.__contains__(self, key)

    def __getitem__(self, key: str) -> Any:
        self.fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        self.fill()
        return dict.get(self, key, default)

    def items(self) -> Any:
        self.fill()
        return dict.items(self)

    def keys(self) -> Any:
        self.fill()
        return dict.keys(self)

    def values(self) -> Any:
        self.fill()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        self.fill()
        return dict(dict.items(self))
