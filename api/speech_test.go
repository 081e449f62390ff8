package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/apptest"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/providersim"
	"github.com/oncecall/oncecall/internal/providersim/simtest"
)

// said is an answer as a failure prints it.
func said(a answer) string {
	return fmt.Sprintf("outcome %s, reason %q, say %q, details %s", a.Outcome, a.Reason, a.Say, a.Details)
}

// simProvider is the provider simulator as a provider of the JSON protocol.
func simProvider(sim *simtest.Sim) provider.Provider {
	return provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL, Timeout: 2 * time.Second,
		Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
	})
}

// clinicSlot is a slot of Dr. Ortiz at Uptown (New York) for a clinic whose
// tenant is in London, on Friday 6 December 2030 at 14:00 in New York
// (19:00 in London).
type clinicSlot struct {
	slotClinic
	slot, customer uuid.UUID
	start          time.Time
}

func newClinicSlot(t *testing.T, e *apptest.Env, name string) clinicSlot {
	t.Helper()
	c := newSlotClinic(t, e, name, testOrg, "Europe/London")
	uptown := c.location("Uptown", "America/New_York")
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{uptown}, c.service("Cleaning", 30, 0))
	start := time.Date(2030, 12, 6, 14, 0, 0, 0, mustZone(t, "America/New_York"))
	cust, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	return clinicSlot{slotClinic: c, slot: c.slot(ortiz, uptown, start, 30), customer: cust.ID, start: start}
}

func (c clinicSlot) tool(name, callID string, args map[string]any) answer {
	c.t.Helper()
	return decodeAnswer(c.t, c.e.Post("/v1/dasha/tools/"+name, c.key, "", payload(name, callID, args)))
}

// bookedSays is what a confirmed booking's details must say of it.
type bookedSays struct {
	When         string `json:"when"`
	StartsAt     string `json:"starts_at"`
	Practitioner string `json:"practitioner"`
	Timezone     string `json:"timezone"`
}

// TestEveryConfirmedBookingSaysWhen: a booking confirmed by a remote
// calendar, and one an operator confirmed from evidence, are said like a
// local one: details carry when (the location's local time), starts_at and
// the practitioner, and the say points at them.
func TestEveryConfirmedBookingSaysWhen(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: simProvider(sim)}
		c.ReconcileDisabled = true // the operator settles the lost answer
		c.OperatorToken = operatorToken
	})
	c := newClinicSlot(t, e, "clinic")
	const when, startsAt = "Friday 6 December 2030 at 14:00", "2030-12-06T19:00:00Z"
	check := func(what string, a answer) {
		t.Helper()
		var got bookedSays
		decodeDetails(t, a, &got)
		if a.Outcome != "confirmed" || got.When != when || got.StartsAt != startsAt || got.Practitioner != "Dr. Ortiz" ||
			got.Timezone != "America/New_York" || !strings.Contains(a.Say, "when") {
			t.Fatalf("%s: %s; want when %q, starts_at %s, Dr. Ortiz", what, said(a), when, startsAt)
		}
	}
	booked := c.tool("book_appointment", "call-remote", map[string]any{"customer_id": c.customer, "slot_id": c.slot})
	check("booked on the remote calendar", booked)
	check("its status", c.tool("check_action_status", "call-remote", map[string]any{"action_id": booked.ActionID}))

	// A lost answer settled by an operator from the calendar's record.
	other := newClinicSlot(t, e, "other")
	sim.Fault(provider.Calendar, "drop_response", 1)
	lost := other.tool("book_appointment", "call-lost", map[string]any{"customer_id": other.customer, "slot_id": other.slot})
	if lost.Outcome != "pending" {
		t.Fatalf("lost answer: %s", said(lost))
	}
	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 2 {
		t.Fatalf("the calendar holds %d bookings, want 2", len(ledger))
	}
	res := e.Post("/v1/ops/actions/"+lost.ActionID+"/resolve", operatorToken, "", map[string]any{
		"outcome": "confirmed", "provider_ref": ledger[1].ID, "note": "found in the calendar", "by": "ana",
	})
	if res.Status != http.StatusOK {
		t.Fatalf("resolve: %d %s", res.Status, res.Body)
	}
	check("confirmed by an operator", other.tool("check_action_status", "call-lost", map[string]any{"action_id": lost.ActionID}))
}

// localAppointments is the details of list_appointments and the body of
// GET /v1/appointments.
type listedAppointments struct {
	Appointments []struct {
		ID            string `json:"id"`
		When          string `json:"when"`
		StartsAtLocal string `json:"starts_at_local"`
		Timezone      string `json:"timezone"`
		Practitioner  string `json:"practitioner"`
	} `json:"appointments"`
}

