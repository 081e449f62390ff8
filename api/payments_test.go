package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestOneIntentIsChargedOnce: charges of one intent under different keys,
// sent at once through the payments provider, capture it once and send one
// charge; every other charge is a stored rejection sent nowhere:
// INTENT_CHARGE_IN_PROGRESS while the first awaits the provider,
// INTENT_ALREADY_CAPTURED naming the payment once it is recorded.
func TestOneIntentIsChargedOnce(t *testing.T) {
	t.Parallel()
	e, sim := setupPayments(t)
	intent := e.intent(4200, "")
	const n = 10
	answers := make([]apptest.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = e.Post("/v1/payments", e.key, fmt.Sprintf("charge-%d", i), map[string]any{"payment_intent_id": intent})
		})
	}
	close(start)
	wg.Wait()

	confirmed, captured, inProgress := 0, []apptest.Response{}, 0
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated:
			confirmed++
		case a.Status == http.StatusUnprocessableEntity && a.JSON(t)["code"] == "INTENT_ALREADY_CAPTURED":
			captured = append(captured, a)
		case a.Status == http.StatusUnprocessableEntity && a.JSON(t)["code"] == "INTENT_CHARGE_IN_PROGRESS":
			inProgress++
		default:
			t.Errorf("unexpected answer %d %s", a.Status, a.Body)
		}
	}
	if confirmed != 1 || len(captured)+inProgress != n-1 {
		t.Fatalf("confirmed %d, already captured %d, in progress %d; want 1 and %d refusals", confirmed, len(captured), inProgress, n-1)
	}
	if l := sim.Ledger(provider.Payments); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("the provider holds %+v, want one charge sent once", l)
	}
	var paymentID string
	if err := e.Store.Pool().QueryRow(t.Context(), "SELECT id::text FROM payments WHERE intent_id = $1 AND status = 'succeeded'", intent).Scan(&paymentID); err != nil {
		t.Fatalf("the succeeded payment: %v", err)
	}
	for _, r := range captured {
		if d := detailsOf(t, r); d["payment_id"] != paymentID || d["payment_intent_id"] != intent {
			t.Errorf("rejection details %v, want the capturing payment %s", d, paymentID)
		}
	}
	if got := e.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); got != 1 {
		t.Fatalf("payment rows = %d, want 1", got)
	}
	// The answers are actions like any other: stored and replayed.
	again := e.Post("/v1/payments", e.key, "charge-0", map[string]any{"payment_intent_id": intent})
	first := answers[0]
	if again.Status != first.Status || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay of charge-0: %d %s\nfirst: %d %s", again.Status, again.Body, first.Status, first.Body)
	}
	got := e.Get("/v1/payment-intents/"+intent, e.key).JSON(t)
	if got["status"] != "captured" || got["captured_amount"] != 4200.0 || len(got["payments"].([]any)) != 1 {
		t.Fatalf("intent after charges: %v", got)
	}
}

// TestDeclinedChargeLeavesTheIntentChargeable: the provider's decline is a
// stored rejection, replayed to its key; a new key is a new attempt; the
// intent stays approved and free, and no payment is recorded.
func TestDeclinedChargeLeavesTheIntentChargeable(t *testing.T) {
	t.Parallel()
	e, _ := setupPayments(t)
	intent := e.intent(900, "pm_card_declined")
	first := e.Post("/v1/payments", e.key, "decline-1", map[string]any{"payment_intent_id": intent})
	wantRejection(t, first, "PAYMENT_DECLINED")
	if r := e.Post("/v1/payments", e.key, "decline-1", map[string]any{"payment_intent_id": intent}); !r.Replayed() || !bytes.Equal(r.Body, first.Body) {
		t.Fatalf("decline replay: %d %s", r.Status, r.Body)
	}
	// A new attempt under a new key is a new charge attempt (declined again).
	wantRejection(t, e.Post("/v1/payments", e.key, "decline-2", map[string]any{"payment_intent_id": intent}), "PAYMENT_DECLINED")
	if got := e.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); got != 0 {
		t.Fatalf("payment rows = %d, want none", got)
	}
	if got := e.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'requires_capture' AND charging_action_id IS NULL", intent); got != 1 {
		t.Fatalf("a declined charge changed the intent")
	}
}

