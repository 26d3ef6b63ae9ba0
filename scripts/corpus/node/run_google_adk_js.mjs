// Google ADK for JavaScript (@google/adk): an LlmAgent on its InMemoryRunner, traced by ADK's own telemetry
// through the global tracer provider, its model scripted at ADK's model interface (a BaseLlm subclass), as
// the Python ADK runner does. A failing tool's exception goes back to the model as ADK's `{error: ...}`
// response (the run goes on). Usage: node run_google_adk_js.mjs OUT_DIR
import { trace } from "@opentelemetry/api";
import { z } from "zod";

import * as rec from "./record.mjs";

// ADK takes its tracer from the global provider when its modules load (its own copy of the OpenTelemetry
// API keeps the tracer it got then): the provider is registered before ADK is imported, as a user's
// instrumentation file does.
const recording = new rec.Recording();
trace.setGlobalTracerProvider(recording.provider);
const { BaseLlm, FunctionTool, InMemoryRunner, LlmAgent } = await import("@google/adk");

class ScriptedLlm extends BaseLlm {
  constructor() {
    super({ model: rec.MODEL });
    this.turn = 0;
  }

  async *generateContentAsync(_llmRequest, _stream = false) {
    const turn = Math.min(this.turn++, rec.USAGE.length - 1);
    const usage = rec.USAGE[turn];
    const parts =
      turn === 0
        ? rec.CALLS.map((c) => ({ functionCall: { id: c.id, name: c.name, args: c.arguments } }))
        : [{ text: rec.FINAL_ANSWER }];
    yield {
      content: { role: "model", parts },
      finishReason: "STOP",
      modelVersion: rec.MODEL,
      usageMetadata: {
        promptTokenCount: usage.input_tokens,
        candidatesTokenCount: usage.output_tokens,
        totalTokenCount: usage.input_tokens + usage.output_tokens,
      },
    };
  }

  async connect() {
    throw new Error("no live connection in the script");
  }
}

const city = z.object({ city: z.string() });
const tools = [
  new FunctionTool({
    name: "get_weather",
    description: "Current weather of a city.",
    parameters: city,
    execute: async ({ city }) => rec.getWeather(city),
  }),
  new FunctionTool({
    name: "get_population",
    description: "Population of a city.",
    parameters: city,
    execute: async ({ city }) => rec.getPopulation(city),
  }),
];

async function main(out) {
  const agent = new LlmAgent({
    name: "weather_agent",
    model: new ScriptedLlm(),
    instruction: "Answer with the tools.",
    tools,
  });
  const runner = new InMemoryRunner({ agent, appName: "weather_app" });
  const session = await runner.sessionService.createSession({ appName: "weather_app", userId: "user" });
  let answer = null;
  for await (const event of runner.runAsync({
    userId: "user",
    sessionId: session.id,
    newMessage: { role: "user", parts: [{ text: rec.USER_REQUEST }] },
  })) {
    const text = event.content?.parts?.map((p) => p.text ?? "").join("");
    if (text) answer = text;
  }
  if (answer !== rec.FINAL_ANSWER) throw new Error(`unexpected answer: ${answer}`);
  await recording.write(out, "google_adk_js", rec.versions("@google/adk", "@opentelemetry/sdk-trace-base"));
}

await main(process.argv[2]);
