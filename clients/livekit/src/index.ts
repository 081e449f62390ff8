// oncecall's tools for LiveKit Agents (Node.js).
//
// Each tool of `oncecall tools export` becomes a LiveKit function tool that posts the model's arguments to
// oncecall's tool route (POST /v1/dasha/tools/{tool}, the webhook URL of the exported definition) with the
// session's call id, and hands oncecall's answer to the model, whose `say` tells it what it may tell the
// caller. The idempotency key is not the tool call id: oncecall derives it from the call id and the
// operation's identity fields (the customer and slot of a booking, ...). So when an interrupted turn loses
// a tool's result and the model runs the tool again under a new tool call id, oncecall answers with the
// action the first run made (docs/voice-platforms.md#in-process-agents). oncecallToolset puts them in a
// LiveKit AsyncToolset, so that an answer that settles after the tool returned pending is spoken.
import { llm } from "@livekit/agents";

/** One tool definition as `oncecall tools export` prints it (the default, Dasha-shaped export). */
export interface ToolDefinition {
  name: string;
  description: string;
  /** The JSON Schema of the tool's arguments. */
  schema: Record<string, unknown>;
  /** Where the tool's calls go; its headers are replaced by the apiKey option. */
  webhook: { url: string; headers?: Record<string, string> };
  /** The answer given when oncecall cannot be reached: pending, never a success. */
  fallBackResult: Answer;
  /** How long one attempt may take (default 10). */
  timeoutSeconds?: number;
  /** How many times a call that got no answer is sent again (default 2). */
  retryCount?: number;
}

/** oncecall's answer to a tool call. Only outcome "confirmed" means it happened. */
export interface Answer {
  outcome: "confirmed" | "rejected" | "pending";
  action_id: string;
  reason?: string;
  /** What the model may tell the caller, and what it must not. */
  say: string;
  details: unknown;
  current?: string;
}

export interface OncecallOptions {
  /** The definitions, e.g. JSON.parse of `oncecall tools export --base-url URL [--tenant NAME]`. */
  definitions: readonly ToolDefinition[];
  /** The tenant's API key (a key of scope dasha is enough). */
  apiKey: string;
  /**
   * The phone call's id: the same for the call's whole length and different for every call, such as the
   * name of a room made for each call. It is sent as "<framework>:<callId>", at most 200 printable ASCII
   * characters in all.
   */
  callId: string;
  /** The caller's number in international form, when known (find_customer uses it). */
  caller?: string;
  /** The tenant's Dasha orgId, if the tenant is bound to one. */
  orgId?: string;
  /** Names the framework in the call id (default "livekit"). */
  framework?: string;
  /** The fetch to use (default: the global fetch). */
  fetch?: typeof fetch;
  /** Called with every answer, e.g. to log it. */
  onAnswer?: (event: AnswerEvent) => void;
  /**
   * How long a tool of oncecallToolset whose answer was pending keeps asking oncecall for the outcome
   * (default 300 seconds); past it the model gets the last answer, still pending.
   */
  lateWaitSeconds?: number;
}

/** One answered tool call. */
export interface AnswerEvent {
  tool: string;
  /** The model's id of this tool call; it names the invocation only, never the action. */
  toolCallId?: string;
  answer: Answer;
  /** oncecall answered with an action an earlier call made (Idempotent-Replayed). */
  replayed: boolean;
}

/** A call oncecall refused before doing anything (a wrong key, an unknown tool, a malformed call). */
export class OncecallRefusal extends llm.ToolError {
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(`oncecall refused this call (HTTP ${status}: ${detail}); nothing was done.`);
  }
}

/**
 * The LiveKit function tools of every definition, for an Agent's tools:
 *
 *   new voice.Agent({ instructions, tools: oncecallTools({ definitions, apiKey, callId: ctx.room.name }) })
 */
export function oncecallTools(options: OncecallOptions): llm.FunctionTool[] {
  const client = new OncecallClient(options);
  return options.definitions.map((def) =>
    llm.tool({
      name: def.name,
      description: def.description,
      parameters: def.schema,
      execute: async (args: Record<string, unknown>, { toolCallId }) => (await client.call(def.name, args, toolCallId)).answer,
    }),
  );
}

/**
 * The same tools in an AsyncToolset, for an Agent's tools, so that a result that arrives late is spoken:
 *
 *   new voice.Agent({ instructions, tools: [oncecallToolset({ definitions, apiKey, callId: ctx.room.name })] })
 *
 * A call oncecall answers pending (a provider slower than oncecall's budget) hands the pending answer to the
 * model at once (RunContext.update: the conversation goes on, and the model says that nothing is confirmed
 * yet), then keeps asking check_action_status about the same action, and returns the settled answer, which
 * LiveKit delivers to the model as the background call's result when the session is idle: the agent speaks
 * the outcome. It is the same action throughout: nothing is sent again.
 */
