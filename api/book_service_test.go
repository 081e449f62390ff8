package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// bookService posts a booking by service through REST.
func (c slotClinic) bookService(key string, body map[string]any) apptest.Response {
	c.t.Helper()
	return c.e.Post("/v1/appointments", c.key, key, body)
}

// TestBookAServiceAtATime: the first free practitioner by name is booked
// (the row records the service), a retry replays, an instant or a local
// time in the location's zone both name the time, a practitioner at two
// locations in two zones is booked where asked, and bad input or no free
// practitioner books nothing.
func TestBookAServiceAtATime(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	london, newYork := mustZone(t, "Europe/London"), mustZone(t, "America/New_York")
	downtown := c.location("Downtown", "Europe/London")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 10)
	whitening := c.service("Whitening", 60, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{downtown, uptown}, cleaning)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{downtown}, cleaning, whitening)
	at := localDay(london, 4, 14, 0)
	ortizSlot := c.slot(ortiz, downtown, at, 45)
	leeSlot := c.slot(lee, downtown, at, 45)
	later := c.slot(ortiz, downtown, at.Add(2*time.Hour), 45)
	uptownAt := onDateOf(at, newYork, 14, 0) // 14:00 in New York: 19:00 in London
	uptownSlot := c.slot(ortiz, uptown, uptownAt, 45)
	ana, bob := e.Customer(c.tenant), e.Customer(c.tenant)
	withPhone, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: c.tenant, Name: "Cy", Phone: "+447700900555"})
	if err != nil {
		t.Fatal(err)
	}
	cy := withPhone.ID

	body := map[string]any{"customer_id": ana, "service_id": cleaning, "starts_at": at.UTC().Format(time.RFC3339)}
	r := c.bookService("book-ana", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("book by service: %d %s", r.Status, r.Body)
	}
	res := resultOf(t, r)
	if res["slot_id"] != leeSlot.String() || res["practitioner"] != "Dr. Lee" || res["service"] != "Cleaning" ||
		res["service_id"] != cleaning.String() || res["location"] != "Downtown" || res["timezone"] != "Europe/London" ||
		!strings.Contains(res["when"].(string), "14:00") {
		t.Fatalf("Dr. Lee comes first by name: %s", r.Body)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND service_id = $2 AND service = 'Cleaning' AND status = 'active'",
		leeSlot, cleaning); n != 1 {
		t.Fatalf("appointment rows with the service: %d", n)
	}
	again := c.bookService("book-ana", body)
	if again.Status != http.StatusCreated || !again.Replayed() || resultOf(t, again)["id"] != res["id"] {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	// The same time again: Dr. Ortiz is the one left, asked in local time.
	r = c.bookService("book-bob", map[string]any{"customer_id": bob, "service_id": cleaning, "location_id": downtown,
		"starts_at": at.Format("2006-01-02T15:04")})
	if r.Status != http.StatusCreated || resultOf(t, r)["slot_id"] != ortizSlot.String() {
		t.Fatalf("second booking at that time: %d %s", r.Status, r.Body)
	}
	// A third: nobody is free then; the alternatives are the next free times.
	r = c.bookService("book-cy", map[string]any{"customer_id": cy, "service_id": cleaning, "starts_at": at.UTC().Format(time.RFC3339)})
	if r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "NO_PRACTITIONER_FREE" {
		t.Fatalf("nobody free: %d %s", r.Status, r.Body)
	}
	alts, _ := detailsOf(t, r)["alternatives"].([]any)
	if len(alts) != 2 || alts[0].(map[string]any)["id"] != later.String() || alts[1].(map[string]any)["id"] != uptownSlot.String() {
		t.Fatalf("alternatives: %s", r.Body)
	}
	// Dr. Ortiz in New York, asked at 14:00 local there.
	r = c.bookService("book-cy-uptown", map[string]any{"customer_id": cy, "service_id": cleaning, "practitioner_id": ortiz,
		"location_id": uptown, "starts_at": uptownAt.Format("2006-01-02T15:04:05"), "notify": "sms"})
	if r.Status != http.StatusCreated || resultOf(t, r)["slot_id"] != uptownSlot.String() || resultOf(t, r)["timezone"] != "America/New_York" ||
		!strings.Contains(resultOf(t, r)["when"].(string), "14:00") || resultOf(t, r)["confirmation"] != "recorded" {
		t.Fatalf("uptown in New York's time: %d %s", r.Status, r.Body)
	}
	// The confirmation says New York's time, not the tenant's London time.
	if n := e.Count("SELECT count(*) FROM messages WHERE tenant_id = $1 AND subject_id = $2 AND body LIKE '%14:00%'",
		c.tenant, resultOf(t, r)["id"]); n != 1 {
		t.Errorf("confirmations in the location's time: %d", n)
	}
	// Whitening needs an hour: no slot of 45 minutes fits.
	r = c.bookService("book-white", map[string]any{"customer_id": cy, "service_id": whitening, "starts_at": later.String()})
	if r.Status != http.StatusBadRequest {
		t.Errorf("starts_at not a time: %d %s", r.Status, r.Body)
	}
	r = c.bookService("book-white", map[string]any{"customer_id": cy, "service_id": whitening,
		"starts_at": at.Add(2 * time.Hour).UTC().Format(time.RFC3339)})
	if r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "NO_PRACTITIONER_FREE" {
		t.Errorf("a service longer than the slot: %d %s", r.Status, r.Body)
	}
	r = c.bookService("book-nosvc", map[string]any{"customer_id": cy, "service_id": uuid.New(), "starts_at": at.UTC().Format(time.RFC3339)})
	if r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "SERVICE_NOT_FOUND" {
		t.Errorf("unknown service: %d %s", r.Status, r.Body)
	}

	// Bad input: a 400 naming the field, nothing written.
	before := e.Count("SELECT count(*) FROM appointments")
	actions := e.Count("SELECT count(*) FROM actions")
	for field, bad := range map[string]map[string]any{
		"slot_id":         {"customer_id": cy},
		"service_id":      {"customer_id": cy, "slot_id": later, "service_id": cleaning},
		"starts_at":       {"customer_id": cy, "service_id": cleaning},
		"practitioner_id": {"customer_id": cy, "slot_id": later, "practitioner_id": ortiz},
		"service":         {"customer_id": cy, "service_id": cleaning, "starts_at": at.UTC().Format(time.RFC3339), "service": "Polish"},
	} {
		r := c.bookService("bad-"+field, bad)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), field) {
			t.Errorf("%s: %d %s", field, r.Status, r.Body)
		}
	}
	if e.Count("SELECT count(*) FROM appointments") != before || e.Count("SELECT count(*) FROM actions") != actions {
		t.Error("bad input wrote rows")
	}
}

