// Drives the durable-tools AG-UI endpoint with @ag-ui/client's HttpAgent and a frontend
// tool, as a product's chat would: the page declares `showWeather` in `tools`, the model
// calls it, the run ends with the call, the page runs it and sends its result as a tool
// message in the next run, which goes on to the answer. Every event is checked against
// @ag-ui/core's own schema (zod) and printed: one JSON document on stdout, read by
// tests/agui/test_agui_js_client.py.
//
// Usage: node frontend_tools.mjs URL TOKEN THREAD_ID
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { randomUUID } from "node:crypto";

const [url, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });
const tools = [
  {
    name: "showWeather",
    description: "Show the weather of a city in the page.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];
const runs = [];

async function run() {
  const events = [];
  const invalid = [];
  let error = null;
  let pending = null;
  try {
    await agent.runAgent({ tools }, {
      onRunFinishedEvent(params) {
        pending = params.pendingToolCallIds ?? null;
      },
      onEvent({ event }) {
        const checked = EventSchema.safeParse(event);
        if (!checked.success) invalid.push({ type: event.type, issues: checked.error.issues });
        events.push(event);
      },
    });
  } catch (caught) {
    error = String(caught && caught.message ? caught.message : caught);
  }
  runs.push({ events, invalid, error, pending });
  return events;
}

agent.addMessage({ id: randomUUID(), role: "user", content: "weather in Paris?" });
await run();
// The page runs each call of its own tools the run ended with, and answers it.
const calls = agent.messages.flatMap((m) => (m.role === "assistant" ? m.toolCalls ?? [] : []));
for (const call of calls) {
  const { city } = JSON.parse(call.function.arguments);
  agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: `21 C in ${city}` });
}
await run();
process.stdout.write(JSON.stringify({ runs, messages: agent.messages }) + "\n");
