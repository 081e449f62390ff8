package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/provider"
)

// effect is a count the database must show after an operation ran once.
type effect struct {
	query string
	args  []any
	want  int
}

// TestEveryOperationRunsOnce holds each payment, message and customer
// operation to the contract: the first request executes, an identical retry
// replays byte-identical with Idempotent-Replayed, a changed effect-bearing
// field under the same key is 422 IDEMPOTENCY_KEY_REUSED, and the effect is
// in the database exactly once.
func TestEveryOperationRunsOnce(t *testing.T) {
	t.Parallel()
	e, sim := setupPayments(t)
	ana := e.customer("+442079460001", "ana@example.com")
	bob := e.customer("+442079460002", "")
	cleo := e.customer("", "")
	dan := e.customer("", "")
	intent := e.intent(2000, "")
	place := resultOf(t, e.send("POST", "/v1/locations", "place-for-practitioners", map[string]any{"name": "Riverside", "timezone": "Europe/Paris"}))["id"]

	cases := []struct {
		operation     string
		method, path  string
		body, changed map[string]any
		status        int
		effects       []effect
	}{{
		operation: "payment_intent.create", method: "POST", path: "/v1/payment-intents",
		body:    map[string]any{"customer_id": ana, "amount": 1050, "currency": "eur", "description": "Cleaning"},
		changed: map[string]any{"customer_id": ana, "amount": 1051, "currency": "eur", "description": "Cleaning"},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM payment_intents WHERE customer_id = $1 AND amount = 1050 AND currency = 'EUR'", []any{ana}, 1}},
	}, {
		operation: "payment.charge", method: "POST", path: "/v1/payments",
		body:    map[string]any{"payment_intent_id": intent},
		changed: map[string]any{"payment_intent_id": intent, "amount": 1500},
		status:  http.StatusCreated,
		effects: []effect{
			{"SELECT count(*) FROM payments WHERE intent_id = $1 AND provider_ref IS NOT NULL", []any{intent}, 1},
			{"SELECT count(*) FROM payment_intents WHERE id = $1 AND status = 'captured' AND captured_amount = 2000", []any{intent}, 1},
		},
	}, {
		operation: "message.send", method: "POST", path: "/v1/messages",
		body:    map[string]any{"customer_id": bob, "channel": "sms", "template": "generic", "variables": map[string]string{"body": "See you soon"}},
		changed: map[string]any{"customer_id": bob, "channel": "sms", "template": "generic", "variables": map[string]string{"body": "See you later"}},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM messages WHERE customer_id = $1 AND recipient = '+442079460002' AND body = 'See you soon' AND status = 'queued'", []any{bob}, 1}},
	}, {
		operation: "customer.create", method: "POST", path: "/v1/customers",
		body:    map[string]any{"name": "Eve Moreau", "phone": "+33 6 12 34 56 78"},
		changed: map[string]any{"name": "Eve Moreau-Blanc", "phone": "+33 6 12 34 56 78"},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM customers WHERE phone = '+33612345678' AND name = 'Eve Moreau'", nil, 1}},
	}, {
		operation: "customer.update", method: "PATCH", path: "/v1/customers/" + cleo.String(),
		body:    map[string]any{"email": "Cleo@Example.com"},
		changed: map[string]any{"email": "cleo@example.org"},
		status:  http.StatusOK,
		effects: []effect{{"SELECT count(*) FROM customers WHERE id = $1 AND email = 'cleo@example.com'", []any{cleo}, 1}},
	}, {
		operation: "customer.note.append", method: "POST", path: "/v1/customers/" + cleo.String() + "/notes",
		body:    map[string]any{"text": "Prefers morning appointments."},
		changed: map[string]any{"text": "Prefers evening appointments."},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM customer_notes WHERE customer_id = $1", []any{cleo}, 1}},
	}, {
		operation: "customer.points.add", method: "POST", path: "/v1/customers/" + dan.String() + "/points",
		body:    map[string]any{"delta": 25, "reason": "visit 2030-01-02"},
		changed: map[string]any{"delta": 26, "reason": "visit 2030-01-02"},
		status:  http.StatusCreated,
		effects: []effect{
			{"SELECT count(*) FROM points_ledger WHERE customer_id = $1", []any{dan}, 1},
			{"SELECT count(*) FROM customers WHERE id = $1 AND points = 25", []any{dan}, 1},
		},
	}, {
		operation: "location.create", method: "POST", path: "/v1/locations",
		body:    map[string]any{"name": "Harbour", "timezone": "Europe/Lisbon"},
		changed: map[string]any{"name": "Harbour", "timezone": "Europe/Madrid"},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM locations WHERE name = 'Harbour' AND timezone = 'Europe/Lisbon'", nil, 1}},
	}, {
		operation: "service.create", method: "POST", path: "/v1/services",
		body:    map[string]any{"name": "Fitting", "duration_minutes": 20, "price_amount": 2500, "currency": "eur"},
		changed: map[string]any{"name": "Fitting", "duration_minutes": 25, "price_amount": 2500, "currency": "eur"},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM services WHERE name = 'Fitting' AND duration_minutes = 20 AND currency = 'eur'", nil, 1}},
	}, {
		operation: "practitioner.create", method: "POST", path: "/v1/practitioners",
		body:    map[string]any{"name": "Dr. Moreau", "location_ids": []any{place}},
		changed: map[string]any{"name": "Dr. Moreau", "location_ids": []any{place}, "service_ids": []string{uuid.NewString()}},
		status:  http.StatusCreated,
		effects: []effect{{"SELECT count(*) FROM practitioner_locations pl JOIN practitioners p ON p.id = pl.practitioner_id WHERE p.name = 'Dr. Moreau' AND pl.location_id = $1", []any{place}, 1}},
	}}
	for _, c := range cases {
		t.Run(c.operation, func(t *testing.T) {
			e := e
			e.t = t
			key := "k-" + c.operation
			first := e.send(c.method, c.path, key, c.body)
			if first.Status != c.status || first.Replayed() || first.JSON(t)["operation"] != c.operation {
				t.Fatalf("first: %d replayed=%v %s", first.Status, first.Replayed(), first.Body)
			}
			again := e.send(c.method, c.path, key, c.body)
			if again.Status != c.status || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
				t.Fatalf("retry: %d replayed=%v\n%s\nfirst:\n%s", again.Status, again.Replayed(), again.Body, first.Body)
			}
			changed := e.send(c.method, c.path, key, c.changed)
			if changed.Status != http.StatusUnprocessableEntity || changed.JSON(t)["code"] != "IDEMPOTENCY_KEY_REUSED" {
				t.Fatalf("changed field: %d %s", changed.Status, changed.Body)
			}
			for _, ch := range c.effects {
				if got := e.Count(ch.query, ch.args...); got != ch.want {
					t.Errorf("%s = %d, want %d", ch.query, got, ch.want)
				}
			}
			if got := e.Count("SELECT count(*) FROM actions WHERE idempotency_key = $1", key); got != 1 {
				t.Errorf("actions for the key = %d, want 1", got)
			}
			// The envelope is also readable by action id.
			env := e.Get("/v1/actions/"+first.JSON(t)["action_id"].(string), e.key).JSON(t)
			if env["outcome"] != "confirmed" || env["operation"] != c.operation {
				t.Errorf("action envelope: %v", env)
			}
		})
	}
	if l := sim.Ledger(provider.Payments); len(l) != 1 || l[0].Requests != 1 {
		t.Errorf("the payments provider holds %+v, want one charge sent once", l)
	}
	// Logs carry ids, never customer data.
	logs := e.Logs.String()
	for _, secret := range []string{"+442079460001", "+442079460002", "ana@example.com", "cleo@example.com", "Eve Moreau", "+33612345678", "See you soon", "Prefers morning", "visit 2030-01-02", "Cleaning"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain customer data %q", secret)
		}
	}
	if !strings.Contains(logs, `"operation":"customer.points.add"`) {
		t.Errorf("logs do not show the requests at all")
	}
}

