package reconcile_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// With the calendar local and messaging remote, a booking's notify
// confirmation goes through the messaging provider, as a follow-up step of
// the booking's action, with the name and when variables and the
// appointment as its subject; not into the local outbox, which nothing
// sends. The booking is answered at once; the step is sent once, however
// many passes and retries follow.
func TestLocalBookingConfirmsThroughRemoteMessaging(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Messaging)
	c, err := r.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: r.tenant, Name: "Ana Lima", Phone: "+14155550123"})
	if err != nil {
		t.Fatal(err)
	}
	slot := r.Slot(r.tenant, 1)
	body := map[string]any{"customer_id": c.ID, "slot_id": slot, "notify": "sms"}
	booked := r.Post("/v1/appointments", r.key, "book-notify", body)
	if booked.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", booked.Status, booked.Body)
	}
	result := booked.JSON(t)["result"].(map[string]any)
	appointment := result["id"].(string)
	if result["confirmation"] != "queued" {
		t.Fatalf("confirmation of the booking: %v", result)
	}

	waitFor(t, "the confirmation in the messaging provider's ledger", 10*time.Second, func() bool {
		r.pass(t)
		return len(r.sim.Ledger(provider.Messaging)) > 0
	})
	r.pass(t)
	if again := r.Post("/v1/appointments", r.key, "book-notify", body); again.Status != http.StatusCreated || !again.Replayed() {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	r.pass(t)
	ledger := r.sim.Ledger(provider.Messaging)
	if len(ledger) != 1 || ledger[0].Requests != 1 {
		t.Fatalf("messaging ledger: %+v, want one write sent once", ledger)
	}
	var sent struct {
		CustomerID string            `json:"customer_id"`
		Channel    string            `json:"channel"`
		Template   string            `json:"template"`
		Variables  map[string]string `json:"variables"`
		SubjectID  string            `json:"subject_id"`
		Body       string            `json:"body"`
	}
	if err := json.Unmarshal(ledger[0].Payload, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.CustomerID != c.ID.String() || sent.Channel != "sms" || sent.Template != "appointment_confirmation" ||
		sent.Variables["name"] != "Ana Lima" || sent.Variables["when"] == "" || sent.SubjectID != appointment || sent.Body == "" {
		t.Fatalf("confirmation sent: %s", ledger[0].Payload)
	}
	if n := r.Count("SELECT count(*) FROM messages WHERE tenant_id = $1", r.tenant); n != 0 {
		t.Fatalf("%d messages left in the local outbox, which nothing sends", n)
	}
	if n := r.Count("SELECT count(*) FROM appointments WHERE id = $1 AND status = 'active'", appointment); n != 1 {
		t.Fatal("the booking does not stand")
	}
}
