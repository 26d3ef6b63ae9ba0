"""The bridge reads a renamed GenAI attribute under its current name and under its older one.

Strands Agents (``tests/corpus/strands_default``, a real run) writes its model calls' token counts under
both names of the registry's rename, ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` and
``gen_ai.usage.input_tokens`` / ``output_tokens``: each name alone gives the views the same usage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.support.corpus import spans, truth
from toolspan.bridge.facts import LLM, classify
from toolspan.bridge.model import Span
from toolspan.bridge.views import to_trees

CURRENT = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
OLDER = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens")


def _without(span: Span, keys: tuple[str, ...]) -> Span:
    if classify(span) != LLM:
        return span
    attrs = {k: v for k, v in span.attributes.items() if k not in keys}
    return dataclasses.replace(span, attributes=attrs)


def _model_calls(node: dict[str, Any]) -> list[dict[str, Any]]:
    own = [node["model_call"]] if "model_call" in node else []
    return own + [m for child in node["children"] for m in _model_calls(child)]


def test_the_recording_writes_both_names() -> None:
    models = [s for s in spans("strands_default", "traces.jsonl") if classify(s) == LLM]
    assert len(models) == 2
    for span in models:
        assert set(CURRENT + OLDER) <= set(span.attributes)


@pytest.mark.parametrize("dropped", [OLDER, CURRENT], ids=["current names only", "older names only"])
def test_usage_is_read_under_either_name(dropped: tuple[str, ...]) -> None:
    read = [_without(s, dropped) for s in spans("strands_default", "traces.jsonl")]
    assert not any(key in s.attributes for s in read if classify(s) == LLM for key in dropped)
    usage = truth("strands_default")["usage"]
    (doc,) = [d for d in to_trees(read) if "usage" in d]
    calls = _model_calls(doc["execution_tree"])
    assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [
        (u["input_tokens"], u["output_tokens"]) for u in usage
    ]
    assert (doc["usage"]["input_tokens"], doc["usage"]["output_tokens"]) == (
        sum(u["input_tokens"] for u in usage),
        sum(u["output_tokens"] for u in usage),
    )
