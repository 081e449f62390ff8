package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// An action_id names an action of the tenant, or nothing.

// TestMadeUpActionIDIsNotShared: an action_id that names no action of the
// tenant (a word the model made up, or a UUID of nothing) is refused as an
// invalid argument: it claims nothing and is never the key of another
// caller's action, REST or voice, whose details it would otherwise hear.
func TestMadeUpActionIDIsNotShared(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	restCustomer := d.Customer(d.tenant)
	const restKey = "0b9a6f3e-2c1d-4e5f-8a7b-6c5d4e3f2a1b" // a REST client's UUID key
	for _, key := range []string{"none", restKey} {
		slot := d.Slot(d.tenant, 10+len(key))
		r := d.Post("/v1/appointments", d.key, key, map[string]any{"customer_id": restCustomer, "slot_id": slot})
		if r.Status != http.StatusCreated {
			t.Fatalf("REST booking under %q: %d %s", key, r.Status, r.Body)
		}
	}
	actions := d.Count("SELECT count(*) FROM actions")
	for i, made := range []string{"none", restKey, uuid.NewString()} {
		caller := d.Customer(d.tenant)
		slot := d.Slot(d.tenant, 40+i)
		args := map[string]any{"customer_id": caller, "slot_id": slot, "action_id": made}
		for _, call := range []string{"call-a", "call-b"} {
			r := d.call("book_appointment", call, args)
			a := decodeAnswer(t, r)
			if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || !strings.Contains(string(a.Details), "action_id") {
				t.Errorf("action_id %q in %s: %s, want invalid_arguments naming action_id", made, call, r.Body)
			}
			if strings.Contains(string(r.Body), restCustomer.String()) {
				t.Errorf("action_id %q in %s was answered with the REST caller's booking: %s", made, call, r.Body)
			}
		}
		if n := d.Count("SELECT count(*) FROM appointments WHERE customer_id = $1", caller); n != 0 {
			t.Errorf("action_id %q booked %d appointments", made, n)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != actions {
		t.Fatalf("made-up action ids claimed %d actions", n-actions)
	}
	// Without it, the same booking is made.
	caller := d.Customer(d.tenant)
	if a := decodeAnswer(t, d.call("book_appointment", "call-a", d.bookArgsFor(caller, d.Slot(d.tenant, 50)))); a.Outcome != "confirmed" {
		t.Fatalf("the booking without action_id: %+v", a)
	}
}
