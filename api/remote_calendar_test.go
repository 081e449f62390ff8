package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestNothingMadeUpIsSentToTheHTTPCalendar: with the calendar served by the
// http provider, a booking for a customer of no tenant, for another
// tenant's customer, or of a slot that does not exist is rejected and
// nothing reaches the provider; a real one is sent with the protocol's
// version 2 payload (tenant, time in UTC and at the location, practitioner,
// the customer's contact), is listed, and its slot is no longer offered nor
// booked again.
func TestNothingMadeUpIsSentToTheHTTPCalendar(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: simProvider(sim)}
		c.ReconcileDisabled = true
	})
	c := newClinicSlot(t, e, "clinic")
	other := newClinicSlot(t, e, "other")
	book := func(key string, customer, slot uuid.UUID) apptest.Response {
		t.Helper()
		return e.Post("/v1/appointments", c.key, key, map[string]any{"customer_id": customer, "slot_id": slot})
	}
	for _, tc := range []struct {
		name           string
		customer, slot uuid.UUID
		code           string
	}{
		{"a made-up customer", uuid.New(), c.slot, "CUSTOMER_NOT_FOUND"},
		{"another tenant's customer", other.customer, c.slot, "CUSTOMER_NOT_FOUND"},
		{"a made-up slot", c.customer, uuid.New(), "SLOT_NOT_FOUND"},
		{"another tenant's slot", c.customer, other.slot, "SLOT_NOT_FOUND"},
	} {
		r := book("made-up-"+strings.ReplaceAll(tc.name, " ", "-"), tc.customer, tc.slot)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), tc.code) {
			t.Errorf("%s: %d %s; want 422 %s", tc.name, r.Status, r.Body, tc.code)
		}
		if n := len(sim.Ledger(provider.Calendar)); n != 0 {
			t.Fatalf("%s: the calendar holds %d bookings, want none: nothing made-up may be sent", tc.name, n)
		}
	}

	r := book("real", c.customer, c.slot)
	if r.Status != http.StatusCreated {
		t.Fatalf("a real booking: %d %s", r.Status, r.Body)
	}
	appt := r.JSON(t)["result"].(map[string]any)["id"].(string)
	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 1 {
		t.Fatalf("the calendar holds %d bookings, want 1", len(ledger))
	}
	var sent struct {
		Version  int    `json:"version"`
		TenantID string `json:"tenant_id"`
		Start    struct {
			UTC   time.Time `json:"utc"`
			Local string    `json:"local"`
			Zone  string    `json:"zone"`
		} `json:"start"`
		Practitioner struct{ Name, CalendarID string } `json:"practitioner"`
		Customer     struct{ Name, Phone string }      `json:"customer"`
	}
	if err := json.Unmarshal(ledger[0].Payload, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Version != 2 || sent.TenantID != c.tenant.String() || !sent.Start.UTC.Equal(c.start) || sent.Start.Local != "2030-12-06T14:00:00" ||
		sent.Start.Zone != "America/New_York" || sent.Practitioner.Name != "Dr. Ortiz" || sent.Customer.Phone != "+442079460958" {
		t.Fatalf("payload sent: %s", ledger[0].Payload)
	}
	listed := e.Get("/v1/appointments?customer_id="+c.customer.String(), c.key)
	if listed.Status != http.StatusOK || !strings.Contains(string(listed.Body), appt) || !strings.Contains(string(listed.Body), "Dr. Ortiz") {
		t.Fatalf("the customer's appointments: %d %s; want the remote booking %s", listed.Status, listed.Body, appt)
	}
	if got := e.Get("/v1/appointments/"+appt, c.key); got.Status != http.StatusOK || got.JSON(t)["status"] != "active" {
		t.Fatalf("GET the appointment: %d %s", got.Status, got.Body)
	}
	if slots := e.Get("/v1/slots?available=true&from=2030-12-01", c.key); strings.Contains(string(slots.Body), c.slot.String()) {
		t.Fatalf("the booked slot is still offered: %s", slots.Body)
	}
	second, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Luis", Phone: "+442079460959"})
	if err != nil {
		t.Fatal(err)
	}
	if r := book("again", second.ID, c.slot); r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "SLOT_UNAVAILABLE") {
		t.Fatalf("a second booking of the slot: %d %s; want 422 SLOT_UNAVAILABLE", r.Status, r.Body)
	}
	if n := len(sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("the calendar holds %d bookings, want 1", n)
	}
}

// TestABookingTheCalendarConfirmsLaterIsPendingUntilThen: a calendar that
// decides a booking later (an EHR confirming by webhook: the protocol's
// 202 pending) leaves the caller hearing pending, never booked, until the
// write is decided; then the booking is confirmed, once, and its
// appointment is recorded with the provider's event.
func TestABookingTheCalendarConfirmsLaterIsPendingUntilThen(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: simProvider(sim)}
		c.ReconcileDisabled = true
		c.Steps = step.Config{Backoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	})
	c := newClinicSlot(t, e, "clinic")
	sim.Fault(provider.Calendar, "pending=1s", 1)
	first := c.tool("book_appointment", "call-later", map[string]any{"customer_id": c.customer, "slot_id": c.slot})
	if first.Outcome != "pending" || strings.Contains(strings.ToLower(first.Say), "is booked") {
		t.Fatalf("a booking the calendar decides later: %s; want pending, not booked", said(first))
	}
	if n := len(sim.Ledger(provider.Calendar)); n != 0 {
		t.Fatalf("the calendar's ledger lists %d bookings before the decision, want 0", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.Main.Reconciler().RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a := c.tool("check_action_status", "call-later", map[string]any{"action_id": first.ActionID}); a.Outcome == "confirmed" {
			break
		} else if a.Outcome != "pending" || time.Now().After(deadline) {
			t.Fatalf("while the calendar decides: %s", said(a))
		}
		<-time.After(50 * time.Millisecond) // poll interval of a condition wait
	}
	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 1 {
		t.Fatalf("the calendar holds %d bookings, want 1", len(ledger))
	}
	if n := e.Count("SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active' AND event_id = $2", first.ActionID, ledger[0].ID); n != 1 {
		t.Fatalf("the appointment is not recorded with the calendar's event %s", ledger[0].ID)
	}
}
