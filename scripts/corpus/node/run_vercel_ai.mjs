// The Vercel AI SDK (`ai`) with experimental_telemetry: generateText over the SDK's own mock model
// (`ai/test`), scripted to ask for three parallel tool calls, then answer.
// Usage: node run_vercel_ai.mjs OUT_DIR [generate|stream]
import { generateText, streamText, stepCountIs, tool, jsonSchema, simulateReadableStream } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import * as rec from "./record.mjs";

function usage(turn) {
  const u = rec.USAGE[turn];
  return {
    inputTokens: { total: u.input_tokens, noCache: u.input_tokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: u.output_tokens, text: u.output_tokens, reasoning: undefined },
  };
}

function turnContent(turn) {
  if (turn === 0) {
    return {
      content: rec.CALLS.map((c) => ({
        type: "tool-call",
        toolCallId: c.id,
        toolName: c.name,
        input: JSON.stringify(c.arguments),
      })),
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
    };
  }
  return { content: [{ type: "text", text: rec.FINAL_ANSWER }], finishReason: { unified: "stop", raw: "stop" } };
}

function scriptedModel() {
  let turn = 0;
  const response = (t) => ({ id: `scripted-${t}`, modelId: rec.MODEL, timestamp: new Date(1_700_000_000_000 + t * 1000) });
  return new MockLanguageModelV3({
    provider: "scripted",
    modelId: rec.MODEL,
    doGenerate: async () => {
      const t = Math.min(turn++, rec.USAGE.length - 1);
      return { ...turnContent(t), usage: usage(t), response: response(t), warnings: [] };
    },
    doStream: async () => {
      const t = Math.min(turn++, rec.USAGE.length - 1);
      const { content, finishReason } = turnContent(t);
      const chunks = [{ type: "stream-start", warnings: [] }, { type: "response-metadata", ...response(t) }];
      for (const part of content) {
        if (part.type === "text") {
          chunks.push({ type: "text-start", id: "t0" }, { type: "text-delta", id: "t0", delta: part.text }, { type: "text-end", id: "t0" });
        } else {
          chunks.push(part);
        }
      }
      chunks.push({ type: "finish", finishReason, usage: usage(t) });
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
}

const city = jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] });
const tools = {
  get_weather: tool({ description: "Current weather of a city.", inputSchema: city, execute: async ({ city }) => rec.getWeather(city) }),
  get_population: tool({ description: "Population of a city.", inputSchema: city, execute: async ({ city }) => rec.getPopulation(city) }),
};

async function main(out, mode) {
  const recording = new rec.Recording();
  const options = {
    model: scriptedModel(),
    system: "Answer with the tools.",
    prompt: rec.USER_REQUEST,
    tools,
    stopWhen: stepCountIs(3),
    experimental_telemetry: { isEnabled: true, functionId: "weather-agent", tracer: recording.tracer },
  };
  let text;
  if (mode === "stream") {
    const result = streamText(options);
    text = await result.text;
  } else {
    text = (await generateText(options)).text;
  }
  if (text !== rec.FINAL_ANSWER) throw new Error(`unexpected answer: ${text}`);
  await recording.write(out, `vercel_ai_${mode}`, rec.versions("ai", "@opentelemetry/sdk-trace-base", "@opentelemetry/exporter-trace-otlp-proto"));
}

await main(process.argv[2], process.argv[3] ?? "generate");
