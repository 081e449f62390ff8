package reconcile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/httpprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// intent approves amount (minor units, EUR) for a new customer of the
// tenant and returns the payment intent's id.
func (r remoteEnv) intent(t *testing.T, amount int) string {
	t.Helper()
	resp := r.Post("/v1/payment-intents", r.key, uuid.NewString(), map[string]any{
		"customer_id": r.Customer(r.tenant), "amount": amount, "currency": "EUR",
	})
	if resp.Status != http.StatusCreated {
		t.Fatalf("approve a payment: %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)["result"].(map[string]any)["id"].(string)
}

func (r remoteEnv) charge(t *testing.T, key string, body map[string]any) apptest.Response {
	t.Helper()
	return r.Post("/v1/payments", r.key, key, body)
}

func reason(t *testing.T, resp apptest.Response) string {
	t.Helper()
	if resp.Status != http.StatusUnprocessableEntity {
		t.Fatalf("want a 422 rejection, got %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)["code"].(string)
}

// A remote payments provider changes where the charge is performed, not
// what may be charged: the intent's tenant, amount and state are checked
// before anything is sent, and the local intent records the outcome.
func TestRemoteChargesAreCheckedAgainstTheApprovedIntent(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Payments)
	intent := r.intent(t, 100)

	if got := reason(t, r.charge(t, "too-much", map[string]any{"payment_intent_id": intent, "amount": 9000000})); got != "AMOUNT_EXCEEDS_INTENT" {
		t.Fatalf("charging more than approved: %s", got)
	}
	if got := reason(t, r.charge(t, "never-approved", map[string]any{"payment_intent_id": uuid.NewString()})); got != "PAYMENT_INTENT_NOT_FOUND" {
		t.Fatalf("charging an intent that was never approved: %s", got)
	}
	foreign := apptest.Response{}
	{
		other, key := r.Tenant("other")
		c := r.Customer(other.ID)
		resp := r.Post("/v1/payment-intents", key, "other-intent", map[string]any{"customer_id": c, "amount": 100, "currency": "EUR"})
		foreign = r.charge(t, "foreign", map[string]any{"payment_intent_id": resp.JSON(t)["result"].(map[string]any)["id"]})
	}
	if got := reason(t, foreign); got != "PAYMENT_INTENT_NOT_FOUND" {
		t.Fatalf("charging another tenant's intent: %s", got)
	}
	if l := r.sim.Ledger(provider.Payments); len(l) != 0 {
		t.Fatalf("the provider was sent %d charges that were never allowed", len(l))
	}

	ok := r.charge(t, "charge-1", map[string]any{"payment_intent_id": intent})
	if ok.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", ok.Status, ok.Body)
	}
	ledger := r.sim.Ledger(provider.Payments)
	if len(ledger) != 1 {
		t.Fatalf("ledger holds %d charges, want 1", len(ledger))
	}
	var sent struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	if err := json.Unmarshal(ledger[0].Payload, &sent); err != nil || sent.Amount != 100 || sent.Currency != "EUR" {
		t.Fatalf("the provider was asked to charge %s (%v), want 100 EUR", ledger[0].Payload, err)
	}
	if n := r.Count(`SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured' AND captured_amount = 100`, intent); n != 1 {
		t.Fatalf("the local intent does not record the capture")
	}
	if n := r.Count(`SELECT count(*) FROM payments WHERE intent_id = $1 AND status = 'succeeded' AND provider_ref = $2`, intent, ledger[0].ID); n != 1 {
		t.Fatalf("no local payment row with the provider's reference")
	}
	if got := reason(t, r.charge(t, "charge-2", map[string]any{"payment_intent_id": intent})); got != "INTENT_ALREADY_CAPTURED" {
		t.Fatalf("a second charge of a captured intent: %s", got)
	}
	if l := r.sim.Ledger(provider.Payments); len(l) != 1 {
		t.Fatalf("ledger holds %d charges of one intent, want 1", len(l))
	}
}

// While a charge's outcome is unknown, a charge of the same intent under
// another key is refused, and stays refused after the provider's key
// retention: the retention protects one action's re-sends, never a second
// action.
func TestASecondChargeWaitsForTheFirstsOutcome(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = 50 * time.Millisecond
	r := setupRemote(t, providersim.Config{}, traits, provider.Payments)
	intent := r.intent(t, 700)
	r.sim.Fault(provider.Payments, "drop_response", 1)
	first := r.charge(t, "first", map[string]any{"payment_intent_id": intent, "amount": 700})
	if first.Status != http.StatusAccepted {
		t.Fatalf("first charge with its answer lost: %d %s", first.Status, first.Body)
	}
	waitUntil(t, "the provider's key retention to pass", func() bool {
		return r.Count("SELECT count(*) FROM actions WHERE now() > created_at + interval '100 ms'") >= 1
	})
	if got := reason(t, r.charge(t, "second", map[string]any{"payment_intent_id": intent, "amount": 500})); got != "INTENT_CHARGE_IN_PROGRESS" {
		t.Fatalf("a second charge while the first is unknown: %s", got)
	}
	if l := r.sim.Ledger(provider.Payments); len(l) != 1 {
		t.Fatalf("ledger holds %d charges of one intent, want 1", len(l))
	}
}

// A provider that answers that the step's key holds another write gives
// evidence no re-send can change: an operator decides, at once.
func TestAKeyHoldingAnotherWriteGoesToAnOperator(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	r.sim.Stop()
	resp := r.writeOf(t, provider.Calendar, "reused")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("booking with the provider down: %d %s", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	r.sim.Restart()
	var key, ref string
	if err := r.Store.Pool().QueryRow(context.Background(), "SELECT provider_key, external_ref FROM action_steps WHERE action_id = $1", id).Scan(&key, &ref); err != nil {
		t.Fatal(err)
	}
	c := &httpprovider.Client{BaseURL: r.sim.URL}
	if _, err := c.Write(context.Background(), provider.Calendar, key, ref, "appointment.book", map[string]string{"something": "else"}); err != nil {
		t.Fatalf("seed another write under the key: %v", err)
	}
	r.pass(t)
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state = 'unknown'", id); n != 1 {
		t.Fatalf("the action is not waiting for an operator after the provider said its key holds another write")
	}
	r.pass(t)
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 || l[0].Requests != 2 {
		t.Fatalf("ledger %+v: the step was sent again after the key conflict", l)
	}
}

// An operator cannot decide an action whose step is being sent: the caller
// would hear "rejected" while the provider performs the write.
func TestAnOperatorCannotResolveAStepInFlight(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	r.sim.Fault(provider.Calendar, "delay=1500ms", 1)
	done := make(chan apptest.Response, 1)
	go func() { done <- r.writeOf(t, provider.Calendar, "in-flight") }()
	var id string
	waitUntil(t, "the step to be sent", func() bool {
		return r.Store.Pool().QueryRow(context.Background(),
			"SELECT action_id::text FROM action_steps WHERE last_sent_at IS NOT NULL").Scan(&id) == nil
	})
	res := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", map[string]any{"outcome": "rejected", "note": "looked stuck", "by": "ana"})
	if res.Status != http.StatusConflict {
		t.Fatalf("resolving an action whose step is in flight: %d %s, want 409", res.Status, res.Body)
	}
	book := <-done
	if book.Status != http.StatusCreated || book.JSON(t)["outcome"] != "confirmed" {
		t.Fatalf("booking: %d %s", book.Status, book.Body)
	}
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("ledger holds %d bookings, want 1", len(l))
	}
}

// A follow-up that runs out of evidence after its action completed is an
// operator's to decide, like a required step: flagged, listed, resolvable.
func TestAStuckFollowUpIsFlaggedForAnOperator(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = time.Millisecond
	r := setupRemoteWith(t, providersim.Config{KeyRetention: time.Millisecond}, traits, func(c *app.Config) {}, provider.Calendar, provider.Messaging)
	r.sim.Fault(provider.Messaging, "drop_response", 1)
	book := r.Post("/v1/appointments", r.key, "book-notify", map[string]any{
		"customer_id": r.Customer(r.tenant), "slot_id": r.Slot(r.tenant, 1), "notify": "sms",
	})
	if book.Status != http.StatusCreated {
		t.Fatalf("booking: %d %s", book.Status, book.Body)
	}
	id := book.JSON(t)["action_id"].(string)
	waitUntil(t, "the message step to need an operator", func() bool {
		r.pass(t)
		return r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id) == 1
	})
	if got := r.action(t, id)["outcome"]; got != "confirmed" {
		t.Fatalf("the booking's outcome changed to %v", got)
	}
	if l := r.sim.Ledger(provider.Messaging); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("messaging ledger %+v: the message was sent again past the key's retention", l)
	}
	ref := r.sim.Ledger(provider.Messaging)[0].ID
	res := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", map[string]any{
		"outcome": "confirmed", "provider_ref": ref, "note": "the SMS is in the provider's log", "by": "ana",
	})
	if res.Status != http.StatusOK || res.JSON(t)["outcome"] != "confirmed" {
		t.Fatalf("resolve the follow-up: %d %s", res.Status, res.Body)
	}
	if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state = 'succeeded'", id); n != 2 {
		t.Fatalf("succeeded steps = %d, want 2", n)
	}
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id); n != 0 {
		t.Fatalf("still flagged after the operator resolved the follow-up")
	}
}
