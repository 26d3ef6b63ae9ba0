"""LangGraph's prebuilt ReAct agent with a scripted LangChain chat model, traced by OpenInference
(``openinference``) or OpenLLMetry (``openllmetry``): ``run_langgraph.py OUT openinference|openllmetry``."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's own fake chat model, accepting tools (the script already knows what to call)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def script() -> list[AIMessage]:
    meta = {"model_name": rec.MODEL}
    first = AIMessage(
        content="",
        tool_calls=[{"id": c["id"], "name": c["name"], "args": c["arguments"]} for c in rec.CALLS],
        usage_metadata={**rec.USAGE[0], "total_tokens": sum(rec.USAGE[0].values())},
        response_metadata={**meta, "finish_reason": "tool_calls"},
    )
    last = AIMessage(
        content=rec.FINAL_ANSWER,
        usage_metadata={**rec.USAGE[1], "total_tokens": sum(rec.USAGE[1].values())},
        response_metadata={**meta, "finish_reason": "stop"},
    )
    return [first, last]


@tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return rec.get_weather(city)


@tool
def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


def main(out: str, flavour: str) -> None:
    recording = rec.Recording()
    if flavour == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=recording.tracer_provider)
        names = ["openinference-instrumentation-langchain"]
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=recording.tracer_provider)
        names = ["opentelemetry-instrumentation-langchain"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import ToolNode, create_react_agent

    model = ScriptedChatModel(messages=iter(script()))
    # handle_tool_errors: the failing tool's error goes back to the model as a ToolMessage (the default).
    agent = create_react_agent(
        model, ToolNode([get_weather, get_population], handle_tool_errors=True), name="weather_agent"
    )
    state = agent.invoke({"messages": [{"role": "user", "content": rec.USER_REQUEST}]})
    answer = state["messages"][-1].content
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        f"langgraph_{flavour}",
        rec.versions("langgraph", "langchain-core", *names, "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
