package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// intent approves amount (minor units, EUR) for the environment's customer
// through the REST API and returns the payment intent's id.
func (d dashaEnv) intent(t *testing.T, amount int64) string {
	t.Helper()
	r := d.Post("/v1/payment-intents", d.key, uuid.NewString(), map[string]any{"customer_id": d.customer, "amount": amount, "currency": "EUR"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create intent: %d %s", r.Status, r.Body)
	}
	return resultOf(t, r)["id"].(string)
}

func TestDashaSendRefDecidesWhetherTheSameTextIsASecondMessage(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	c, err := d.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: d.tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(callID, sendRef string) apptest.Response {
		args := map[string]any{
			"customer_id": c.ID, "channel": "sms", "template": "generic",
			"variables": map[string]any{"body": "Your table for two is ready."},
		}
		if sendRef != "" {
			args["send_ref"] = sendRef
		}
		return d.call("send_message", callID, args)
	}
	messages := func() int {
		return d.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body = 'Your table for two is ready.'", c.ID)
	}

	// The same text twice in one call with the same send_ref (or none): one
	// message, the second answer a byte-identical replay.
	for _, ref := range []string{"", "first"} {
		r1, r2 := send("call_1", ref), send("call_1", ref)
		a1 := decodeAnswer(t, r1)
		if a1.Outcome != "confirmed" || !bytes.Equal(r1.Body, r2.Body) || r1.Replayed() || !r2.Replayed() {
			t.Fatalf("send_ref %q twice:\n%s\n%s", ref, r1.Body, r2.Body)
		}
	}
	if n := messages(); n != 2 {
		t.Fatalf("messages after two repeated sends = %d, want 2 (one without send_ref, one with first)", n)
	}

	// The same text in the same call with a new send_ref: a second message.
	again := decodeAnswer(t, send("call_1", "second"))
	if again.Outcome != "confirmed" {
		t.Fatalf("new send_ref: %+v", again)
	}
	if n := messages(); n != 3 {
		t.Fatalf("messages = %d, want 3", n)
	}
	if n := d.Count("SELECT count(DISTINCT action_id) FROM messages WHERE customer_id = $1", c.ID); n != 3 {
		t.Fatalf("messages belong to %d actions, want 3", n)
	}
	if n := d.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND send_ref = 'second'", c.ID); n != 1 {
		t.Fatalf("messages with send_ref second = %d", n)
	}

	// Another call is another conversation: the same message is sent to it.
	if a := decodeAnswer(t, send("call_2", "first")); a.Outcome != "confirmed" || a.ActionID == again.ActionID {
		t.Fatalf("another call: %+v", a)
	}
	if n := messages(); n != 4 {
		t.Fatalf("messages = %d, want 4", n)
	}
	if logs := d.Logs.String(); strings.Contains(logs, "+442079460958") || strings.Contains(logs, "table for two") {
		t.Error("the logs contain the recipient or the message text")
	}
}

func TestDashaRetriedLoyaltyPointsChangeTheBalanceOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	args := map[string]any{"customer_id": d.customer, "delta": 50, "reason": "Visit on 2 January"}
	first := d.call("add_loyalty_points", "call_1", args)
	retry := d.call("add_loyalty_points", "call_1", args)
	a := decodeAnswer(t, first)
	if a.Outcome != "confirmed" || !bytes.Equal(first.Body, retry.Body) || first.Replayed() || !retry.Replayed() {
		t.Fatalf("a retried points change:\n%s\n%s", first.Body, retry.Body)
	}
	var entry struct {
		Balance int64 `json:"balance"`
	}
	if err := json.Unmarshal(a.Details, &entry); err != nil || entry.Balance != 50 {
		t.Fatalf("details %s (%v), want balance 50", a.Details, err)
	}
	if n := d.Count("SELECT points FROM customers WHERE id = $1", d.customer); n != 50 {
		t.Fatalf("balance = %d, want 50", n)
	}
	if n := d.Count("SELECT count(*) FROM points_ledger WHERE customer_id = $1", d.customer); n != 1 {
		t.Fatalf("ledger entries = %d, want 1", n)
	}
	// A redemption in the same call is another change, retried once too.
	redeem := map[string]any{"customer_id": d.customer, "delta": -20, "reason": "Redeemed a coffee"}
	for range 2 {
		if a := decodeAnswer(t, d.call("add_loyalty_points", "call_1", redeem)); a.Outcome != "confirmed" {
			t.Fatalf("redeem: %+v", a)
		}
	}
	if n := d.Count("SELECT points FROM customers WHERE id = $1", d.customer); n != 30 {
		t.Fatalf("balance = %d, want 30", n)
	}
	if n := d.Count("SELECT count(*) FROM points_ledger WHERE customer_id = $1", d.customer); n != 2 {
		t.Fatalf("ledger entries = %d, want 2", n)
	}
}

func TestDashaRetriedChargeChargesOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t, simPayments(t))
	intent := d.intent(t, 4200)
	args := map[string]any{"payment_intent_id": intent}
	first := d.call("charge_payment", "call_1", args)
	retry := d.call("charge_payment", "call_1", args)
	a := decodeAnswer(t, first)
	if a.Outcome != "confirmed" || !bytes.Equal(first.Body, retry.Body) || first.Replayed() || !retry.Replayed() {
		t.Fatalf("a retried charge:\n%s\n%s", first.Body, retry.Body)
	}
	// The model re-planning the charge later in another call is the same
	// charge: the intent is its identity.
	if other := d.call("charge_payment", "call_2", args); !bytes.Equal(other.Body, first.Body) || !other.Replayed() {
		t.Fatalf("the same charge from another call: %s", other.Body)
	}
	if n := d.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); n != 1 {
		t.Fatalf("payments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured' AND captured_amount = 4200", intent); n != 1 {
		t.Fatal("the intent is not captured once for its amount")
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'payment.charge'"); n != 1 {
		t.Fatalf("charge actions = %d, want 1", n)
	}
}

// TestDashaChargeRetriedWhileTheFirstAttemptRunsChargesOnce is Dasha's
// retry after a timeout: it arrives while the first delivery is still
// charging.
func TestDashaChargeRetriedWhileTheFirstAttemptRunsChargesOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t, simPayments(t), func(c *app.Config) {
		c.Core.ClaimWait = 100 * time.Millisecond
		c.DashaWait = 2 * time.Second
		c.DBTimeouts.Lock = time.Minute // the first delivery waits on the held lock for the whole test
	})
	ctx := t.Context()
	intent := d.intent(t, 1500)
	// Hold the intent's row lock: the charge locks it, so the first delivery
	// stays inside its transaction with its claim uncommitted.
	lock, err := d.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	if _, err := lock.Exec(ctx, "SELECT id FROM payment_intents WHERE id = $1 FOR UPDATE", intent); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"payment_intent_id": intent}
	var wg sync.WaitGroup
	var first apptest.Response
	wg.Go(func() { first = d.call("charge_payment", "call_1", args) })
	waitForLockWaiters(t, d.Env, 1)

	retry := d.call("charge_payment", "call_1", args)
	pending := decodeAnswer(t, retry)
	if pending.Outcome != "pending" {
		t.Fatalf("retry during the first attempt: %s", retry.Body)
	}
	assertPendingWording(t, pending)
	if n := d.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); n != 0 {
		t.Fatalf("payments while the first attempt waits = %d", n)
	}

	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if a := decodeAnswer(t, first); a.Outcome != "confirmed" {
		t.Fatalf("first attempt: %s", first.Body)
	}
	// Following the pending answer's advice gets the one charge's result.
	again := d.call("charge_payment", "call_1", args)
	if !bytes.Equal(again.Body, first.Body) || !again.Replayed() {
		t.Fatalf("call after pending: %s", again.Body)
	}
	if n := d.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); n != 1 {
		t.Fatalf("payments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'payment.charge'"); n != 1 {
		t.Fatalf("charge actions = %d, want 1", n)
	}
}
