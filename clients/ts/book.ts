// book.ts drives a live oncecall with the client generated from openapi.yaml
// (openapi-typescript types, openapi-fetch calls): it books an appointment,
// retries with the same Idempotency-Key and sees the replay, then reuses the
// key with a changed body and gets 422 IDEMPOTENCY_KEY_REUSED; then it books
// another slot through retryingFetch over a connection that loses the first
// answer and receives the stored one, and sees a 422 sent only once. It
// prints one line per check and a closing "N passed, N failed" line, and
// exits non-zero when a check fails.
//
//   node dist/book.js <base URL> <API key>   (or ONCECALL_URL, ONCECALL_API_KEY)
import { randomUUID } from "node:crypto";
import { type components, createOncecallClient, retryingFetch } from "./index.js";

type Schemas = components["schemas"];

// created is the body of a 201 answer. openapi-fetch types data as any 2xx
// body (201, or 202 pending); a 202 here means the test cannot go on.
function created<T>(r: { data?: unknown; error?: unknown; response: Response }, what: string): T {
  if (r.response.status !== 201) throw new Error(`${what}: ${r.response.status} ${JSON.stringify(r.error ?? r.data)}`);
  return r.data as T;
}

const baseUrl = process.argv[2] ?? process.env.ONCECALL_URL;
const apiKey = process.argv[3] ?? process.env.ONCECALL_API_KEY;
if (!baseUrl || !apiKey) {
  console.error("usage: node dist/book.js <base URL> <API key>");
  process.exit(2);
}

const client = createOncecallClient(baseUrl, apiKey);
const run = randomUUID(); // keys unique to this run, so it can run again against the same server
let passed = 0;
let failed = 0;

function check(name: string, ok: boolean, detail: unknown): void {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}: ${JSON.stringify(detail)}`);
  }
}

// slot creates a free slot starting `hours` from now and returns its id.
async function slot(hours: number): Promise<string> {
  const start = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + hours * 3_600_000);
  const r = await client.POST("/v1/slots", {
    params: { header: { "Idempotency-Key": `ts-slot-${hours}-${run}` } },
    body: { starts_at: start.toISOString(), ends_at: new Date(start.getTime() + 3_600_000).toISOString() },
  });
  return created<Schemas["SlotAction"]>(r, "create slot").result.id;
}

async function main(): Promise<void> {
  const customer = await client.POST("/v1/customers", {
    params: { header: { "Idempotency-Key": `ts-customer-${run}` } },
    body: { name: "Ana Lopez" },
  });
  const customerId = created<Schemas["CustomerAction"]>(customer, "create customer").result.id;
  const [first, second] = [await slot(24), await slot(25)];

  const key = `ts-book-${run}`;
  const book = (slotId: string) =>
    client.POST("/v1/appointments", {
      params: { header: { "Idempotency-Key": key } },
      body: { customer_id: customerId, slot_id: slotId },
    });

  const booked = await book(first);
  const appointment = created<Schemas["AppointmentAction"]>(booked, "book").result as Schemas["Appointment"];
  check("book answers 201 with the appointment", appointment.slot_id === first && appointment.status === "active", booked.data);
  check("the first answer is not a replay", booked.response.headers.get("Idempotent-Replayed") === null, [...booked.response.headers]);

  const retried = await book(first);
  check("the retry with the same key answers 201", retried.response.status === 201, retried.error);
  check("the retry carries Idempotent-Replayed: true", retried.response.headers.get("Idempotent-Replayed") === "true", [...retried.response.headers]);
  check("the retry is the same action", retried.data?.action_id === booked.data?.action_id && JSON.stringify(retried.data) === JSON.stringify(booked.data), retried.data);

  const reused = await book(second);
  check("the key reused with another slot answers 422", reused.response.status === 422, reused.data);
  check("the 422 is IDEMPOTENCY_KEY_REUSED and names the original action", reused.error?.code === "IDEMPOTENCY_KEY_REUSED" && reused.error?.action_id === booked.data?.action_id, reused.error);

  const actionId = booked.data?.action_id ?? "";
  const action = await client.GET("/v1/actions/{action_id}", { params: { path: { action_id: actionId } } });
  const result = action.data?.result as Record<string, unknown> | null | undefined;
  check("the action is confirmed and still books the first slot", action.data?.outcome === "confirmed" && result?.["slot_id"] === first, action.data ?? action.error);

  // A connection that loses the first answer: the booking happens, the
  // caller sees a network error, and retryingFetch resends with the key.
  let lose = 1;
  const lossy = async (r: Request): Promise<Response> => {
    const answer = await fetch(r);
    if (lose-- > 0) {
      await answer.body?.cancel();
      throw new TypeError("fetch failed: the answer was lost");
    }
    return answer;
  };
  const third = await slot(26);
  const retrying = createOncecallClient(baseUrl!, apiKey!, { fetch: retryingFetch({ fetch: lossy, baseDelayMs: 10 }) });
  const lost = await retrying.POST("/v1/appointments", {
    params: { header: { "Idempotency-Key": `ts-lost-${run}` } },
    body: { customer_id: customerId, slot_id: third },
  });
  check("after a lost answer retryingFetch gets the stored one", lost.response.status === 201 && lost.response.headers.get("Idempotent-Replayed") === "true", lost.error ?? lost.data);

  // A 422 business answer is final: retryingFetch sends it once.
  let sent = 0;
  const counting = createOncecallClient(baseUrl!, apiKey!, {
    fetch: retryingFetch({ fetch: (r) => (sent++, fetch(r)), baseDelayMs: 10 }),
  });
  const final = await counting.POST("/v1/appointments", {
    params: { header: { "Idempotency-Key": `ts-lost-${run}` } },
    body: { customer_id: customerId, slot_id: first },
  });
  check("retryingFetch does not retry a 422", final.response.status === 422 && sent === 1, { status: final.response.status, sent });
}

main()
  .catch((err: unknown) => {
    failed++;
    console.log(`FAIL ${err instanceof Error ? err.message : String(err)}`);
  })
  .finally(() => {
    console.log(`tsclient: ${passed} passed, ${failed} failed`);
    process.exitCode = failed === 0 && passed > 0 ? 0 : 1;
  });