// TestConcurrentBookingsOfAService: callers racing for the last free
// practitioner get one booking, the others NO_PRACTITIONER_FREE with the
// next free time; two callers for two free practitioners both get one.
func TestConcurrentBookingsOfAService(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	loc := c.location("Downtown", "Europe/London")
	cleaning := c.service("Cleaning", 30, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{loc}, cleaning)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{loc}, cleaning)
	start := time.Now().UTC().Truncate(time.Hour).Add(72 * time.Hour)

	race := func(n int, at time.Time) []apptest.Response {
		out := make([]apptest.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			customer := e.Customer(c.tenant)
			wg.Go(func() {
				out[i] = c.bookService(uuid.NewString(), map[string]any{
					"customer_id": customer, "service_id": cleaning, "starts_at": at.Format(time.RFC3339),
				})
			})
		}
		wg.Wait()
		return out
	}

	// The last free practitioner.
	last := c.slot(ortiz, loc, start, 30)
	next := c.slot(ortiz, loc, start.Add(time.Hour), 30)
	won := 0
	for _, r := range race(6, start) {
		switch {
		case r.Status == http.StatusCreated:
			won++
		case r.Status == http.StatusUnprocessableEntity && r.JSON(t)["code"] == "NO_PRACTITIONER_FREE":
			alts, _ := detailsOf(t, r)["alternatives"].([]any)
			if len(alts) == 0 || alts[0].(map[string]any)["id"] != next.String() {
				t.Errorf("a loser without the next free time: %s", r.Body)
			}
		default:
			t.Errorf("unexpected answer: %d %s", r.Status, r.Body)
		}
	}
	if won != 1 || e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", last) != 1 {
		t.Fatalf("last practitioner: %d confirmed, rows %d", won, e.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", last))
	}

	// Two free practitioners, two callers, several rounds: both booked.
	for round := range 5 {
		at := start.Add(time.Duration(2+round) * time.Hour)
		a, b := c.slot(ortiz, loc, at, 30), c.slot(lee, loc, at, 30)
		for _, r := range race(2, at) {
			if r.Status != http.StatusCreated {
				t.Fatalf("round %d: a caller was refused with a practitioner free: %d %s", round, r.Status, r.Body)
			}
		}
		if e.Count("SELECT count(*) FROM appointments WHERE slot_id IN ($1, $2) AND status = 'active'", a, b) != 2 {
			t.Fatalf("round %d: not one booking per practitioner", round)
		}
	}
	// Three practitioners, five callers: three bookings, two refusals.
	patel := c.practitioner("Dr. Patel", []uuid.UUID{loc}, cleaning)
	at := start.Add(10 * time.Hour)
	three := []any{c.slot(ortiz, loc, at, 30), c.slot(lee, loc, at, 30), c.slot(patel, loc, at, 30)}
	won, refused := 0, 0
	for _, r := range race(5, at) {
		switch {
		case r.Status == http.StatusCreated:
			won++
		case r.Status == http.StatusUnprocessableEntity && r.JSON(t)["code"] == "NO_PRACTITIONER_FREE":
			refused++
		default:
			t.Errorf("unexpected answer: %d %s", r.Status, r.Body)
		}
	}
	if won != 3 || refused != 2 || e.Count("SELECT count(*) FROM appointments WHERE slot_id IN ($1, $2, $3) AND status = 'active'", three...) != 3 {
		t.Fatalf("three practitioners, five callers: %d booked, %d refused", won, refused)
	}
	if e.Count("SELECT count(*) FROM appointments a JOIN slots s ON s.id = a.slot_id WHERE a.status = 'active' "+
		"GROUP BY s.id ORDER BY count(*) DESC LIMIT 1") != 1 {
		t.Error("a slot holds two bookings")
	}
}

