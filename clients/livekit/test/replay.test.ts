// Runs oncecall's LiveKit tools inside a real LiveKit AgentSession (text only, no room) against a live
// oncecall, with a scripted model in place of an LLM. A Go test (TestLiveKitAgentsPackage in api/) starts
// oncecall, makes a tenant with a customer and two free slots, exports the tool definitions, and runs
// this file with:
//   ONCECALL_KEY        the tenant's API key
//   ONCECALL_TOOLS      the path of the exported definitions (tools export's JSON array)
//   ONCECALL_CUSTOMER   a customer id
//   ONCECALL_SLOTS      two free slot ids, comma-separated
// and then counts the rows the calls made.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { initializeLogger, llm, voice } from "@livekit/agents";

import { type AnswerEvent, OncecallClient, type ToolDefinition, oncecallTools } from "../src/index.js";

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this test through TestLiveKitAgentsPackage`);
  return v;
};
const definitions = JSON.parse(readFileSync(env("ONCECALL_TOOLS"), "utf8")) as ToolDefinition[];
const apiKey = env("ONCECALL_KEY");
const customer = env("ONCECALL_CUSTOMER");
const [slotA, slotB] = env("ONCECALL_SLOTS").split(",") as [string, string];

before(() => initializeLogger({ pretty: false, level: "warn" }));

// A model that books the slot it is asked for, like a real one: every tool call it makes has a new id.
class ScriptedModel extends llm.LLM {
  toolCallIds: string[] = [];
  constructor(readonly tool: string, readonly args: Record<string, unknown>) {
    super();
  }
  label(): string {
    return "scripted";
  }
  chat({ chatCtx, toolCtx }: { chatCtx: llm.ChatContext; toolCtx?: llm.ToolContextLike }): llm.LLMStream {
    return new ScriptedStream(this, { chatCtx, toolCtx, connOptions: { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 10000 } });
  }
}

class ScriptedStream extends llm.LLMStream {
  constructor(readonly model: ScriptedModel, params: ConstructorParameters<typeof llm.LLMStream>[1]) {
    super(model, params);
  }
  protected async run(): Promise<void> {
    const last = this.chatCtx.items.at(-1);
    if (last?.type === "message" && last.role === "user") {
      const callId = `call_${Math.random().toString(36).slice(2)}`;
      this.model.toolCallIds.push(callId);
      const call = llm.FunctionCall.create({ callId, name: this.model.tool, args: JSON.stringify(this.model.args) });
      this.queue.put({ id: callId, delta: { role: "assistant", toolCalls: [call] } });
    } else if (last?.type === "function_call_output") {
      // The model speaks after reading the answer's say.
      this.queue.put({ id: "reply", delta: { role: "assistant", content: "Let me tell you what happened." } });
    }
  }
}

// One session of one phone call, with oncecall's tools and the scripted model.
async function startSession(callId: string, model: ScriptedModel, fetchFn?: typeof fetch) {
  const answers: AnswerEvent[] = [];
  const session = new voice.AgentSession({ llm: model });
  const agent = new voice.Agent({
    instructions: "Book what the caller asks for.",
    tools: oncecallTools({ definitions, apiKey, callId, fetch: fetchFn, onAnswer: (e) => answers.push(e) }),
  });
  await session.start({ agent });
  return { session, answers };
}

const sessions: voice.AgentSession[] = [];
after(async () => {
  for (const s of sessions) await s.close();
});

// livekit/agents#3702: the caller interrupts while create_reservation runs, the turn's tool result never
// reaches the chat history, and the model runs the same tool again with a new tool call id. oncecall
// answers the second call with the first call's booking: one appointment (the Go test counts the rows).
test("an interrupted booking re-run with a new tool call id books once", async () => {
  const model = new ScriptedModel("book_appointment", { customer_id: customer, slot_id: slotA });
  // The first booking's answer arrives only after the caller has interrupted.
  let answered!: () => void;
  const serverAnswered = new Promise<void>((resolve) => (answered = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let calls = 0;
  const slowFirstAnswer: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (++calls === 1) {
      answered();
      await released;
    }
    return res;
  };
  const { session, answers } = await startSession("room-interrupted", model, slowFirstAnswer);
  sessions.push(session);

  const firstTurn = session.run({ userInput: "Book me the nine o'clock, please." });
  await serverAnswered; // oncecall has booked; the tool has not returned yet
  await session.interrupt({ force: true }).await;
  release();
  await firstTurn.wait().catch(() => {}); // the interrupted turn may end either way

  // As in the issue, the interruption kept the first run's result out of the chat history.
  assert.ok(
    !session.history.items.some((i) => i.type === "function_call_output" && i.callId === model.toolCallIds[0]),
    "the first run's result reached the chat history: this LiveKit version no longer drops it, so this test no longer shows the re-run",
  );
  // The caller says it again; the model runs the tool again.
  const secondTurn = session.run({ userInput: "Book me the nine o'clock, please." });
  await secondTurn.wait();

  assert.equal(model.toolCallIds.length, 2, "the model ran the tool twice");
  assert.notEqual(model.toolCallIds[0], model.toolCallIds[1], "under two tool call ids");
  const byCall = new Map(answers.map((a) => [a.toolCallId, a]));
  const rerun = byCall.get(model.toolCallIds[1]);
  assert.ok(rerun, "the re-run was answered");
  assert.equal(rerun.answer.outcome, "confirmed", rerun.answer.say);
  assert.equal(rerun.replayed, true, "the re-run is answered with the first run's action");
  const first = byCall.get(model.toolCallIds[0]);
  if (first) {
    assert.equal(rerun.answer.action_id, first.answer.action_id);
  }
});

// The identity is the call and the booking, never the tool call id: the same booking asked for in
// another call is the same action too, while a note (a per-call operation) is one per call.
test("the call id keeps per-call actions apart, the tool call id never does", async () => {
  const note = { customer_id: customer, text: "Prefers mornings.", note_ref: "pref" };
  const client = (callId: string) => new OncecallClient({ definitions, apiKey, callId });
  const a1 = await client("room-a").call("add_customer_note", note, "call_1");
  const a2 = await client("room-a").call("add_customer_note", note, "call_2");
  const b1 = await client("room-b").call("add_customer_note", note, "call_1");
  assert.equal(a1.answer.outcome, "confirmed", a1.answer.say);
  assert.equal(a2.answer.action_id, a1.answer.action_id, "the same note in one call, under another tool call id");
  assert.equal(a2.replayed, true);
  assert.notEqual(b1.answer.action_id, a1.answer.action_id, "the same tool call id in another call is another note");

  const book = { customer_id: customer, slot_id: slotB };
  const x = await client("room-x").call("book_appointment", book, "call_1");
  const y = await client("room-y").call("book_appointment", book, "call_9");
  assert.equal(x.answer.outcome, "confirmed", x.answer.say);
  assert.equal(y.answer.action_id, x.answer.action_id, "a booking's identity is its customer and slot");
});

// A call oncecall cannot answer gets the definition's pending fallback, never a success; a refused one
// (a wrong key) is an error the model sees, with nothing done.
test("no answer is pending, a refusal is an error", async () => {
  const unreachable: typeof fetch = async () => {
    throw new TypeError("fetch failed");
  };
  const lostClient = new OncecallClient({ definitions, apiKey, callId: "room-lost", fetch: unreachable });
  const lost = await lostClient.call("book_appointment", { customer_id: customer, slot_id: slotB });
  assert.equal(lost.answer.outcome, "pending");
  assert.equal(lost.answer.reason, "no_answer");

  const wrongKey = new OncecallClient({ definitions, apiKey: "oc_wrong", callId: "room-refused" });
  await assert.rejects(wrongKey.call("find_customer", {}), (err: Error) => err instanceof llm.ToolError && /HTTP 401/.test(err.message));
});
