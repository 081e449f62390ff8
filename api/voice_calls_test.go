package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// A voice call is its platform and the platform's id of it: two fields.

// TestCallIDsOfTwoPlatformsAreTwoCalls: a Dasha call whose callId is
// "vapi:X" is not the Vapi call X: its note is a note of its own, and the
// Vapi call's confirmed note keeps its text. Each action records its
// platform and the call id as the platform sent it.
func TestCallIDsOfTwoPlatformsAreTwoCalls(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	note := func(text string) map[string]any { return map[string]any{"customer_id": d.customer, "text": text} }
	_, viaVapi := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", map[string]any{"message": map[string]any{
		"type": "tool-calls", "call": map[string]any{"id": "X"},
		"toolCallList": []any{map[string]any{"id": "t1", "name": "add_customer_note", "arguments": note("ORIGINAL")}},
	}}))
	if viaVapi[0].Outcome != "confirmed" {
		t.Fatalf("Vapi note: %+v", viaVapi[0])
	}
	viaDasha := decodeAnswer(t, d.call("add_customer_note", "vapi:X", note("OVERWRITTEN")))
	if viaDasha.Outcome != "confirmed" || viaDasha.ActionID == viaVapi[0].ActionID {
		t.Fatalf("Dasha note: %+v", viaDasha)
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1 AND text = 'ORIGINAL'", d.customer); n != 1 {
		t.Errorf("the Vapi call's confirmed note lost its text: %d notes say ORIGINAL", n)
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", d.customer); n != 2 {
		t.Errorf("notes = %d, want 2 (one per call)", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE id = $1 AND call_platform = 'vapi' AND call_id = 'X'", viaVapi[0].ActionID); n != 1 {
		t.Errorf("the Vapi action does not record platform vapi and call X")
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE id = $1 AND call_platform = 'dasha' AND call_id = 'vapi:X'", viaDasha.ActionID); n != 1 {
		t.Errorf("the Dasha action does not record platform dasha and call vapi:X")
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1 AND call_platform = 'vapi' AND call_id = 'X'", d.customer); n != 1 {
		t.Errorf("the Vapi call's note does not record its platform")
	}
}

// TestLongCallIDsOnEveryPlatform: a call id of the documented 200
// characters books on every platform, and the action records it whole
// with its platform.
func TestLongCallIDsOnEveryPlatform(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	long := func(p string) string { return (p + "-" + strings.Repeat("c", 200))[:200] }
	answers := map[string]answer{}
	for i, p := range voicePlatforms {
		fill := d.bookFill(long(p.name), d.Customer(d.tenant), d.Slot(d.tenant, i+1))
		r := d.Post(p.path, d.key, "", voicePayload(t, p.sample, fill))
		if r.Status != http.StatusOK {
			t.Errorf("%s with a 200-character call id: %d %s", p.name, r.Status, r.Body)
			continue
		}
		answers[p.name] = p.answer(t, r)
	}
	dasha := d.call("book_appointment", long("dasha"), d.bookArgsFor(d.Customer(d.tenant), d.Slot(d.tenant, 9)))
	answers["dasha"] = decodeAnswer(t, dasha)
	for _, name := range []string{"dasha", "vapi", "retell", "elevenlabs"} {
		if a, ok := answers[name]; ok && a.Outcome != "confirmed" {
			t.Errorf("%s with a 200-character call id: %s %s", name, a.Outcome, a.Say)
		}
	}
	for _, name := range []string{"dasha", "vapi", "retell", "elevenlabs"} {
		a, ok := answers[name]
		if !ok || a.Outcome != "confirmed" {
			continue
		}
		if n := d.Count("SELECT count(*) FROM actions WHERE id = $1 AND call_platform = $2 AND call_id = $3", a.ActionID, name, long(name)); n != 1 {
			t.Errorf("%s: the action does not record its platform and its whole call id", name)
		}
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 4 {
		t.Errorf("appointments = %d, want one per platform", n)
	}
}

// bookArgsFor is a booking of slot for customer.
func (d dashaEnv) bookArgsFor(customer, slot uuid.UUID) map[string]any {
	return map[string]any{"customer_id": customer, "slot_id": slot}
}
