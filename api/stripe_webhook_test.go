package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The Stripe webhook route exists only with a signing secret, refuses a
// body its signature does not verify (401) and acknowledges verified
// events about objects oncecall does not know without changing anything.
func TestStripeWebhookVerifiesTheSignatureAndChangesNothingForUnknownObjects(t *testing.T) {
	t.Parallel()
	const secret = "whsec_api_test"
	e := apptest.Start(t, func(c *app.Config) { c.StripeWebhookSecret = secret })
	event := func(typ string, obj map[string]any) []byte {
		o, _ := json.Marshal(obj)
		b, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": typ, "api_version": stripe.APIVersion,
			"created": time.Now().Unix(), "data": map[string]any{"object": json.RawMessage(o)}})
		return b
	}
	sign := func(body []byte, secret string) string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()}).Header
	}
	post := func(body []byte, sig string) apptest.Response {
		return e.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", body, "Stripe-Signature", sig, "Content-Type", "application/json")
	}
	unknown := event("payment_intent.succeeded", map[string]any{"id": "pi_1", "object": "payment_intent", "status": "succeeded",
		"metadata": map[string]string{"oncecall_action": uuid.NewString(), "oncecall_step": "payments"}})

	for name, sig := range map[string]string{"forged": sign(unknown, "whsec_other"), "missing": "", "garbage": "t=1,v1=00"} {
		if r := post(unknown, sig); r.Status != http.StatusUnauthorized || r.JSON(t)["code"] != "UNAUTHORIZED" {
			t.Errorf("%s signature: %d %s, want 401 UNAUTHORIZED", name, r.Status, r.Body)
		}
	}
	stale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: unknown, Secret: secret, Timestamp: time.Now().Add(-time.Hour)}).Header
	if r := post(unknown, stale); r.Status != http.StatusUnauthorized {
		t.Errorf("an hour-old signature: %d, want 401", r.Status)
	}
	for _, body := range [][]byte{unknown, event("customer.created", map[string]any{"id": "cus_1", "object": "customer"}),
		event("payment_intent.succeeded", map[string]any{"id": "pi_2", "object": "payment_intent"})} {
		r := post(body, sign(body, secret))
		if got := r.JSON(t); r.Status != http.StatusOK || got["received"] != true || got["matched"] != false {
			t.Errorf("verified event about an unknown object: %d %s, want 200 unmatched", r.Status, r.Body)
		}
	}
	if n := e.Count("SELECT count(*) FROM action_events"); n != 0 {
		t.Fatalf("webhooks wrote %d timeline events, want none", n)
	}
	off := apptest.Start(t)
	if r := off.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", unknown, "Stripe-Signature", sign(unknown, secret)); r.Status != http.StatusNotFound && r.Status != http.StatusUnauthorized {
		t.Fatalf("without a secret the route answered %d", r.Status)
	}
}

// A signature whose timestamp lies in the future beyond a minute's clock
// skew is refused like a stale one: stripe-go checks only a signature's age.
func TestStripeWebhookRefusesATimestampFromTheFuture(t *testing.T) {
	t.Parallel()
	const secret = "whsec_api_future"
	e := apptest.Start(t, func(c *app.Config) { c.StripeWebhookSecret = secret })
	body, _ := json.Marshal(map[string]any{"id": "evt_future", "object": "event", "type": "customer.created", "api_version": stripe.APIVersion,
		"created": time.Now().Unix(), "data": map[string]any{"object": map[string]any{"id": "cus_1", "object": "customer"}}})
	for ahead, want := range map[time.Duration]int{
		10 * time.Minute: http.StatusUnauthorized, 2 * time.Minute: http.StatusUnauthorized,
		20 * time.Second: http.StatusOK, 0: http.StatusOK,
	} {
		sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now().Add(ahead)}).Header
		r := e.Request(http.MethodPost, "/v1/providers/stripe/webhook", "", body, "Stripe-Signature", sig)
		if r.Status != want {
			t.Errorf("signed %v ahead: %d %s, want %d", ahead, r.Status, r.Body, want)
		}
	}
}