// TestDashaFindsACleaningWithDrOrtizTomorrowAfternoonAndBooksItOnce: the
// call the clinic chain asked for, over the Dasha route: find "a cleaning
// with Dr. Ortiz tomorrow afternoon", book the time offered by service
// (Dr. Ortiz asked for), hear it in the location's time; the retry of the
// same tool call replays; the appointment row records the service.
func TestDashaFindsACleaningWithDrOrtizTomorrowAfternoonAndBooksItOnce(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	london := mustZone(t, "Europe/London")
	downtown := c.location("Downtown", "Europe/London")
	cleaning := c.service("Cleaning", 30, 10)
	filling := c.service("Filling", 45, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{downtown}, cleaning)
	lee := c.practitioner("Dr. Lee", []uuid.UUID{downtown}, cleaning, filling)
	c.slot(ortiz, downtown, localDay(london, 1, 10, 0), 45) // the morning
	c.slot(lee, downtown, localDay(london, 1, 14, 0), 45)   // Dr. Lee
	afternoon := c.slot(ortiz, downtown, localDay(london, 1, 15, 0), 45)
	c.slot(ortiz, downtown, localDay(london, 2, 15, 0), 45) // the day after
	customer := e.Customer(c.tenant)
	callID := "call_clinic_1"
	turn := func(tool string, args map[string]any) answer {
		t.Helper()
		return decodeAnswer(t, e.Post("/v1/dasha/tools/"+tool, c.key, "", payload(tool, callID, args)))
	}

	found := turn("find_available_slots", map[string]any{"service_id": cleaning.String(), "practitioner_id": ortiz.String(),
		"date": "tomorrow", "part_of_day": "afternoon"})
	var o offer
	decodeDetails(t, found, &o)
	if found.Outcome != "confirmed" || len(o.Slots) != 1 || o.Slots[0].ID != afternoon.String() || o.Slots[0].Practitioner != "Dr. Ortiz" ||
		o.Slots[0].Location != "Downtown" || !strings.Contains(o.Slots[0].When, "15:00") || !strings.Contains(found.Say, "practitioner") {
		t.Fatalf("find a cleaning with Dr. Ortiz tomorrow afternoon: %+v %s", found, found.Details)
	}

	args := map[string]any{"customer_id": customer.String(), "service_id": cleaning.String(), "practitioner_id": ortiz.String(),
		"starts_at": o.Slots[0].StartsAt}
	booked := turn("book_appointment", args)
	var appt struct {
		ID           string `json:"id"`
		SlotID       string `json:"slot_id"`
		Practitioner string `json:"practitioner"`
		When         string `json:"when"`
	}
	decodeDetails(t, booked, &appt)
	if booked.Outcome != "confirmed" || booked.ActionID == "" || appt.SlotID != afternoon.String() || appt.Practitioner != "Dr. Ortiz" ||
		!strings.Contains(appt.When, "15:00") {
		t.Fatalf("book it: %+v %s", booked, booked.Details)
	}
	again := turn("book_appointment", args)
	if again.Outcome != "confirmed" || again.ActionID != booked.ActionID {
		t.Fatalf("the retry of the same call: %+v", again)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE customer_id = $1 AND slot_id = $2 AND service_id = $3 AND status = 'active'",
		customer, afternoon, cleaning); n != 1 {
		t.Fatalf("appointments with the service: %d", n)
	}
	if n := e.Count("SELECT count(*) FROM appointments WHERE customer_id = $1", customer); n != 1 {
		t.Fatalf("appointments of the caller: %d", n)
	}
	// The time is gone: another caller asking for it hears the alternatives.
	other := turn("book_appointment", map[string]any{"customer_id": e.Customer(c.tenant).String(), "service_id": cleaning.String(),
		"practitioner_id": ortiz.String(), "starts_at": o.Slots[0].StartsAt})
	if other.Outcome != "rejected" || other.Reason != "no_practitioner_free" || !strings.Contains(other.Say, "alternatives") ||
		!strings.Contains(string(other.Details), "alternatives") || !strings.Contains(other.Say, "The next free times: ") ||
		!strings.Contains(other.Say, "at 15:00 with Dr. Ortiz at Downtown") {
		t.Fatalf("the taken time: %+v %s", other, other.Details)
	}
}

