package api_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
)

func TestMessageGoesToTheOutboxRendered(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	c := e.customer("+442079460333", "dana@example.com")
	appt := uuid.NewString()
	r := e.Post("/v1/messages", e.key, "m1", map[string]any{
		"customer_id": c, "channel": "email", "template": "appointment_confirmation",
		"variables": map[string]string{"name": "Dana", "when": "Tuesday 2 March at 10:00"}, "subject_id": appt,
	})
	if r.Status != http.StatusCreated {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	m := resultOf(t, r)
	if m["recipient"] != "dana@example.com" || m["status"] != "queued" || m["subject_id"] != appt ||
		m["subject_line"] != "Your appointment is confirmed" ||
		m["body"] != "Hello Dana, your appointment on Tuesday 2 March at 10:00 is confirmed." {
		t.Fatalf("message: %v", m)
	}
	got := e.Get("/v1/messages/"+m["id"].(string), e.key)
	if got.Status != http.StatusOK || got.JSON(t)["body"] != m["body"] {
		t.Fatalf("GET message: %d %s", got.Status, got.Body)
	}
	if got := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND channel = 'email' AND template = 'appointment_confirmation'", c); got != 1 {
		t.Fatalf("outbox rows = %d", got)
	}
	sms := e.Post("/v1/messages", e.key, "m2", map[string]any{
		"customer_id": c, "channel": "sms", "template": "payment_receipt", "variables": map[string]string{"name": "Dana", "amount": "10.50 EUR"},
	})
	if sms.Status != http.StatusCreated || resultOf(t, sms)["recipient"] != "+442079460333" {
		t.Fatalf("sms: %d %s", sms.Status, sms.Body)
	}
	if _, has := resultOf(t, sms)["subject_line"]; has {
		t.Fatalf("an SMS has a subject line: %s", sms.Body)
	}
	_, otherKey := e.Tenant("other")
	if r := e.Get("/v1/messages/"+m["id"].(string), otherKey); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant reads the message: %d", r.Status)
	}
}

// TestIdenticalTextIsNotADuplicate: two intended sends of the same text are
// two messages; only the same key makes a retry.
func TestIdenticalTextIsNotADuplicate(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	body := map[string]any{"to": "+1 415 555 0101", "channel": "sms", "template": "generic", "variables": map[string]string{"body": "Your table is ready."}}
	a := e.Post("/v1/messages", e.key, "first-send", body)
	b := e.Post("/v1/messages", e.key, "second-send", body)
	retry := e.Post("/v1/messages", e.key, "first-send", body)
	if a.Status != http.StatusCreated || b.Status != http.StatusCreated || b.Replayed() || !retry.Replayed() {
		t.Fatalf("sends: %d, %d replayed=%v, retry replayed=%v", a.Status, b.Status, b.Replayed(), retry.Replayed())
	}
	if got := e.Count("SELECT count(*) FROM messages WHERE recipient = '+14155550101'"); got != 2 {
		t.Fatalf("outbox rows = %d, want 2", got)
	}
	// send_ref is part of the input: a retry must repeat it.
	withRef := map[string]any{"to": "+14155550101", "channel": "sms", "template": "generic", "variables": map[string]string{"body": "Your table is ready."}, "send_ref": "2"}
	if r := e.Post("/v1/messages", e.key, "first-send", withRef); r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("changed send_ref under the same key: %d %s", r.Status, r.Body)
	}
}

func TestMessageRecipientMustBeReachable(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	noPhone, noEmail := e.customer("", "x@example.com"), e.customer("+442079460444", "")
	vars := map[string]string{"body": "hi"}
	wantRejection(t, e.Post("/v1/messages", e.key, "r1", map[string]any{"customer_id": noPhone, "channel": "sms", "template": "generic", "variables": vars}), "CUSTOMER_HAS_NO_PHONE")
	wantRejection(t, e.Post("/v1/messages", e.key, "r2", map[string]any{"customer_id": noEmail, "channel": "email", "template": "generic", "variables": vars}), "CUSTOMER_HAS_NO_EMAIL")
	wantRejection(t, e.Post("/v1/messages", e.key, "r3", map[string]any{"customer_id": uuid.New(), "channel": "sms", "template": "generic", "variables": vars}), "CUSTOMER_NOT_FOUND")
	if got := e.Count("SELECT count(*) FROM messages"); got != 0 {
		t.Fatalf("outbox rows = %d, want 0", got)
	}
}
