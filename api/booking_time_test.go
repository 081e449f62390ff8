package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The identity of a booking's time is the instant, whatever its spelling.

// TestOneBookingTwoSpellingsOfItsTime: a booking by service and location
// said in the location's local time and then as the same instant (in UTC,
// with an offset, with fractional seconds) is one action and one
// appointment, in the call, from another call and through REST under one
// key; a local time with no location to read it in, when the service is
// offered in two timezones, is refused and claims nothing.
func TestOneBookingTwoSpellingsOfItsTime(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	newYork := mustZone(t, "America/New_York")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 0)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{uptown}, cleaning)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{uptown}, cleaning)
	at := time.Date(2031, 3, 7, 15, 0, 0, 0, newYork) // 20:00 UTC
	c.slot(lee, uptown, at, 30)
	c.slot(ortiz, uptown, at, 30)
	ana := e.Customer(c.tenant)

	book := func(call, startsAt string) answer {
		t.Helper()
		return decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", c.key, "", payload("book_appointment", call, map[string]any{
			"customer_id": ana, "service_id": cleaning, "location_id": uptown, "starts_at": startsAt,
		})))
	}
	first := book("call-spellings", "2031-03-07T15:00")
	if first.Outcome != "confirmed" {
		t.Fatalf("booking in local time: %+v", first)
	}
	for _, spelling := range []string{"2031-03-07T20:00:00Z", "2031-03-07T15:00:00-05:00", "2031-03-07T20:00:00.000Z", "2031-03-07T15:00:00"} {
		again := book("call-spellings", spelling)
		if again.Outcome != "confirmed" || again.ActionID != first.ActionID {
			t.Errorf("the same instant spelt %s: %s %s, want the action %s", spelling, again.Outcome, again.ActionID, first.ActionID)
		}
	}
	// A re-plan from another call names the same booking in its instant.
	if other := book("call-other", "2031-03-07T20:00:00Z"); other.ActionID != first.ActionID {
		t.Errorf("the same booking from another call: %s %s, want the action %s", other.Outcome, other.ActionID, first.ActionID)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1 AND customer_id = $2", c.tenant, ana); n != 1 {
		t.Fatalf("appointments of the customer = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", c.tenant); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
	// The stored request holds the instant.
	if n := e.Count("SELECT count(*) FROM actions WHERE id = $1 AND request->>'starts_at' = '2031-03-07T20:00:00Z'", first.ActionID); n != 1 {
		t.Errorf("the action's request does not hold the instant")
	}

	// REST: one key, the local time then the instant: a replay, not a reuse.
	bob := e.Customer(c.tenant)
	body := func(startsAt string) map[string]any {
		return map[string]any{"customer_id": bob, "service_id": cleaning, "location_id": uptown, "starts_at": startsAt}
	}
	r := c.bookService("bob-cleaning", body("2031-03-07T15:00"))
	if r.Status != http.StatusCreated {
		t.Fatalf("REST booking in local time: %d %s", r.Status, r.Body)
	}
	again := c.bookService("bob-cleaning", body("2031-03-07T20:00:00Z"))
	if again.Status != http.StatusCreated || !again.Replayed() {
		t.Fatalf("REST retry spelling the instant: %d %s", again.Status, again.Body)
	}

	// A local time with no location, for a service offered in two zones,
	// is no instant: refused, nothing claimed.
	downtown := c.location("Downtown", "Europe/London")
	c.practitioner("Dr. Patel", []uuid.UUID{downtown}, cleaning)
	actions := e.Count("SELECT count(*) FROM actions")
	amb := decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", c.key, "", payload("book_appointment", "call-amb", map[string]any{
		"customer_id": e.Customer(c.tenant), "service_id": cleaning, "starts_at": "2031-03-07T15:00",
	})))
	if amb.Outcome != "rejected" || amb.Reason != "invalid_arguments" || !strings.Contains(string(amb.Details), "starts_at") {
		t.Fatalf("a local time in two zones: %+v", amb)
	}
	if n := e.Count("SELECT count(*) FROM actions"); n != actions {
		t.Fatalf("the refused booking claimed %d actions", n-actions)
	}
}