// TestARemoteCalendarBooksByService: with the calendar on the http
// provider (whose calendar oncecall cannot read), a booking by service
// picks the first practitioner by name whom no booking of oncecall's
// holds then and sends that slot, with the service, in the version 2
// payload; a second booking of the time goes to the other practitioner,
// a third is NO_PRACTITIONER_FREE with nothing sent; a made-up service is
// SERVICE_NOT_FOUND with nothing sent.
func TestARemoteCalendarBooksByService(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
		})}
	})
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	downtown := c.location("Downtown", "Europe/London")
	cleaning := c.service("Cleaning", 30, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{downtown}, cleaning)
	adams := c.practitioner("Dr. Adams", []uuid.UUID{downtown}, cleaning)
	start := time.Date(2030, 1, 2, 14, 0, 0, 0, time.UTC)
	slots := map[uuid.UUID]string{c.slot(ortiz, downtown, start, 30): "Dr. Ortiz", c.slot(adams, downtown, start, 30): "Dr. Adams"}
	book := func(key string, service uuid.UUID) apptest.Response {
		return c.bookService(key, map[string]any{"customer_id": e.Customer(c.tenant), "service_id": service, "starts_at": "2030-01-02T14:00:00Z"})
	}
	sent := func() []string {
		var out []string
		for _, l := range sim.Ledger(provider.Calendar) {
			var p struct {
				SlotID       string                    `json:"slot_id"`
				Practitioner struct{ Name string }     `json:"practitioner"`
				Service      struct{ ID, Name string } `json:"service"`
			}
			if err := json.Unmarshal(l.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.Service.ID != cleaning.String() || p.Service.Name != "Cleaning" {
				t.Fatalf("payload sent: %s; want the service Cleaning", l.Payload)
			}
			out = append(out, p.Practitioner.Name+" "+p.SlotID)
		}
		return out
	}
	if r := book("by-service-unknown", uuid.New()); r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "SERVICE_NOT_FOUND" {
		t.Fatalf("a made-up service: %d %s; want 422 SERVICE_NOT_FOUND", r.Status, r.Body)
	}
	if got := sent(); len(got) != 0 {
		t.Fatalf("sent %v for a made-up service, want nothing", got)
	}
	for i, want := range []string{"Dr. Adams", "Dr. Ortiz"} {
		r := book("by-service-"+want, cleaning)
		if r.Status != http.StatusCreated {
			t.Fatalf("booking %d by service: %d %s", i+1, r.Status, r.Body)
		}
		got := sent()
		if len(got) != i+1 || !strings.HasPrefix(got[i], want+" ") || slots[uuid.MustParse(strings.TrimPrefix(got[i], want+" "))] != want {
			t.Fatalf("booking %d sent %v; want %s's slot", i+1, got, want)
		}
	}
	r := book("by-service-full", cleaning)
	if r.Status != http.StatusUnprocessableEntity || r.JSON(t)["code"] != "NO_PRACTITIONER_FREE" {
		t.Fatalf("a third booking of the time: %d %s; want 422 NO_PRACTITIONER_FREE", r.Status, r.Body)
	}
	if got := sent(); len(got) != 2 {
		t.Fatalf("sent %v after the refusal, want the two bookings only", got)
	}
}