// TestEquivalentSpellingsAreOneRequest: phone, e-mail and currency written
// differently by a rephrasing agent are the same effect-bearing input.
func TestEquivalentSpellingsAreOneRequest(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	// The second spellings (" USD", "EMAIL") are outside openapi.yaml's
	// enums and lengths on purpose: the server normalises them.
	e.Contract.AllowUndocumentedInput()
	ana := e.customer("", "")
	pairs := []struct {
		path string
		a, b any
	}{
		{"/v1/customers", map[string]any{"name": "Ana", "phone": "+44 20 7946 0958"}, map[string]any{"name": " Ana ", "phone": "0044 (20) 7946-0958"}},
		{"/v1/payment-intents", map[string]any{"customer_id": ana, "amount": 1000, "currency": "usd"},
			`{"payment_method":"pm_card_ok", "currency":" USD", "amount":1.0e3, "customer_id":"` + strings.ToUpper(ana.String()) + `"}`},
		{"/v1/messages", map[string]any{"to": "Ana@Example.com", "channel": "email", "template": "generic", "variables": map[string]string{"body": "Hi"}},
			map[string]any{"to": "ana@example.com", "channel": "EMAIL", "template": "generic", "variables": map[string]string{"body": "Hi ", "subject": " "}}},
	}
	for i, p := range pairs {
		key := "spell-" + p.path
		first := e.Post(p.path, e.key, key, p.a)
		second := e.Post(p.path, e.key, key, p.b)
		if first.Status != http.StatusCreated || second.Status != http.StatusCreated || !second.Replayed() || !bytes.Equal(first.Body, second.Body) {
			t.Errorf("pair %d: first %d, second %d replayed=%v %s", i, first.Status, second.Status, second.Replayed(), second.Body)
		}
	}
}
