package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/stripeprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// A payment link sent by a voice agent (send_payment_link) through Stripe,
// with the SMS sent through the messaging provider: the answer is pending
// and says the payment is NOT confirmed; check_action_status says pending
// until the customer pays, then confirmed with the amount. REST answers 202
// for a new link and 201 once it is paid.
func TestStripePaymentLinkByToolIsPendingUntilPaid(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	p, err := stripeprovider.New(stripeprovider.Config{SecretKey: "sk_test_sim", BaseURL: sim.URL, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "whsec_links"
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: p, provider.Holds: p, provider.Links: p, provider.Messaging: simProvider(sim)}
		c.StripeWebhookSecret = secret
		c.ReconcileDisabled = true
	})
	sim.SetStripeWebhook(d.URL+"/v1/providers/stripe/webhook", secret)
	c, err := d.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: d.tenant, Name: "Lin", Phone: "+15557654321"})
	if err != nil {
		t.Fatal(err)
	}
	approve := func(key string) string {
		r := d.Post("/v1/payment-intents", d.key, key, map[string]any{"customer_id": c.ID, "amount": 4500, "currency": "EUR", "payment_method": "payment_link"})
		if r.Status != http.StatusCreated {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["result"].(map[string]any)["id"].(string)
	}

	intent := approve("approve-tool")
	sent := decodeAnswer(t, d.call("send_payment_link", "call-link", map[string]any{"payment_intent_id": intent}))
	if sent.Outcome != "pending" || !strings.Contains(sent.Say, "NOT confirmed") || !strings.Contains(sent.Say, "text message") {
		t.Fatalf("send_payment_link answer %+v, want pending and saying it is not confirmed", sent)
	}
	sessions := sim.StripeSessions
	if len(sessions()) != 1 {
		t.Fatalf("%d Checkout Sessions, want 1", len(sessions()))
	}
	cs := sessions()[0]
	if l := sim.Ledger(provider.Messaging); len(l) != 1 || !strings.Contains(string(l[0].Payload), cs.URL) {
		t.Fatalf("the messaging provider holds %+v, want one SMS carrying the link", l)
	}
	status := func() answer {
		return decodeAnswer(t, d.call("check_action_status", "call-link", map[string]any{"action_id": sent.ActionID}))
	}
	if got := status(); got.Outcome != "pending" {
		t.Fatalf("status before payment: %+v", got)
	}
	payAndSettle(t, d, sim, cs.ID)
	got := status()
	if got.Outcome != "confirmed" || !strings.Contains(string(got.Details), `"amount_spoken":"45.00 euros"`) {
		t.Fatalf("status after payment: %+v %s", got, got.Details)
	}

	// REST: 202 while unpaid, 201 once paid (the replay of the paid link).
	rest := approve("approve-rest")
	first := d.Post("/v1/payment-links", d.key, "link-rest", map[string]any{"payment_intent_id": rest})
	if first.Status != http.StatusAccepted {
		t.Fatalf("REST link: %d %s, want 202", first.Status, first.Body)
	}
	payAndSettle(t, d, sim, sessions()[1].ID)
	if again := d.Post("/v1/payment-links", d.key, "link-rest", map[string]any{"payment_intent_id": rest}); again.Status != http.StatusCreated {
		t.Fatalf("REST link after payment: %d %s, want 201", again.Status, again.Body)
	}
	if n := d.Count("SELECT count(*) FROM payment_intents WHERE id IN ($1, $2) AND status = 'captured'", uuid.MustParse(intent), uuid.MustParse(rest)); n != 2 {
		t.Fatalf("%d intents captured, want 2", n)
	}
}

// payAndSettle pays a session at the simulated Stripe and runs reconciler
// passes until no step of the link waits.
func payAndSettle(t *testing.T, d dashaEnv, sim *simtest.Sim, session string) {
	t.Helper()
	sim.StripePay(session)
	end := time.Now().Add(20 * time.Second)
	for d.Count("SELECT count(*) FROM action_steps WHERE name = $1 AND state IN ('pending', 'unknown')", provider.Links) > 0 {
		if _, err := d.Main.Reconciler().RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(end) {
			t.Fatal("the paid link was not settled within 20s")
		}
		<-time.After(10 * time.Millisecond) // poll interval: the loop waits for the steps
	}
}

// Without Stripe, a payment link is rejected PAYMENT_LINKS_NEED_STRIPE and
// nothing is sent; an intent paid by link cannot be charged by card.
func TestPaymentLinkWithoutStripeIsRejected(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	r := d.Post("/v1/payment-intents", d.key, "approve", map[string]any{"customer_id": d.customer, "amount": 500, "currency": "EUR", "payment_method": "payment_link"})
	intent := r.JSON(t)["result"].(map[string]any)["id"].(string)
	link := d.Post("/v1/payment-links", d.key, "link", map[string]any{"payment_intent_id": intent})
	if link.Status != http.StatusUnprocessableEntity || link.JSON(t)["code"] != "PAYMENT_LINKS_NEED_STRIPE" {
		t.Fatalf("link without Stripe: %d %s", link.Status, link.Body)
	}
	charge := d.Post("/v1/payments", d.key, "charge", map[string]any{"payment_intent_id": intent})
	if charge.Status != http.StatusUnprocessableEntity || charge.JSON(t)["code"] != "INTENT_PAID_BY_LINK" {
		t.Fatalf("card charge of a link intent: %d %s", charge.Status, charge.Body)
	}
	if n := d.Count("SELECT count(*) FROM messages") + d.Count("SELECT count(*) FROM payments"); n != 0 {
		t.Fatalf("rejections left %d messages or payments", n)
	}
}

// An approved intent is withdrawn over REST: it is withdrawn in its row,
// a charge of it is rejected, and bad input changes nothing.
func TestPaymentIntentIsWithdrawn(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	r := d.Post("/v1/payment-intents", d.key, "approve", map[string]any{"customer_id": d.customer, "amount": 500, "currency": "EUR"})
	intent := r.JSON(t)["result"].(map[string]any)["id"].(string)
	if bad := d.Post("/v1/payment-intents/"+intent+"/cancel", d.key, "bad", map[string]any{"reason": "x"}); bad.Status != http.StatusBadRequest {
		t.Fatalf("withdrawal with an unknown field: %d %s", bad.Status, bad.Body)
	}
	w := d.Post("/v1/payment-intents/"+intent+"/cancel", d.key, "withdraw", nil)
	if w.Status != http.StatusOK || w.JSON(t)["result"].(map[string]any)["status"] != "withdrawn" {
		t.Fatalf("withdraw: %d %s", w.Status, w.Body)
	}
	if n := d.Count("SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'withdrawn'", uuid.MustParse(intent)); n != 1 {
		t.Fatal("the intent is not withdrawn in its row")
	}
	charged := decodeAnswer(t, d.call("charge_payment", "call-w", map[string]any{"payment_intent_id": intent}))
	if charged.Outcome != "rejected" || charged.Reason != "intent_withdrawn" {
		t.Fatalf("charge of a withdrawn intent: %+v", charged)
	}
	if got := d.Get("/v1/payment-intents/"+intent, d.key); got.JSON(t)["status"] != "withdrawn" {
		t.Fatalf("read intent: %s", got.Body)
	}
}
