// Read a toolspan serve AI SDK UI message stream with the real `ai` package: DefaultChatTransport's
// reconnectToStream (the GET a useChat client resumes with) parses the response, readUIMessageStream
// turns the chunks into UI messages.
//   node ai_sdk_read.mjs STREAM_URL
// Prints one JSON object: the final UI message of each run, the response's stream header, and the error.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [streamUrl] = process.argv.slice(2);
let header = null;
const transport = new DefaultChatTransport({
  api: streamUrl,
  prepareReconnectToStreamRequest: () => ({ api: streamUrl }),
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    header = response.headers.get("x-vercel-ai-ui-message-stream");
    return response;
  },
});
const messages = new Map();
let failure = null;
try {
  const stream = await transport.reconnectToStream({ chatId: "toolspan" });
  for await (const message of readUIMessageStream({ stream, onError: (e) => { failure = String(e.message ?? e); } })) {
    messages.set(message.id, message);
  }
} catch (error) {
  failure = String(error && error.message ? error.message : error);
}
process.stdout.write(JSON.stringify({ header, messages: [...messages.values()], error: failure }) + "\n");