// TestDashaBookingASlotOfAPractitionerIsSaidInItsLocationsTime: booked by
// slot_id, a practitioner's slot is said in its location's timezone, with
// who and where; a slot of the single calendar in the tenant's, as before.
func TestDashaBookingASlotOfAPractitionerIsSaidInItsLocationsTime(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	c := newSlotClinic(t, e, "clinic", testOrg, "Europe/London")
	newYork, london := mustZone(t, "America/New_York"), mustZone(t, "Europe/London")
	uptown := c.location("Uptown", "America/New_York")
	cleaning := c.service("Cleaning", 30, 0)
	ortiz := c.practitioner("Dr. Ortiz", []uuid.UUID{uptown}, cleaning)
	slot := c.slot(ortiz, uptown, localDay(newYork, 2, 9, 30), 30)
	calendar := slotAt(t, e, c.tenant, localDay(london, 2, 9, 30), "Chair")
	customer := e.Customer(c.tenant).String()
	var got struct {
		Timezone     string `json:"timezone"`
		When         string `json:"when"`
		Practitioner string `json:"practitioner"`
		Location     string `json:"location"`
	}
	a := decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", c.key, "",
		payload("book_appointment", "call_slot", map[string]any{"customer_id": customer, "slot_id": slot.String()})))
	decodeDetails(t, a, &got)
	if a.Outcome != "confirmed" || got.Timezone != "America/New_York" || !strings.Contains(got.When, "09:30") ||
		got.Practitioner != "Dr. Ortiz" || got.Location != "Uptown" {
		t.Fatalf("a practitioner's slot: %+v %s", a, a.Details)
	}
	got.Practitioner, got.Location = "", ""
	a = decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", c.key, "",
		payload("book_appointment", "call_slot_2", map[string]any{"customer_id": customer, "slot_id": calendar.String()})))
	decodeDetails(t, a, &got)
	if a.Outcome != "confirmed" || got.Timezone != "Europe/London" || !strings.Contains(got.When, "09:30") || got.Practitioner != "" {
		t.Fatalf("a slot of the single calendar: %+v %s", a, a.Details)
	}
}
