package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// gateAnswer is an answer with the confirmation gate's details.
type gateAnswer struct {
	answer
	ReadBack string `json:"-"`
	Echo     string `json:"-"`
	When     string `json:"-"`
}

func readGate(t *testing.T, a answer) gateAnswer {
	t.Helper()
	var d struct {
		ReadBack string `json:"read_back"`
		Echo     string `json:"caller_confirmed"`
		When     string `json:"when"`
		Code     string `json:"code"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		t.Fatal(err)
	}
	if a.Outcome == "rejected" && a.Reason == "needs_caller_confirmation" &&
		(d.Code != "NEEDS_CALLER_CONFIRMATION" || d.ReadBack == "" || d.Echo == "" || !strings.Contains(a.Say, d.ReadBack) || !strings.Contains(a.Say, d.Echo)) {
		t.Fatalf("a gate refusal without its read-back and echo: %+v %s", a, a.Details)
	}
	return gateAnswer{answer: a, ReadBack: d.ReadBack, Echo: d.Echo, When: d.When}
}

// The confirmation gate, once a tenant turns it on: a booking, a move, a
// cancellation and a charge asked for without the caller's confirmation
// are refused (needs_caller_confirmation) with the sentence to read back,
// the time in the location's zone with the practitioner and location, or
// the amount; a confirmation of another time or amount is refused too, and
// so are bare times and amounts (the instant, the time as said, "$45"): the
// echo is the one the read-back gave. Nothing is claimed by a refusal, and
// the confirmed call that follows acts once. REST is not gated.
func TestConfirmationGate(t *testing.T) {
	t.Parallel()
	c := setupClinic(t)
	customer := c.Customer(c.tenant)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	year := time.Now().In(ny).Year() + 1
	at := func(hour, minute int) time.Time { return time.Date(year, time.December, 10, hour, minute, 0, 0, ny) }
	slot := func(start time.Time, key string) string {
		id, _ := created(t, c.Env, "/v1/slots", c.key, key, map[string]any{
			"starts_at": start.Format(time.RFC3339), "ends_at": start.Add(30 * time.Minute).Format(time.RFC3339),
			"practitioner_id": c.ortiz, "location_id": c.downtown,
		})
		return id
	}
	first, later := slot(at(15, 30), "slot-1530"), slot(at(17, 0), "slot-1700")
	tool := func(name string, args map[string]any) gateAnswer {
		t.Helper()
		return readGate(t, decodeAnswer(t, c.Post("/v1/dasha/tools/"+name, c.key, "", payload(name, "gate-call", args))))
	}
	with := func(args map[string]any, confirmed string) map[string]any {
		out := map[string]any{"caller_confirmed": confirmed}
		for k, v := range args {
			out[k] = v
		}
		return out
	}
	untouched := func(step string, actions int) {
		t.Helper()
		if n := c.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", c.tenant); n != actions {
			t.Fatalf("%s: %d actions, want %d", step, n, actions)
		}
	}
	created0 := c.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", c.tenant)

	// Off by default.
	if n := c.Count("SELECT count(*) FROM tenants WHERE id = $1 AND NOT caller_confirmation", c.tenant); n != 1 {
		t.Fatal("a new tenant's confirmation gate is on")
	}
	book := map[string]any{"customer_id": customer, "slot_id": first}
	if err := c.Store.SetCallerConfirmation(t.Context(), c.tenant, true); err != nil {
		t.Fatal(err)
	}

	// A booking without confirmation: the read-back, nothing done.
	a := tool("book_appointment", book)
	wantEcho := fmt.Sprintf("%d-12-10T15:30-05:00 #", year)
	if a.Reason != "needs_caller_confirmation" || !strings.HasPrefix(a.Echo, wantEcho) || len(a.Echo) != len(wantEcho)+8 ||
		!strings.Contains(a.ReadBack, "with Dr. Ortiz at Downtown — shall I book it?") ||
		!strings.Contains(a.ReadBack, a.When) || !strings.Contains(a.When, "10") || a.ActionID != "" {
		t.Fatalf("a booking without confirmation: %+v read back %q echo %q", a.answer, a.ReadBack, a.Echo)
	}
	untouched("unconfirmed booking", created0)
	// An interim yes to another time cannot book this one.
	for _, other := range []string{fmt.Sprintf("%d-12-10T16:00", year), fmt.Sprintf("%d-12-10T15:30", year), at(15, 30).UTC().Format(time.RFC3339), a.When,
		strings.Replace(a.Echo, "15:30", "16:00", 1)} {
		if b := tool("book_appointment", with(book, other)); b.Reason != "needs_caller_confirmation" ||
			!strings.Contains(b.Say, "is not the confirmation of what this request would do") {
			t.Fatalf("a confirmation of %q: %+v", other, b.answer)
		}
	}
	untouched("a confirmation of another time", created0)
	// The echo the refusal gave books (case and spacing aside), once; the
	// same booking again is its replay, not asked again.
	booked := tool("book_appointment", with(book, "  "+strings.ToUpper(a.Echo)+" "))
	if booked.Outcome != "confirmed" {
		t.Fatalf("the confirmed booking: %+v", booked.answer)
	}
	if again := tool("book_appointment", book); again.Outcome != "confirmed" || again.ActionID != booked.ActionID {
		t.Fatalf("the booking again: %+v, want the replay of %s", again.answer, booked.ActionID)
	}
	if n := c.Count("SELECT count(*) FROM appointments WHERE customer_id = $1 AND status = 'active'", customer); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	var appt struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(booked.Details, &appt); err != nil || appt.ID == "" {
		t.Fatalf("the booking's details: %s", booked.Details)
	}

	// A move: the appointment's time now and the new time are read back.
	move := map[string]any{"appointment_id": appt.ID, "slot_id": later}
	m := tool("reschedule_appointment", move)
	if m.Reason != "needs_caller_confirmation" || !strings.HasPrefix(m.ReadBack, "Move your appointment from "+a.When+" to ") ||
		!strings.Contains(m.ReadBack, "with Dr. Ortiz at Downtown") || !strings.HasPrefix(m.Echo, fmt.Sprintf("%d-12-10T17:00-05:00 #", year)) {
		t.Fatalf("a move without confirmation: %+v read back %q", m.answer, m.ReadBack)
	}
	for _, other := range []string{a.Echo, at(17, 0).UTC().Format(time.RFC3339)} {
		if b := tool("reschedule_appointment", with(move, other)); b.Reason != "needs_caller_confirmation" {
			t.Fatalf("a move confirmed with %q: %+v", other, b.answer)
		}
	}
	if moved := tool("reschedule_appointment", with(move, m.Echo)); moved.Outcome != "confirmed" {
		t.Fatalf("the confirmed move: %+v", moved.answer)
	}

	// A cancellation: the appointment's time is read back; the move's
	// echo, for the same time, does not cancel it.
	cancel := map[string]any{"appointment_id": appt.ID}
	x := tool("cancel_appointment", cancel)
	if x.Reason != "needs_caller_confirmation" || x.ReadBack != "Cancel your appointment on "+m.When+" with Dr. Ortiz at Downtown — shall I cancel it?" ||
		x.Echo == m.Echo {
		t.Fatalf("a cancellation without confirmation: %+v read back %q", x.answer, x.ReadBack)
	}
	if b := tool("cancel_appointment", with(cancel, m.Echo)); b.Reason != "needs_caller_confirmation" {
		t.Fatalf("a cancellation confirmed with the move's echo: %+v", b.answer)
	}
	if n := c.Count("SELECT count(*) FROM appointments WHERE id = $1 AND status = 'active'", uuid.MustParse(appt.ID)); n != 1 {
		t.Fatal("an unconfirmed cancellation cancelled")
	}
	if done := tool("cancel_appointment", with(cancel, x.Echo)); done.Outcome != "confirmed" {
		t.Fatalf("the confirmed cancellation: %+v", done.answer)
	}
	if n := c.Count("SELECT count(*) FROM appointments WHERE id = $1 AND status = 'cancelled'", uuid.MustParse(appt.ID)); n != 1 {
		t.Fatal("the confirmed cancellation did not cancel")
	}

	// A charge: the amount is read back; another amount is refused.
	intent, _ := created(t, c.Env, "/v1/payment-intents", c.key, "intent-45", map[string]any{"customer_id": customer, "amount": 4500, "currency": "USD"})
	before := c.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", c.tenant)
	charge := map[string]any{"payment_intent_id": intent}
	p := tool("charge_payment", charge)
	if p.Reason != "needs_caller_confirmation" || !strings.Contains(p.ReadBack, "45.00 US dollars") || !strings.HasPrefix(p.Echo, "45.00 USD #") {
		t.Fatalf("a charge without confirmation: %+v read back %q echo %q", p.answer, p.ReadBack, p.Echo)
	}
	for _, other := range []string{"40.00 USD", "45.00 USD", "$45", strings.Replace(p.Echo, "45.00", "40.00", 1)} {
		if b := tool("charge_payment", with(charge, other)); b.Reason != "needs_caller_confirmation" {
			t.Fatalf("a charge confirmed with %q: %+v", other, b.answer)
		}
	}
	untouched("unconfirmed charges", before)
	if paid := tool("charge_payment", with(charge, p.Echo)); paid.Reason == "needs_caller_confirmation" || paid.ActionID == "" {
		t.Fatalf("the confirmed charge did not pass the gate: %+v", paid.answer)
	}
	untouched("the confirmed charge", before+1)

	// REST is not gated.
	if r := c.Post("/v1/appointments", c.key, "rest-book", map[string]any{"customer_id": customer, "slot_id": first}); r.Status != 201 {
		t.Fatalf("REST booking with the gate on: %d %s", r.Status, r.Body)
	}
}