export function oncecallToolset(options: OncecallOptions): llm.AsyncToolset {
  const client = new OncecallClient(options);
  return llm.AsyncToolset.create({
    id: "oncecall",
    tools: options.definitions.map((def) =>
      llm.tool({
        name: def.name,
        description: def.description,
        parameters: def.schema,
        execute: async (args: Record<string, unknown>, { ctx, toolCallId, abortSignal }) => {
          const first = await client.call(def.name, args, toolCallId);
          if (!client.waitsFor(first)) {
            return first.answer;
          }
          await ctx.update(first.answer);
          return (await client.settled(first, abortSignal)).answer;
        },
      }),
    ),
  });
}

/** Calls oncecall's tools for one phone call. */
export class OncecallClient {
  readonly #options: OncecallOptions;
  readonly #defs: Map<string, ToolDefinition>;
  readonly #callId: string;

  constructor(options: OncecallOptions) {
    this.#options = options;
    this.#defs = new Map(options.definitions.map((d) => [d.name, d]));
    this.#callId = `${options.framework ?? "livekit"}:${options.callId}`;
    if (!options.callId || this.#callId.length > 200 || !/^[ -~]+$/.test(this.#callId)) {
      throw new Error("callId must be a non-empty id of at most 200 printable ASCII characters with its framework prefix");
    }
    if (!options.apiKey) {
      throw new Error("apiKey is required");
    }
  }

  /** Whether an answer is a pending action whose outcome check_action_status can tell later. */
  waitsFor(event: AnswerEvent): boolean {
    const a = event.answer;
    return a.outcome === "pending" && a.action_id !== "" && a.reason !== "no_answer" && this.#defs.has("check_action_status");
  }

  /**
   * Asks check_action_status about a pending answer's action, a little apart (0.5 s doubling to 5 s), until
   * it is no longer pending, lateWaitSeconds pass or signal aborts, and returns the last answer. It sends
   * nothing that could act again: the status tool only reads.
   */
  async settled(event: AnswerEvent, signal?: AbortSignal): Promise<AnswerEvent> {
    const deadline = Date.now() + 1000 * (this.#options.lateWaitSeconds ?? 300);
    let last = event;
    for (let pause = 500; Date.now() + pause < deadline && !signal?.aborted; pause = Math.min(2 * pause, 5000)) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      const status = await this.call("check_action_status", { action_id: event.answer.action_id }, event.toolCallId);
      if (status.answer.action_id === event.answer.action_id) {
        last = { ...status, tool: event.tool };
      }
      if (last.answer.outcome !== "pending") {
        break;
      }
    }
    return last;
  }

  /**
   * Sends one tool call and returns oncecall's answer. A call that gets no answer (a lost connection, a
   * 502/503/504, a timeout) is sent again with the same body, which oncecall maps to the same action;
   * when no attempt is answered, the answer is the definition's fallBackResult (pending).
   */
  async call(tool: string, args: Record<string, unknown>, toolCallId?: string): Promise<AnswerEvent> {
    const def = this.#defs.get(tool);
    if (!def) {
      throw new llm.ToolError(`no oncecall tool named ${tool}`);
    }
    const body = JSON.stringify({
      type: "ToolWebHookPayload",
      status: "Running",
      callId: this.#callId,
      agentId: this.#options.framework ?? "livekit",
      orgId: this.#options.orgId ?? "",
      toolName: tool,
      arguments: args,
      callAdditionalData: {},
      agentAdditionalData: {},
      ...(this.#options.caller ? { endpoint: this.#options.caller } : {}),
    });
    const doFetch = this.#options.fetch ?? fetch;
    const attempts = 1 + (def.retryCount ?? 2);
    const deadline = Date.now() + 1000 * (def.timeoutSeconds ?? 10);
    for (let attempt = 1; ; attempt++) {
      let retryAfterMs = 250 * 2 ** (attempt - 1);
      try {
        const res = await doFetch(def.webhook.url, {
          method: "POST",
          headers: { Authorization: `Bearer ${this.#options.apiKey}`, "Content-Type": "application/json" },
          body,
          signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
        });
        if (res.status === 200) {
          const event = {
            tool,
            toolCallId,
            answer: (await res.json()) as Answer,
            replayed: res.headers.get("Idempotent-Replayed") === "true",
          };
          this.#options.onAnswer?.(event);
          return event;
        }
        if (![429, 502, 503, 504].includes(res.status)) {
          const problem = (await res.json().catch(() => ({}))) as { detail?: string; title?: string };
          throw new OncecallRefusal(res.status, problem.detail ?? problem.title ?? res.statusText);
        }
        const seconds = Number(res.headers.get("Retry-After"));
        if (seconds > 0) {
          retryAfterMs = 1000 * seconds;
        }
        await res.body?.cancel();
      } catch (err) {
        if (err instanceof OncecallRefusal) {
          throw err;
        }
        // A lost connection or a timeout: the outcome is unknown, and a repeat maps to the same action.
      }
      if (attempt >= attempts || Date.now() + retryAfterMs >= deadline) {
        const event = { tool, toolCallId, answer: def.fallBackResult, replayed: false };
        this.#options.onAnswer?.(event);
        return event;
      }
      await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
    }
  }
}
