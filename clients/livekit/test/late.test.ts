// A booking that settles after its tool returned is spoken, in a real LiveKit AgentSession (text only, no
// room) with oncecall's AsyncToolset and a scripted model. A Go test (TestLiveKitLateResult in api/) starts
// oncecall with a calendar slower than oncecall's budget, so the booking is answered pending, and runs this
// file with ONCECALL_KEY, ONCECALL_TOOLS, ONCECALL_CUSTOMER and ONCECALL_SLOTS (one slot); it then counts
// one appointment and one action.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, test } from "node:test";

import { initializeLogger, llm, voice } from "@livekit/agents";

import { type AnswerEvent, type ToolDefinition, oncecallToolset } from "../src/index.js";

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this test through TestLiveKitLateResult`);
  return v;
};
const definitions = JSON.parse(readFileSync(env("ONCECALL_TOOLS"), "utf8")) as ToolDefinition[];
const apiKey = env("ONCECALL_KEY");
const customer = env("ONCECALL_CUSTOMER");
const slot = env("ONCECALL_SLOTS");

before(() => initializeLogger({ pretty: false, level: "warn" }));

// What the scripted model says after reading an answer: what its outcome allows, nothing more.
const SAID_PENDING = "It is not confirmed yet; I will tell you as soon as it is.";
const SAID_CONFIRMED = "Your appointment is booked.";

// A model that books once when the caller asks, and then says what the latest tool output allows.
class ScriptedModel extends llm.LLM {
  label(): string {
    return "scripted";
  }
  chat({ chatCtx, toolCtx }: { chatCtx: llm.ChatContext; toolCtx?: llm.ToolContextLike }): llm.LLMStream {
    return new ScriptedStream(this, { chatCtx, toolCtx, connOptions: { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 10000 } });
  }
}

class ScriptedStream extends llm.LLMStream {
  protected async run(): Promise<void> {
    const items = this.chatCtx.items;
    const last = items.at(-1);
    if (last?.type === "message" && last.role === "user") {
      const call = llm.FunctionCall.create({
        callId: "call_book",
        name: "book_appointment",
        args: JSON.stringify({ customer_id: customer, slot_id: slot }),
      });
      this.queue.put({ id: "call", delta: { role: "assistant", toolCalls: [call] } });
      return;
    }
    const output = [...items].reverse().find((i) => i.type === "function_call_output");
    if (output?.type === "function_call_output") {
      const said = output.output.includes('"outcome":"confirmed"') ? SAID_CONFIRMED : SAID_PENDING;
      this.queue.put({ id: `reply_${output.callId}`, delta: { role: "assistant", content: said } });
    }
  }
}

test("a booking that settles after the tool returned pending is spoken", async () => {
  const answers: AnswerEvent[] = [];
  const session = new voice.AgentSession({ llm: new ScriptedModel() });
  const agent = new voice.Agent({
    instructions: "Book what the caller asks for.",
    tools: [oncecallToolset({ definitions, apiKey, callId: "room-late", onAnswer: (e) => answers.push(e) })],
  });
  await session.start({ agent });
  try {
    const said = () =>
      session.history.items.flatMap((i) => (i.type === "message" && i.role === "assistant" ? [i.textContent] : []));
    const until = async (what: string, cond: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!cond()) {
        assert.ok(Date.now() < deadline, `never: ${what}: ${JSON.stringify(said())}`);
        await new Promise((resolve) => setTimeout(resolve, 100)); // polling a condition
      }
    };
    // The caller's turn, as speech would start it (session.run's test harness cannot watch the background
    // reply that follows, in @livekit/agents 1.9.0).
    session.generateReply({ userInput: "Book me the nine o'clock, please." });
    // The turn ends with the pending answer: the caller hears that nothing is confirmed yet.
    await until("the pending answer is spoken", () => said().includes(SAID_PENDING));
    assert.equal(answers[0]?.answer.outcome, "pending", answers[0]?.answer.say);
    assert.ok(!said().includes(SAID_CONFIRMED), "confirmed before the booking settled");

    // The booking settles in the background; LiveKit hands its answer to the model, which speaks it.
    await until("the settled booking is spoken", () => said().includes(SAID_CONFIRMED));
    const settled = session.history.items.find(
      (i) => i.type === "function_call_output" && i.callId === "call_book_final" && i.output.includes('"outcome":"confirmed"'),
    );
    assert.ok(settled, "the settled answer is the background call's result");
    const ids = new Set(answers.map((a) => a.answer.action_id));
    assert.equal(ids.size, 1, `one action throughout: ${[...ids]}`);
    assert.deepEqual(said(), [SAID_PENDING, SAID_CONFIRMED]);
  } finally {
    await session.close();
  }
});
