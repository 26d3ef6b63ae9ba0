"""DSPy ``ReAct`` traced by OpenInference; the model is DSPy's own scripted ``DummyLM``. ReAct asks for one
tool a step (by name and arguments in the model's text, with no call id): Paris, Tokyo, Atlantis (which
fails: ReAct hands the error back to the model as the observation), then ``finish``, then the answer."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
import dspy
from dspy.utils.dummies import DummyLM
from openinference.instrumentation.dspy import DSPyInstrumentor


def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return rec.get_weather(city)


def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


def main(out: str) -> None:
    recording = rec.Recording()
    DSPyInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    steps = [
        {
            "next_thought": f"I need {c['name']} for {c['arguments']['city']}.",
            "next_tool_name": c["name"],
            "next_tool_args": c["arguments"],
        }
        for c in rec.CALLS
    ]
    steps.append({"next_thought": "I have everything.", "next_tool_name": "finish", "next_tool_args": {}})
    steps.append({"reasoning": "The tools answered.", "answer": rec.FINAL_ANSWER})
    dspy.configure(lm=DummyLM(steps))
    agent = dspy.ReAct("question -> answer", tools=[get_weather, get_population])
    prediction = agent(question=rec.USER_REQUEST)
    assert prediction.answer == rec.FINAL_ANSWER, prediction.answer
    # ReAct's own ``finish`` tool ran too (as smolagents' final_answer does): recorded from its trajectory.
    trajectory = prediction.trajectory
    last = len(rec.CALLS)
    assert trajectory[f"tool_name_{last}"] == "finish", trajectory
    rec.record("finish", trajectory[f"tool_args_{last}"], trajectory[f"observation_{last}"])
    recording.write(
        out,
        "dspy_react",
        rec.versions("dspy", "openinference-instrumentation-dspy", "opentelemetry-sdk"),
        model_ids=False,
    )


if __name__ == "__main__":
    main(sys.argv[1])
