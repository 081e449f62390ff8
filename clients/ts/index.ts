// @oncecall/client: a TypeScript client of oncecall, typed from openapi.yaml
// (openapi-typescript, schema.d.ts) and calling it with openapi-fetch, plus
// retryingFetch, which resends a request whose answer gives no outcome with
// the same Idempotency-Key. README.md shows both.
import createClient, { type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** The options of createOncecallClient: openapi-fetch's, without baseUrl. */
export type OncecallClientOptions = Omit<ClientOptions, "baseUrl">;

/**
 * A client of the oncecall at baseUrl that sends apiKey as its Bearer token.
 * Pass `fetch: retryingFetch()` to retry safely.
 */
export function createOncecallClient(baseUrl: string, apiKey: string, options: OncecallClientOptions = {}) {
  return createClient<paths>({
    ...options,
    baseUrl,
    headers: { ...(options.headers as Record<string, string> | undefined), Authorization: `Bearer ${apiKey}` },
  });
}

/** How retryingFetch retries. */
export interface RetryOptions {
  /** How many times a request is sent at most (default 5). */
  attempts?: number;
  /** The wait before the second attempt in ms, doubled up to maxDelayMs (defaults 200 and 5000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** The fetch each attempt uses (default globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

// Answers that leave the outcome open: another attempt still running (409),
// over the rate limit (429), nothing ran or the gateway lost the answer.
const retryStatuses = new Set([409, 429, 502, 503, 504]);

/**
 * A fetch that resends a request unchanged, so with the same Idempotency-Key,
 * after a network error or a 409, 429, 502, 503 or 504 answer, with
 * exponential backoff that honours Retry-After. Any other answer is final: a
 * 4xx business answer such as 422 is never retried. A write without an
 * Idempotency-Key is sent once; GET and HEAD are retried as they are. Make the
 * key once per intended action, before the first attempt.
 */
export function retryingFetch(options: RetryOptions = {}): (input: Request) => Promise<Response> {
  const attempts = options.attempts ?? 5;
  const maxDelay = options.maxDelayMs ?? 5000;
  const send = options.fetch ?? ((r: Request) => globalThis.fetch(r));
  return async (input: Request): Promise<Response> => {
    const retriable = input.method === "GET" || input.method === "HEAD" || input.headers.has("Idempotency-Key");
    if (!retriable) return send(input);
    let delay = options.baseDelayMs ?? 200;
    for (let attempt = 1; ; attempt++) {
      let answer: Response | undefined;
      try {
        answer = await send(input.clone());
        if (!retryStatuses.has(answer.status) || attempt >= attempts) return answer;
      } catch (err) {
        if (attempt >= attempts || input.signal.aborted) throw err;
      }
      let wait = delay / 2 + Math.random() * (delay / 2);
      const after = Number(answer?.headers.get("Retry-After"));
      if (Number.isFinite(after) && after > 0) wait = Math.max(wait, Math.min(after * 1000, maxDelay));
      await answer?.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (input.signal.aborted) throw input.signal.reason;
      delay = Math.min(2 * delay, maxDelay);
    }
  };
}
