package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

const stripeWebhookSecret = "whsec_test_oncecall"

// setupStripe is oncecall with payments served by the Stripe adapter
// against the simulator's Stripe mode, whose signed webhooks reach
// oncecall's webhook endpoint; the reconciler is driven by the test.
func setupStripe(t *testing.T) remoteEnv {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: p}
		c.ReconcileDisabled = true
		c.OperatorToken = operatorToken
		c.StripeWebhookSecret = stripeWebhookSecret
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
	})
	sim.SetStripeWebhook(e.URL+"/v1/providers/stripe/webhook", stripeWebhookSecret)
	tenant, key := e.Tenant("stripe")
	return remoteEnv{Env: e, sim: sim, key: key, tenant: tenant.ID}
}

// onlyPaymentIntent is the simulated Stripe's single PaymentIntent.
func onlyPaymentIntent(t *testing.T, sim *simtest.Sim) providersim.StripePaymentIntent {
	t.Helper()
	l := sim.StripeLedger()
	if len(l) != 1 {
		t.Fatalf("Stripe holds %d PaymentIntents, want 1: %+v", len(l), l)
	}
	return l[0]
}

// lose makes the answer of the next request of kind on come after the
// adapter gave up (its timeout is 1s): Stripe commits the request later.
// (A dropped connection is re-sent at once by Go's HTTP transport, which
// treats a request with an Idempotency-Key as replayable: Stripe replays
// it, so that loss is over before oncecall sees it.)
func lose(t *testing.T, sim *simtest.Sim, on string) {
	t.Helper()
	if _, err := sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Payments, Fault: "delay=2s", Count: 1, On: on}); err != nil {
		t.Fatal(err)
	}
}

// A charge whose capture answer is lost (Stripe captures after oncecall
// gave up) is pending (202), never confirmed and never failed; the reconciler re-sends under the same keys
// and confirms it with Stripe's PaymentIntent as evidence: one capture,
// one local payment with Stripe's reference.
func TestStripeLostCaptureAnswerIsPendingThenConfirmedOnce(t *testing.T) {
	t.Parallel()
	r := setupStripe(t)
	lose(t, r.sim, providersim.OnCapture)
	intent := r.intent(t, 4500)
	first := r.Post("/v1/payments", r.key, "stripe-lost", map[string]any{"payment_intent_id": intent})
	if first.Status != http.StatusAccepted {
		t.Fatalf("charge with its answer lost: %d %s, want 202 pending", first.Status, first.Body)
	}
	id := first.JSON(t)["action_id"].(string)
	r.untilConfirmed(t, id, 20*time.Second)
	pi := onlyPaymentIntent(t, r.sim)
	if pi.Captures != 1 || pi.AmountReceived != 4500 || pi.Metadata[stripeprovider.MetaAction] != id {
		t.Fatalf("PaymentIntent %+v, want captured once for 4500 by action %s", pi, id)
	}
	if n := r.Count("SELECT count(*) FROM payments WHERE provider_ref = $1 AND status = 'succeeded'", pi.ID); n != 1 {
		t.Fatalf("%d local payments carry %s, want 1", n, pi.ID)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured'", intent); n != 1 {
		t.Fatal("the approved intent is not recorded as captured")
	}
	// The same charge again: the intent is captured, nothing is sent.
	if got := reason(t, r.Post("/v1/payments", r.key, "stripe-again", map[string]any{"payment_intent_id": intent})); got != "INTENT_ALREADY_CAPTURED" {
		t.Fatalf("second charge: %s", got)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 {
		t.Fatalf("captures after a second charge: %d", pi.Captures)
	}
}

// A declined card is rejected with nothing charged, Stripe's hold is
// cancelled and the approved intent may be charged again.
func TestStripeDeclinedChargeIsRejectedAndReleasesTheIntent(t *testing.T) {
	t.Parallel()
	r := setupStripe(t)
	resp := r.Post("/v1/payment-intents", r.key, "declined-intent", map[string]any{
		"customer_id": r.Customer(r.tenant), "amount": 900, "currency": "EUR", "payment_method": "pm_card_declined",
	})
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve: %d %s", resp.Status, resp.Body)
	}
	intent := resp.JSON(t)["result"].(map[string]any)["id"].(string)
	if got := reason(t, r.Post("/v1/payments", r.key, "declined-charge", map[string]any{"payment_intent_id": intent})); got != "PAYMENT_DECLINED" {
		t.Fatalf("declined charge: %s", got)
	}
	if pi := onlyPaymentIntent(t, r.sim); pi.Status != "canceled" || pi.Captures != 0 {
		t.Fatalf("PaymentIntent %+v, want the hold canceled", pi)
	}
	if n := r.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status <> 'captured' AND charging_action_id IS NULL", intent); n != 1 {
		t.Fatal("the declined intent is still held or captured")
	}
}

