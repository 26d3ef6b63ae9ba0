// Shared by the Node corpus runners, as scripts/corpus/_record.py is by the Python ones: the scripted
// conversation, the tools (which record what they really ran with), and the trace files. Spans are sent by
// the OpenTelemetry JS OTLP exporters (protobuf and JSON) to a receiver on loopback, which writes each
// export body as it arrived: traces.pb (protobuf) and traces.jsonl (OTLP/JSON, one request a line).
import { createServer } from "node:http";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";

const HERE_DIR = dirname(fileURLToPath(import.meta.url));

export const USER_REQUEST = "What is the weather in Paris and in Tokyo, and how many people live in Atlantis?";
export const FINAL_ANSWER = "Paris: 18 C, sunny. Tokyo: 22 C, cloudy. I could not find the population of Atlantis.";
export const MODEL = "scripted-model-1";
export const CALLS = [
  { id: "call_weather_paris", name: "get_weather", arguments: { city: "Paris" } },
  { id: "call_weather_tokyo", name: "get_weather", arguments: { city: "Tokyo" } },
  { id: "call_population_atlantis", name: "get_population", arguments: { city: "Atlantis" } },
];
const WEATHER = { Paris: { temp_c: 18, sky: "sunny" }, Tokyo: { temp_c: 22, sky: "cloudy" } };
export const USAGE = [
  { input_tokens: 120, output_tokens: 45 },
  { input_tokens: 260, output_tokens: 30 },
];

const ran = [];

export function getWeather(city) {
  const result = { city, ...WEATHER[city] };
  ran.push({ name: "get_weather", arguments: { city }, result, error: null });
  return result;
}

export function getPopulation(city, ErrorType = Error) {
  const message = `unknown city: ${city}`;
  ran.push({
    name: "get_population",
    arguments: { city },
    result: null,
    error: { type: ErrorType.name, message },
  });
  throw new ErrorType(message);
}

function callId(name, args) {
  const found = CALLS.find((c) => c.name === name && JSON.stringify(c.arguments) === JSON.stringify(args));
  if (!found) throw new Error(`the script never asked for ${name}(${JSON.stringify(args)})`);
  return found.id;
}

export function versions(...names) {
  const require = createRequire(import.meta.url);
  const out = {};
  for (const name of names) {
    const main = require.resolve(name);
    let dir = dirname(main);
    for (;;) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf-8"));
        if (pkg.name === name) {
          out[name] = pkg.version;
          break;
        }
      } catch {}
      dir = dirname(dir);
    }
  }
  return out;
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
  }
  return value;
}

// This machine's paths (in stack traces) replaced by placeholders, before the spans are exported.
const REPO = resolve(HERE_DIR, "..", "..", "..");
function scrubText(text) {
  return text.split(pathToFileURL(REPO).href).join("file://<repo>").split(REPO).join("<repo>");
}
function scrubValues(values) {
  for (const key of Object.keys(values ?? {})) {
    if (typeof values[key] === "string") values[key] = scrubText(values[key]);
  }
}
function scrub(span) {
  scrubValues(span.attributes);
  if (span.status?.message) span.status.message = scrubText(span.status.message);
  for (const event of span.events) scrubValues(event.attributes);
}

/** A tracer provider whose spans the OTLP exporters send to a loopback receiver, written to files. */
export class Recording {
  constructor() {
    // What NodeSDK and @vercel/otel register: spans started in an async call find their parent.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    this.memory = new InMemorySpanExporter();
    this.provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.memory)] });
    this.tracer = this.provider.getTracer("toolspan-corpus");
  }

  async write(outDir, framework, versionsUsed, endedBy = null) {
    await this.provider.forceFlush();
    const spans = [...this.memory.getFinishedSpans()].sort((a, b) =>
      a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    for (const span of spans) scrub(span);
    const bodies = { "/pb/v1/traces": [], "/json/v1/traces": [] };
    const server = createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        bodies[req.url]?.push(Buffer.concat(chunks));
        res.writeHead(200, { "Content-Type": req.headers["content-type"] });
        res.end();
      });
    });
    await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
    const base = `http://127.0.0.1:${server.address().port}`;
    for (const [path, Exporter] of [["/pb/v1/traces", ProtoExporter], ["/json/v1/traces", JsonExporter]]) {
      const exporter = new Exporter({ url: base + path });
      await new Promise((ok, fail) =>
        exporter.export(spans, (r) => (r.code === 0 ? ok() : fail(r.error ?? new Error("export failed")))),
      );
      await exporter.shutdown();
    }
    server.close();
    const out = resolve(outDir);
    mkdirSync(out, { recursive: true });
    if (bodies["/pb/v1/traces"].length !== 1 || bodies["/json/v1/traces"].length !== 1) {
      throw new Error("expected one export request per encoding");
    }
    writeFileSync(join(out, "traces.pb"), bodies["/pb/v1/traces"][0]);
    const json = JSON.parse(bodies["/json/v1/traces"][0].toString("utf-8"));
    writeFileSync(join(out, "traces.jsonl"), JSON.stringify(json) + "\n");
    const truth = {
      framework,
      versions: versionsUsed,
      user_request: USER_REQUEST,
      final_answer: endedBy === null ? FINAL_ANSWER : null,
      ended_by: endedBy,
      model: MODEL,
      usage: endedBy === null ? USAGE : USAGE.slice(0, 1),
      tool_calls: ran
        .map((r) => ({ call_id: callId(r.name, r.arguments), ...r }))
        .sort((a, b) => (a.call_id < b.call_id ? -1 : a.call_id > b.call_id ? 1 : 0)),
    };
    writeFileSync(join(out, "ground_truth.json"), JSON.stringify(sortKeys(truth), null, 2) + "\n");
    console.log(`${framework}: ${spans.length} spans, ${ran.length} tool calls -> ${out}`);
  }
}

export const HERE = HERE_DIR;
