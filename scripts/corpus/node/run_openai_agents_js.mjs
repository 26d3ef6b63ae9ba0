// The OpenAI Agents SDK for JavaScript (@openai/agents) traced by OpenInference's processor for it; the model
// is the SDK's Chat Completions model over the OpenAI client, whose fetch answers from a script (no network).
// Usage: node run_openai_agents_js.mjs OUT_DIR
import * as agents from "@openai/agents";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import OpenAI from "openai";
import { z } from "zod";

import * as rec from "./record.mjs";

function completion(turn) {
  const u = rec.USAGE[turn];
  const message = { role: "assistant", content: null };
  if (turn === 0) {
    message.tool_calls = rec.CALLS.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
  } else {
    message.content = rec.FINAL_ANSWER;
  }
  return {
    id: `chatcmpl-scripted-${turn}`,
    object: "chat.completion",
    created: 1_700_000_000 + turn,
    model: rec.MODEL,
    choices: [{ index: 0, message, finish_reason: turn === 0 ? "tool_calls" : "stop" }],
    usage: { prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens, total_tokens: u.input_tokens + u.output_tokens },
  };
}

function scriptedFetch() {
  let turn = 0;
  return async (url) => {
    if (!String(url).endsWith("/chat/completions")) return new Response("not scripted", { status: 404 });
    const body = completion(Math.min(turn++, rec.USAGE.length - 1));
    return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
  };
}

const city = z.object({ city: z.string() });
const tools = [
  agents.tool({ name: "get_weather", description: "Current weather of a city.", parameters: city, execute: async ({ city }) => rec.getWeather(city) }),
  agents.tool({ name: "get_population", description: "Population of a city.", parameters: city, execute: async ({ city }) => rec.getPopulation(city) }),
];

async function main(out) {
  const recording = new rec.Recording();
  const instrumentation = new OpenAIAgentsInstrumentation({ tracerProvider: recording.provider });
  instrumentation.manuallyInstrument(agents);
  const client = new OpenAI({ apiKey: "scripted", baseURL: "http://scripted.invalid/v1", fetch: scriptedFetch() });
  const agent = new agents.Agent({
    name: "weather_agent",
    instructions: "Answer with the tools.",
    model: new agents.OpenAIChatCompletionsModel(client, rec.MODEL),
    tools,
  });
  const result = await agents.run(agent, rec.USER_REQUEST);
  if (result.finalOutput !== rec.FINAL_ANSWER) throw new Error(`unexpected answer: ${result.finalOutput}`);
  await agents.getGlobalTraceProvider().forceFlush();
  await recording.write(
    out,
    "openai_agents_js",
    rec.versions("@openai/agents", "@arizeai/openinference-instrumentation-openai-agents", "openai", "@opentelemetry/sdk-trace-base"),
  );
}

await main(process.argv[2]);
