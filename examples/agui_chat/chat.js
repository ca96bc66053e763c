// A small chat on the durable-tools AG-UI endpoint (docs/agui.md), with @ag-ui/client's
// HttpAgent: the answer streams into its bubble, tool calls show as they run, and an
// approval the run asks of the user is a card whose buttons answer the interrupt.
// Built with esbuild (`npm run build`): dist/chat.js is what index.html loads.
import { HttpAgent } from "@ag-ui/client";

const transcript = document.getElementById("transcript");
const form = document.getElementById("send");
const input = document.getElementById("message");
// The thread survives a reload: the conversation is the session's, kept by Temporal.
const threadId = localStorage.getItem("threadId") || `chat-${crypto.randomUUID()}`;
localStorage.setItem("threadId", threadId);
let agent = null;

function bubble(kind, text) {
  const div = document.createElement("div");
  div.className = kind;
  div.textContent = text;
  transcript.append(div);
  return div;
}

function theAgent() {
  const token = document.getElementById("token").value.trim();
  if (!agent || agent.headers.Authorization !== `Bearer ${token}`) {
    agent = new HttpAgent({ url: "agui/", threadId, headers: { Authorization: `Bearer ${token}` } });
  }
  return agent;
}

function showing() {
  const texts = new Map();
  return {
    onTextMessageStartEvent({ event }) {
      texts.set(event.messageId, bubble("assistant", ""));
    },
    onTextMessageContentEvent({ event }) {
      texts.get(event.messageId).textContent += event.delta;
    },
    onToolCallStartEvent({ event }) {
      bubble("tool", `→ ${event.toolCallName}`).id = `call-${event.toolCallId}`;
    },
    onToolCallArgsEvent({ event }) {
      document.getElementById(`call-${event.toolCallId}`).textContent += `(${event.delta})`;
    },
    onToolCallResultEvent({ event }) {
      bubble("tool", `← ${event.content}`);
    },
    onRunErrorEvent({ event }) {
      bubble("error", event.message);
    },
    onRunFinishedEvent({ event }) {
      if (event.outcome?.type === "interrupt") event.outcome.interrupts.forEach(card);
    },
  };
}

async function run(parameters) {
  try {
    await theAgent().runAgent(parameters, showing());
  } catch (error) {
    bubble("error", String(error.message || error));
  }
}

// What the run waits for, as the inbox would show it: the tool, its (redacted) arguments,
// the summary. The answer names the interrupt, and with it the exact arguments shown.
function card(interrupt) {
  const div = bubble("card", `${interrupt.message}\n${interrupt.metadata.tool} ${JSON.stringify(interrupt.metadata.arguments)}\n`);
  for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
    const button = document.createElement("button");
    button.textContent = label;
    button.className = approved ? "approve" : "deny";
    button.onclick = () => {
      div.querySelectorAll("button").forEach((b) => (b.disabled = true));
      run({ resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved } }] });
    };
    div.append(button);
  }
}

// After a reload: the thread so far, from the session (the run kept it, not the page).
let restored = false;
async function restore() {
  const token = document.getElementById("token").value.trim();
  if (restored || !token) return;
  const response = await fetch(`agui/threads/${encodeURIComponent(threadId)}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  if (!response.ok) return; // a new thread (404), or not signed in yet (401)
  restored = true;
  const { messages } = await response.json();
  theAgent().setMessages(messages);
  for (const message of messages) bubble(message.role, message.content);
}
document.getElementById("token").addEventListener("input", restore);

form.addEventListener("submit", (submitted) => {
  submitted.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  bubble("user", text);
  theAgent().addMessage({ id: crypto.randomUUID(), role: "user", content: text });
  run({});
});