// signedEvent is a Stripe event about a PaymentIntent, signed with secret.
func signedEvent(t *testing.T, secret, evID, typ string, pi map[string]any) ([]byte, string) {
	t.Helper()
	obj, _ := json.Marshal(pi)
	body, _ := json.Marshal(map[string]any{
		"id": evID, "object": "event", "type": typ, "api_version": stripe.APIVersion, "created": time.Now().Unix(),
		"data": map[string]any{"object": json.RawMessage(obj)},
	})
	s := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
	return body, s.Header
}

// Stripe's webhooks are notices, never verdicts: a verified one about an
// unknown step makes it due for a check now and is kept in the timeline; a
// forged one is 401 and changes nothing; duplicates and events about
// objects oncecall does not know are acknowledged and change nothing. The
// charge is settled by evidence from Stripe's API, once.
func TestStripeWebhooksAreVerifiedNoticesThatChangeNothingByThemselves(t *testing.T) {
	t.Parallel()
	r := setupStripe(t)
	// The hold's answer is lost (Stripe holds after oncecall gave up): the
	// action is unknown until the reconciler re-sends under the same keys.
	lose(t, r.sim, providersim.OnWrite)
	intent := r.intent(t, 1500)
	first := r.Post("/v1/payments", r.key, "stripe-webhooks", map[string]any{"payment_intent_id": intent})
	if first.Status != http.StatusAccepted {
		t.Fatalf("charge with the hold's answer lost: %d %s", first.Status, first.Body)
	}
	id := first.JSON(t)["action_id"].(string)
	waitFor(t, "Stripe to commit the hold", 10*time.Second, func() bool {
		l := r.sim.StripeLedger()
		return len(l) == 1 && l[0].Status == "requires_capture"
	})
	// Stripe's own webhook about the hold goes out once the hold is in its
	// ledger; wait until oncecall has recorded it, so that the snapshots
	// below compare states that only the events this test sends can change.
	waitFor(t, "Stripe's webhook about the hold", 10*time.Second, func() bool {
		return r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice'", id) >= 1
	})
	pi := onlyPaymentIntent(t, r.sim)
	snapshot := func() string {
		var s string
		err := r.Store.Pool().QueryRow(context.Background(), `SELECT a.state || '/' || coalesce(a.outcome, '') || '/' || st.state || '/' || st.version
			|| '/' || (SELECT count(*) FROM action_events e WHERE e.action_id = a.id)
			FROM actions a JOIN action_steps st ON st.action_id = a.id WHERE a.id = $1`, id).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	send := func(body []byte, sig string) (int, map[string]any) {
		t.Helper()
		resp := r.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", body, "Stripe-Signature", sig, "Content-Type", "application/json")
		return resp.Status, resp.JSON(t)
	}
	obj := map[string]any{"id": pi.ID, "object": "payment_intent", "status": "succeeded", "metadata": pi.Metadata}

	before := snapshot()
	body, _ := signedEvent(t, stripeWebhookSecret, "evt_forged", "payment_intent.succeeded", obj)
	_, forged := signedEvent(t, "whsec_someone_else", "evt_forged", "payment_intent.succeeded", obj)
	if status, _ := send(body, forged); status != http.StatusUnauthorized {
		t.Fatalf("forged signature answered %d, want 401", status)
	}
	if status, _ := send(body, ""); status != http.StatusUnauthorized {
		t.Fatalf("missing signature answered %d, want 401", status)
	}
	if after := snapshot(); after != before {
		t.Fatalf("a forged webhook changed the action: %s -> %s", before, after)
	}

	unknown := map[string]any{"id": "pi_unknown", "object": "payment_intent", "status": "succeeded",
		"metadata": map[string]string{stripeprovider.MetaAction: uuid.NewString(), stripeprovider.MetaStep: "payments"}}
	for _, o := range []map[string]any{unknown, {"id": "pi_not_ours", "object": "payment_intent", "status": "succeeded"}} {
		b, sig := signedEvent(t, stripeWebhookSecret, "evt_unknown", "payment_intent.succeeded", o)
		if status, got := send(b, sig); status != http.StatusOK || got["matched"] != false {
			t.Fatalf("event about an unknown object: %d %v, want 200 unmatched", status, got)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("an event about another object changed the action: %s -> %s", before, after)
	}

	// The real notice, twice (Stripe delivers at least once). The
	// simulator's own webhook about the hold came in above.
	notices := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice'", id)
	b, sig := signedEvent(t, stripeWebhookSecret, "evt_real", "payment_intent.amount_capturable_updated", obj)
	for range 2 {
		if status, got := send(b, sig); status != http.StatusOK || got["received"] != true {
			t.Fatalf("verified webhook: %d %v", status, got)
		}
	}
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'provider_notice'", id); n != notices+2 {
		t.Fatalf("%d provider notices in the timeline, want %d", n, notices+2)
	}
	if a := r.action(t, id); a["outcome"] != "pending" {
		t.Fatalf("a webhook settled the action by itself: %v", a)
	}
	r.untilConfirmed(t, id, 20*time.Second)
	if pi := onlyPaymentIntent(t, r.sim); pi.Captures != 1 {
		t.Fatalf("PaymentIntent captured %d times, want once", pi.Captures)
	}
	// A notice about a settled step changes nothing.
	if status, got := send(b, sig); status != http.StatusOK || got["matched"] != false {
		t.Fatalf("a notice after the outcome: %d %v", status, got)
	}
}

// oncecall serve, a real process, is killed (SIGKILL) while Stripe
// captures the hold its approval made, before it records any answer; a new
// process's reconciler finishes the charge under the same keys: one
// capture.
func TestStripeKilledWorkerCapturesOnceAfterRestart(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bin := buildOncecall(t)
	env := []string{
		"DATABASE_URL=" + url, "ONCECALL_PROVIDER_PAYMENTS=stripe", "ONCECALL_PROVIDER_PAYMENTS_URL=" + sim.URL,
		"STRIPE_SECRET_KEY=sk_test_sim", "ONCECALL_LEASE=1s", "ONCECALL_RECONCILE_INTERVAL=100ms",
		"ONCECALL_RATE_LIMIT=0", "ONCECALL_PRUNE_INTERVAL=0",
	}
	first := startOncecall(t, bin, append(env, "ONCECALL_NO_RECONCILE=true")...)
	key := tenantKey(t, pool)
	customer := post(t, first.url, key, "kill-customer", "/v1/customers", `{"name":"Killed Worker"}`)["result"].(map[string]any)["id"]
	intent := post(t, first.url, key, "kill-intent", "/v1/payment-intents",
		fmt.Sprintf(`{"customer_id":%q,"amount":3300,"currency":"USD"}`, customer))["result"].(map[string]any)["id"]
	// The approval held the amount. The capture takes its time: oncecall
	// is killed while it is in flight, and Stripe commits it after
	// oncecall is gone.
	if _, err := sim.Admin.AddFault(t.Context(), providersim.Rule{Capability: provider.Payments, Fault: "delay=2s", Count: 1, On: providersim.OnCapture}); err != nil {
		t.Fatal(err)
	}
	go func() {
		req, _ := http.NewRequest(http.MethodPost, first.url+"/v1/payments", strings.NewReader(fmt.Sprintf(`{"payment_intent_id":%q}`, intent)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "kill-charge")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // the process is killed first
		}
	}()
	waitFor(t, "the capture to reach Stripe", 20*time.Second, func() bool { return inFlight(t, sim.URL) > 0 })
	first.kill()
	waitFor(t, "Stripe to commit the capture", 20*time.Second, func() bool {
		l := sim.StripeLedger()
		return len(l) == 1 && l[0].Status == "succeeded"
	})
	var state string
	if err := pool.QueryRow(context.Background(), "SELECT state FROM actions WHERE idempotency_key = 'kill-charge'").Scan(&state); err != nil || state != "running" {
		t.Fatalf("after the kill the action is %q (%v), want running", state, err)
	}
	startOncecall(t, bin, env...)
	waitFor(t, "the reconciler to confirm the charge", 30*time.Second, func() bool {
		var outcome *string
		err := pool.QueryRow(context.Background(), "SELECT outcome FROM actions WHERE idempotency_key = 'kill-charge'").Scan(&outcome)
		return err == nil && outcome != nil && *outcome == "confirmed"
	})
	pi := onlyPaymentIntent(t, sim)
	if pi.Captures != 1 || pi.AmountReceived != 3300 {
		t.Fatalf("PaymentIntent %+v, want captured once for 3300", pi)
	}
	var ref string
	if err := pool.QueryRow(context.Background(), "SELECT provider_ref FROM payments WHERE status = 'succeeded'").Scan(&ref); err != nil || ref != pi.ID {
		t.Fatalf("local payment carries %q (%v), want %s", ref, err, pi.ID)
	}
}

// tenantKey creates a tenant and returns its API key.
func tenantKey(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	_, key, err := db.New(pool).CreateTenant(t.Context(), "stripe-crash", "")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// post sends a REST write to a running oncecall and decodes its answer.
func post(t *testing.T, base, apiKey, idemKey, path, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %v %v", path, resp.StatusCode, out, err)
	}
	return out
}
