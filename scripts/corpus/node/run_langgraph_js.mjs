// LangGraph.js's ReAct agent traced by OpenInference's LangChain.js instrumentation; the model is a scripted
// chat model on LangChain's own BaseChatModel (no network), asking for three parallel tool calls, then
// answering. Usage: node run_langgraph_js.mjs OUT_DIR
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import { z } from "zod";

import * as rec from "./record.mjs";

class ScriptedChatModel extends BaseChatModel {
  constructor() {
    super({});
    this.turn = 0;
  }

  _llmType() {
    return "scripted";
  }

  invocationParams() {
    return { model: rec.MODEL };
  }

  bindTools() {
    return this;
  }

  async _generate() {
    const t = Math.min(this.turn++, rec.USAGE.length - 1);
    const u = rec.USAGE[t];
    const finish = t === 0 ? "tool_calls" : "stop";
    const message = new AIMessage({
      content: t === 0 ? "" : rec.FINAL_ANSWER,
      tool_calls: t === 0 ? rec.CALLS.map((c) => ({ id: c.id, name: c.name, args: c.arguments, type: "tool_call" })) : [],
      usage_metadata: { input_tokens: u.input_tokens, output_tokens: u.output_tokens, total_tokens: u.input_tokens + u.output_tokens },
      response_metadata: { model_name: rec.MODEL, finish_reason: finish },
    });
    return {
      generations: [{ text: typeof message.content === "string" ? message.content : "", message, generationInfo: { finish_reason: finish } }],
      llmOutput: { tokenUsage: { promptTokens: u.input_tokens, completionTokens: u.output_tokens, totalTokens: u.input_tokens + u.output_tokens } },
    };
  }
}

const city = z.object({ city: z.string() });
const tools = [
  tool(async ({ city }) => JSON.stringify(rec.getWeather(city)), { name: "get_weather", description: "Current weather of a city.", schema: city }),
  tool(async ({ city }) => rec.getPopulation(city), { name: "get_population", description: "Population of a city.", schema: city }),
];

async function main(out) {
  const recording = new rec.Recording();
  const instrumentation = new LangChainInstrumentation();
  instrumentation.setTracerProvider(recording.provider);
  instrumentation.manuallyInstrument(CallbackManagerModule);
  const agent = createReactAgent({ llm: new ScriptedChatModel(), tools, prompt: "Answer with the tools." });
  const state = await agent.invoke({ messages: [{ role: "user", content: rec.USER_REQUEST }] });
  const answer = state.messages.at(-1).content;
  if (answer !== rec.FINAL_ANSWER) throw new Error(`unexpected answer: ${answer}`);
  await recording.write(
    out,
    "langgraph_js_openinference",
    rec.versions("@langchain/langgraph", "@langchain/core", "@arizeai/openinference-instrumentation-langchain", "@opentelemetry/sdk-trace-base"),
  );
}

await main(process.argv[2]);
