// Drives the durable-tools AG-UI endpoint with @ag-ui/client's HttpAgent, as a product's
// chat would: a message with a tool call, a message whose payment asks for approval, the
// approval sent as the next run's resume, and one more message in the same thread.
// Every event received is checked against @ag-ui/core's own schema (zod) and printed:
// one JSON document on stdout, read by tests/agui/test_agui_js_client.py.
//
// Usage: node conversation.mjs URL TOKEN THREAD_ID
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { randomUUID } from "node:crypto";

const [url, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });
const runs = [];

async function run(parameters, text) {
  if (text !== undefined) {
    agent.addMessage({ id: randomUUID(), role: "user", content: text });
  }
  const events = [];
  const invalid = [];
  let error = null;
  let result = null;
  try {
    const outcome = await agent.runAgent(parameters, {
      onEvent({ event }) {
        const checked = EventSchema.safeParse(event);
        if (!checked.success) invalid.push({ type: event.type, issues: checked.error.issues });
        events.push(event);
      },
    });
    result = outcome.result ?? null;
  } catch (caught) {
    error = String(caught && caught.message ? caught.message : caught);
  }
  runs.push({ events, invalid, error, result });
  return events;
}

await run({}, "look up x");
const asked = await run({}, "pay 5 dollars");
const finished = asked.filter((e) => e.type === "RUN_FINISHED").pop();
const interrupts = finished?.outcome?.type === "interrupt" ? finished.outcome.interrupts : [];
await run({
  resume: interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })),
});
await run({}, "thanks");
process.stdout.write(JSON.stringify({ runs, messages: agent.messages }) + "\n");
