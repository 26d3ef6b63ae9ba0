"""The README's quickstart, runnable: one agent turn, its tool call as a span in a trace file, then
``toolspan convert`` turns the file into the act/observe events and the conversation timeline.

    python examples/quickstart.py [OUT_DIR]

What it shows: ``configure(file=...)`` writes OTLP JSON Lines (the Collector ``file`` exporter's format;
with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set the spans also go to a collector). The model's reply is a
hard-coded Anthropic-shaped message here, so no key is needed. What to look at: the ``act`` / ``observe``
pair printed for ``get_weather`` (its ``call_id`` is the model's ``toolu_...`` id, its ``execution_id``
the span id), and ``OUT_DIR/events.jsonl`` and ``OUT_DIR/timeline.json``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import toolspan

# What a model answered (an Anthropic Messages reply; OpenAI tool_calls work the same way).
MODEL_REPLY = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me check."},
        {
            "type": "tool_use",
            "id": "toolu_01QuickstartWeather",
            "name": "get_weather",
            "input": {"city": "Paris"},
        },
    ],
}


@toolspan.tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "traces.jsonl"
    traces.unlink(missing_ok=True)
    provider = toolspan.configure(service_name="my-agent", file=traces)

    with toolspan.agent("assistant", input="Weather in Paris?", conversation_id="conv-1") as run:
        toolspan.thought("The user wants the weather; call get_weather.")
        results = toolspan.run_tool_calls(MODEL_REPLY["content"], [get_weather])
        print("results for the model:", results)
        run.set_output("18 °C in Paris.")

    getattr(provider, "shutdown", lambda: None)()  # flush the trace file before reading it

    # toolspan convert traces.jsonl --to events / --to timeline
    for view, target in (("events", out / "events.jsonl"), ("timeline", out / "timeline.json")):
        command = [sys.executable, "-m", "toolspan", "convert", str(traces), "--to", view, "-o", str(target)]
        subprocess.run(command, check=True)
    print((out / "events.jsonl").read_text(encoding="utf-8"), end="")
    print(f"trace: {traces}; events: {out / 'events.jsonl'}; timeline: {out / 'timeline.json'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