// TestListedAtTheLocationsLocalTime: an appointment at a location in
// another zone than the tenant's is confirmed, listed (list_appointments,
// GET /v1/appointments) and texted to the customer at the same local time,
// the location's: 14:00 in New York, never 19:00 in London.
func TestListedAtTheLocationsLocalTime(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newClinicSlot(t, e, "clinic")
	const when, local = "Friday 6 December 2030 at 14:00", "2030-12-06T14:00:00-05:00"
	booked := c.tool("book_appointment", "call-1", map[string]any{"customer_id": c.customer, "slot_id": c.slot, "notify": "sms"})
	var got bookedSays
	decodeDetails(t, booked, &got)
	if booked.Outcome != "confirmed" || got.When != when {
		t.Fatalf("booked: %s", said(booked))
	}
	check := func(what string, l listedAppointments) {
		t.Helper()
		if len(l.Appointments) != 1 {
			t.Fatalf("%s: %+v", what, l)
		}
		a := l.Appointments[0]
		if a.When != when || a.StartsAtLocal != local || a.Timezone != "America/New_York" || a.Practitioner != "Dr. Ortiz" {
			t.Fatalf("%s: %+v; want when %q, starts_at_local %s in America/New_York with Dr. Ortiz", what, a, when, local)
		}
	}
	var listed listedAppointments
	decodeDetails(t, c.tool("list_appointments", "call-1", map[string]any{"customer_id": c.customer}), &listed)
	check("list_appointments", listed)
	r := e.Get("/v1/appointments?customer_id="+c.customer.String(), c.key)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/appointments: %d %s", r.Status, r.Body)
	}
	listed = listedAppointments{}
	if err := json.Unmarshal(r.Body, &listed); err != nil {
		t.Fatalf("GET /v1/appointments: %v: %s", err, r.Body)
	}
	check("GET /v1/appointments", listed)
	if n := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body LIKE '%' || $2 || '%'", c.customer, when); n != 1 {
		var body string
		_ = e.Store.Pool().QueryRow(t.Context(), "SELECT body FROM messages WHERE customer_id = $1", c.customer).Scan(&body)
		t.Fatalf("the confirmation says %q; want %q", body, when)
	}
}

// TestTenantLocaleSpeaksDates: a tenant in Chicago hears American dates
// (month first, a 12-hour clock) in every answer and message: slots offered,
// the booking, the appointments listed, a callback's window, the
// confirmation text. The locale is the tenant's setting, not the zone's:
// set to en-GB, the same tenant hears British dates.
func TestTenantLocaleSpeaksDates(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "chicago", testOrg, "America/Chicago")
	start := time.Date(2030, 12, 6, 9, 30, 0, 0, mustZone(t, "America/Chicago"))
	slot := slotAt(t, e, c.tenant, start, "Chair")
	cust, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Ana", Phone: "+13125550123"})
	if err != nil {
		t.Fatal(err)
	}
	cs := clinicSlot{slotClinic: c, customer: cust.ID}
	const american = "Friday, December 6, 2030 at 9:30 AM"

	_, offer := c.find(map[string]any{"date": "2030-12-06"})
	if len(offer.Slots) != 1 || offer.Slots[0].When != american {
		t.Fatalf("find_available_slots: %+v; want %q", offer, american)
	}
	booked := cs.tool("book_appointment", "call-1", map[string]any{"customer_id": cust.ID, "slot_id": slot, "notify": "sms"})
	var got bookedSays
	decodeDetails(t, booked, &got)
	if booked.Outcome != "confirmed" || got.When != american {
		t.Fatalf("book_appointment: %s; want %q", said(booked), american)
	}
	var listed listedAppointments
	decodeDetails(t, cs.tool("list_appointments", "call-1", map[string]any{"customer_id": cust.ID}), &listed)
	if len(listed.Appointments) != 1 || listed.Appointments[0].When != american {
		t.Fatalf("list_appointments: %+v; want %q", listed, american)
	}
	if n := e.Count("SELECT count(*) FROM messages WHERE customer_id = $1 AND body LIKE '%' || $2 || '%'", cust.ID, american); n != 1 {
		t.Fatalf("no confirmation text says %q", american)
	}
	callback := cs.tool("request_callback", "call-1", map[string]any{
		"customer_id": cust.ID, "window_start": "2030-12-06T09:30", "window_end": "2030-12-06T11:00", "reason": "a question",
	})
	if w := answerDetails(t, callback)["when"]; callback.Outcome != "confirmed" || w != "Friday, December 6, 2030 between 9:30 AM and 11:00 AM" {
		t.Fatalf("request_callback: %s", said(callback))
	}

	c.exec("UPDATE tenants SET locale = 'en-GB' WHERE id = $1", c.tenant)
	listed = listedAppointments{}
	decodeDetails(t, cs.tool("list_appointments", "call-2", map[string]any{"customer_id": cust.ID}), &listed)
	const british = "Friday 6 December 2030 at 09:30"
	if len(listed.Appointments) != 1 || listed.Appointments[0].When != british {
		t.Fatalf("list_appointments in en-GB: %+v; want %q", listed, british)
	}
}
