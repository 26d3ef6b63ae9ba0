// Run the real @ag-ui/client HttpAgent against toolspan serve's AG-UI agent endpoint.
//   node ag_ui_run.mjs URL THREAD_ID [MESSAGES_JSON]
// Prints one JSON object: the events the client applied (type, and the time it saw each, ms since the
// epoch), its messages after the run, and the error if the run failed.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, known] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, initialMessages: JSON.parse(known || "[]") });
const events = [];
let failure = null;
try {
  await agent.runAgent(
    { runId: "client-run" },
    {
      onEvent({ event }) {
        events.push({ type: event.type, at: Date.now(), toolCallId: event.toolCallId ?? null, messageId: event.messageId ?? null });
      },
    },
  );
} catch (error) {
  failure = String(error && error.message ? error.message : error);
}
process.stdout.write(JSON.stringify({ events, messages: agent.messages, error: failure }) + "\n");
