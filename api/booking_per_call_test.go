package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// One booking per customer and call, unless booking_ref asks for another.

// bookedInCall is the details of an ALREADY_BOOKED_IN_CALL refusal.
type bookedInCall struct {
	AppointmentID string `json:"appointment_id"`
	SlotID        string `json:"slot_id"`
	StartsAt      string `json:"starts_at"`
	When          string `json:"when"`
}

// TestSecondBookingInOneCallIsRefused: a caller who changes their mind in
// one call is refused a second appointment, with the one that stands (its
// id and local time) and a say offering to move it; the identical first
// booking re-sent is its replay; a new booking_ref books a second one on
// purpose; another call, REST, and the same call after the first booking is
// cancelled book as before; a moved booking still stands at its new time;
// two different bookings of one call at once make one appointment.
func TestSecondBookingInOneCallIsRefused(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	const call = "call-changed-mind"
	slots := make([]uuid.UUID, 10)
	for i := range slots {
		slots[i] = d.Slot(d.tenant, 24*(i+1))
	}
	first := decodeAnswer(t, d.call("book_appointment", call, d.bookArgs(slots[0])))
	if first.Outcome != "confirmed" {
		t.Fatalf("first booking: %+v", first)
	}
	appointment := detailID(t, first)

	// "Actually Friday at ten": refused with what stands.
	second := decodeAnswer(t, d.call("book_appointment", call, d.bookArgs(slots[1])))
	var stands bookedInCall
	decodeDetails(t, second, &stands)
	if second.Outcome != "rejected" || second.Reason != "already_booked_in_call" || stands.AppointmentID != appointment ||
		stands.SlotID != slots[0].String() || stands.When == "" {
		t.Fatalf("a second booking in the call: %s %s %s", second.Outcome, second.Reason, second.Details)
	}
	if !strings.Contains(second.Say, "reschedule_appointment") || !strings.Contains(second.Say, "booking_ref") ||
		strings.Contains(strings.ToLower(second.Say), "is booked for") {
		t.Errorf("refusal say: %s", second.Say)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slots[1]); n != 0 {
		t.Fatal("the refused booking made an appointment")
	}
	// Its retry hears the same; the identical first booking re-sent is its replay.
	if again := decodeAnswer(t, d.call("book_appointment", call, d.bookArgs(slots[1]))); again.Reason != "already_booked_in_call" {
		t.Errorf("the refused booking again: %+v", again)
	}
	replay := d.call("book_appointment", call, d.bookArgs(slots[0]))
	if a := decodeAnswer(t, replay); a.Outcome != "confirmed" || a.ActionID != first.ActionID || !replay.Replayed() {
		t.Errorf("the first booking re-sent: %s", replay.Body)
	}
	// A second booking on purpose, by name.
	named := d.bookArgs(slots[1])
	named["booking_ref"] = "second"
	if a := decodeAnswer(t, d.call("book_appointment", call, named)); a.Outcome != "confirmed" {
		t.Fatalf("a second booking with its booking_ref: %+v", a)
	}
	if a := decodeAnswer(t, d.call("book_appointment", call, named)); a.Outcome != "confirmed" {
		t.Errorf("the named second booking re-sent: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE customer_id = $1 AND status = 'active'", d.customer); n != 2 {
		t.Fatalf("active appointments = %d, want 2", n)
	}
	// Another call is another call; REST has no call.
	if a := decodeAnswer(t, d.call("book_appointment", "call-next-week", d.bookArgs(slots[2]))); a.Outcome != "confirmed" {
		t.Errorf("a booking in another call: %+v", a)
	}
	for i, s := range slots[3:5] {
		if r := d.Post("/v1/appointments", d.key, fmt.Sprint("rest-", i), d.bookArgs(s)); r.Status != http.StatusCreated {
			t.Errorf("REST booking %d: %d %s", i, r.Status, r.Body)
		}
	}
	// Cancelled, the call may book again.
	if a := decodeAnswer(t, d.call("cancel_appointment", call, map[string]any{"appointment_id": appointment})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	if a := decodeAnswer(t, d.call("book_appointment", call, d.bookArgs(slots[5]))); a.Outcome != "confirmed" {
		t.Errorf("a booking after the call's booking was cancelled: %+v", a)
	}

	// Moved, the booking stands at its new time.
	const moving = "call-moving"
	moved := decodeAnswer(t, d.call("book_appointment", moving, d.bookArgsFor(d.Customer(d.tenant), slots[6])))
	if moved.Outcome != "confirmed" {
		t.Fatalf("booking to move: %+v", moved)
	}
	var who struct {
		CustomerID string `json:"customer_id"`
	}
	decodeDetails(t, moved, &who)
	if a := decodeAnswer(t, d.call("reschedule_appointment", moving, map[string]any{"appointment_id": detailID(t, moved), "slot_id": slots[7]})); a.Outcome != "confirmed" {
		t.Fatalf("move: %+v", a)
	}
	after := decodeAnswer(t, d.call("book_appointment", moving, map[string]any{"customer_id": who.CustomerID, "slot_id": slots[8]}))
	decodeDetails(t, after, &stands)
	if after.Reason != "already_booked_in_call" || stands.SlotID != slots[7].String() {
		t.Errorf("a booking after a move in the call: %s %s %s", after.Outcome, after.Reason, after.Details)
	}

	// Two different bookings of one call at once: one appointment.
	racer := d.Customer(d.tenant)
	race := []uuid.UUID{d.Slot(d.tenant, 500), d.Slot(d.tenant, 501)}
	got := make([]answer, len(race))
	var wg sync.WaitGroup
	for i, s := range race {
		wg.Go(func() { got[i] = decodeAnswer(t, d.call("book_appointment", "call-race", d.bookArgsFor(racer, s))) })
	}
	wg.Wait()
	if n := d.Count("SELECT count(*) FROM appointments WHERE customer_id = $1", racer); n != 1 {
		t.Fatalf("two bookings of one call at once made %d appointments: %+v", n, got)
	}
	var outcomes []string
	for _, a := range got {
		outcomes = append(outcomes, a.Outcome+"/"+a.Reason)
	}
	if strings.Join(outcomes, " ") != "confirmed/ rejected/already_booked_in_call" && strings.Join(outcomes, " ") != "rejected/already_booked_in_call confirmed/" {
		t.Errorf("racing bookings: %v", outcomes)
	}
}

// TestSecondBookingByServiceInOneCallIsRefused: the same rule for a booking
// by service and time; the refusal says the appointment that stands in its
// location's time, with who and where.
func TestSecondBookingByServiceInOneCallIsRefused(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	newYork := mustZone(t, "America/New_York")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 0)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{uptown}, cleaning)
	first, second := localDay(newYork, 3, 10, 0), localDay(newYork, 4, 11, 0)
	booked := c.slot(lee, uptown, first, 30)
	other := c.slot(lee, uptown, second, 30)
	ana := e.Customer(c.tenant)
	book := func(at time.Time) answer {
		t.Helper()
		return decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", c.key, "", payload("book_appointment", "call-service", map[string]any{
			"customer_id": ana, "service_id": cleaning, "location_id": uptown, "starts_at": at.Format("2006-01-02T15:04"),
		})))
	}
	if a := book(first); a.Outcome != "confirmed" {
		t.Fatalf("first booking: %+v", a)
	}
	refused := book(second)
	var stands struct {
		bookedInCall
		Timezone     string `json:"timezone"`
		Practitioner string `json:"practitioner"`
		Location     string `json:"location"`
	}
	decodeDetails(t, refused, &stands)
	if refused.Reason != "already_booked_in_call" || stands.SlotID != booked.String() || stands.Timezone != "America/New_York" ||
		!strings.Contains(stands.When, "10:00") || stands.Practitioner != "Dr. Lee" || stands.Location != "Uptown" {
		t.Fatalf("a second booking by service: %s %s %s", refused.Outcome, refused.Reason, refused.Details)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", other); n != 0 {
		t.Fatal("the refused booking made an appointment")
	}
}