func TestChargeAmountIsBoundedByTheIntent(t *testing.T) {
	t.Parallel()
	e, sim := setupPayments(t)
	intent := e.intent(1000, "")
	over := e.Post("/v1/payments", e.key, "over", map[string]any{"payment_intent_id": intent, "amount": 1001})
	wantRejection(t, over, "AMOUNT_EXCEEDS_INTENT")
	if d := detailsOf(t, over); d["intent_amount"] != 1000.0 || d["currency"] != "EUR" {
		t.Fatalf("details: %v", d)
	}
	if n := len(sim.Ledger(provider.Payments)); n != 0 {
		t.Fatalf("the refused charge was sent: the provider holds %d", n)
	}
	part := e.Post("/v1/payments", e.key, "part", map[string]any{"payment_intent_id": intent, "amount": 600})
	if part.Status != http.StatusCreated {
		t.Fatalf("partial charge: %d %s", part.Status, part.Body)
	}
	if got := e.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND captured_amount = 600", intent); got != 1 {
		t.Fatalf("captured amount not recorded")
	}
	if got := e.Count("SELECT count(*) FROM payments WHERE intent_id = $1 AND amount = 600 AND currency = 'EUR' AND status = 'succeeded'", intent); got != 1 {
		t.Fatalf("the partial payment is not recorded")
	}
	// A partial capture still captures the intent: the rest is not chargeable.
	wantRejection(t, e.Post("/v1/payments", e.key, "rest", map[string]any{"payment_intent_id": intent, "amount": 400}), "INTENT_ALREADY_CAPTURED")
}

func TestPaymentReferencesAreChecked(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	_, otherKey := e.Tenant("other")
	intent := e.intent(1000, "")
	// Another tenant's intent and customer are not found, and nothing is written.
	wantRejection(t, e.Post("/v1/payments", otherKey, "x1", map[string]any{"payment_intent_id": intent}), "PAYMENT_INTENT_NOT_FOUND")
	cust := e.customer("", "")
	wantRejection(t, e.Post("/v1/payment-intents", otherKey, "x2", map[string]any{"customer_id": cust, "amount": 5, "currency": "EUR"}), "CUSTOMER_NOT_FOUND")
	wantRejection(t, e.Post("/v1/payments", e.key, "x3", map[string]any{"payment_intent_id": uuid.NewString()}), "PAYMENT_INTENT_NOT_FOUND")
	if r := e.Get("/v1/payment-intents/"+intent, otherKey); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant reads the intent: %d %s", r.Status, r.Body)
	}
	if got := e.Count("SELECT count(*) FROM payments"); got != 0 {
		t.Fatalf("payments = %d", got)
	}
	if got := e.Count("SELECT count(*) FROM payment_intents WHERE customer_id = $1", cust); got != 0 {
		t.Fatalf("an intent was created for another tenant's customer")
	}
}

// TestOneSucceededPaymentIsADatabaseRule: the at-most-once charge does not
// rest on Go code alone; PostgreSQL refuses a second succeeded payment.
func TestOneSucceededPaymentIsADatabaseRule(t *testing.T) {
	t.Parallel()
	e, _ := setupPayments(t)
	intent := e.intent(1000, "")
	if r := e.Post("/v1/payments", e.key, "c1", map[string]any{"payment_intent_id": intent}); r.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", r.Status, r.Body)
	}
	_, err := e.Store.Pool().Exec(context.Background(), `INSERT INTO payments (id, tenant_id, intent_id, amount, currency, status, action_id)
		VALUES ($1, $2, $3, 1000, 'EUR', 'succeeded', $4)`, uuid.New(), e.tenant, intent, uuid.New())
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "payments_one_success_per_intent" {
		t.Fatalf("second succeeded payment: %v", err)
	}
}

// A card saved at Stripe is checked at the door (a saved card needs its
// Stripe customer, and only a saved card has one) and, on oncecall's own
// tables, which cannot charge it, rejected SAVED_CARDS_NEED_STRIPE with no
// intent recorded. The test methods keep their fingerprint: stripe_customer
// is not part of a request that leaves it out.
func TestStripeSavedCardIsCheckedAndRefusedWithoutStripe(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	customer := e.customer("", "").String()
	approve := func(key string, body map[string]any) apptest.Response {
		body["customer_id"], body["amount"], body["currency"] = customer, 500, "EUR"
		return e.Post("/v1/payment-intents", e.key, key, body)
	}
	for i, bad := range []map[string]any{
		{"payment_method": "pm_1Saved"},
		{"payment_method": "pm_card_ok", "stripe_customer": "cus_1"},
		{"payment_method": "pm_1Saved", "stripe_customer": "acct_1"},
		{"payment_method": "card 4242", "stripe_customer": "cus_1"},
	} {
		if got := approve(fmt.Sprintf("bad-%d", i), bad); got.Status != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", bad, got.Status, got.Body)
		}
	}
	got := approve("saved-local", map[string]any{"payment_method": "pm_1Saved", "stripe_customer": "cus_1"})
	if got.Status != http.StatusUnprocessableEntity || got.JSON(t)["code"] != "SAVED_CARDS_NEED_STRIPE" {
		t.Fatalf("saved card on the local provider: %d %s", got.Status, got.Body)
	}
	if n := e.Count("SELECT count(*) FROM payment_intents"); n != 0 {
		t.Fatalf("%d intents recorded", n)
	}
	if got := approve("plain", map[string]any{}); got.Status != http.StatusCreated {
		t.Fatalf("plain approval: %d %s", got.Status, got.Body)
	}
}
