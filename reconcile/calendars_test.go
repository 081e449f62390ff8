package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/sim/calcom"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/simkit"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The tenants' own calendars, end to end: oncecall with a tenant connected
// to each provider's fake, started as a real process, for each of
// Google Calendar, Microsoft 365 and Cal.com.

var calendarProviders = []string{oncecall.CalendarGoogle, oncecall.CalendarMicrosoft, oncecall.CalendarCalcom}

// calendarFake is one provider's fake and what a tenant's connection to it
// says.
type calendarFake struct {
	name     string
	sim      *calsimtest.Process
	base     string
	settings map[string]string
	// secretEnv holds secret on the servers: the connection names it.
	secretEnv, secret string
	// calendar is the practitioner's calendar there.
	calendar string
}

func startCalendarFake(t *testing.T, name string) calendarFake {
	t.Helper()
	sim := calsimtest.Start(t, name)
	f := calendarFake{name: name, sim: sim, secretEnv: "CALENDAR_SECRET_" + strings.ToUpper(name), settings: map[string]string{}}
	switch name {
	case oncecall.CalendarGoogle:
		key, err := calsimtest.GoogleKey(sim.URL + "/token")
		if err != nil {
			t.Fatal(err)
		}
		f.base, f.secret, f.calendar = sim.URL+"/calendar/v3", string(key), "ortiz@clinic.example"
	case oncecall.CalendarMicrosoft:
		f.base, f.secret, f.calendar = sim.URL+"/v1.0", "graph-secret", "ortiz@clinic.example"
		f.settings = map[string]string{calendars.SettingDirectory: "contoso.onmicrosoft.com", calendars.SettingClient: "app-1",
			calendars.SettingAuthority: sim.URL}
	case oncecall.CalendarCalcom:
		f.base, f.secret, f.calendar = sim.URL, calcom.DefaultAPIKey, "4242"
	}
	return f
}

// direct makes an event at [start, end) as a person in the calendar would.
func (f calendarFake) direct(t *testing.T, start, end time.Time) {
	t.Helper()
	if f.name == oncecall.CalendarCalcom {
		f.sim.Call("POST", "/sim/bookings", map[string]any{"event_type_id": 4242, "start": start, "minutes": int(end.Sub(start).Minutes())}, 201, nil)
		return
	}
	f.sim.Call("POST", "/sim/events", map[string]any{"calendar": f.calendar, "start": start, "end": end, "summary": "walk-in"}, 201, nil)
}

// move moves an event to start, as a person in the calendar would (on
// Cal.com: a reschedule by the attendee, a new booking).
func (f calendarFake) move(t *testing.T, id string, start, end time.Time) {
	t.Helper()
	if f.name == oncecall.CalendarCalcom {
		f.sim.Call("POST", "/sim/bookings/reschedule", map[string]any{"uid": id, "start": start}, 201, nil)
		return
	}
	f.sim.Call("POST", "/sim/events/move", map[string]any{"calendar": f.calendar, "id": id, "start": start, "end": end}, 200, nil)
}

// events is the fake's ledger.
func (f calendarFake) events(t *testing.T) []calsimtest.Event {
	t.Helper()
	evs, err := calsimtest.Events(t.Context(), f.name, f.sim.URL)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// ours are the live events any oncecall action made.
func (f calendarFake) ours(t *testing.T) []calsimtest.Event {
	t.Helper()
	var out []calsimtest.Event
	for _, e := range f.events(t) {
		if e.Live && e.Action != "" {
			out = append(out, e)
		}
	}
	return out
}

// calendarClinic is a tenant bound to a Dasha org, with a practitioner at a
// location in Madrid whose calendar is in the fake, a customer with a
// phone and an e-mail, and three consecutive half-hour slots (within the
// hours the Cal.com fake opens: 08:00 to 18:00 UTC).
type calendarClinic struct {
	tenant   uuid.UUID
	key, org string
	customer uuid.UUID
	slots    []uuid.UUID
	starts   []time.Time
}

func newCalendarClinic(t *testing.T, store *db.Store, f calendarFake, name string) calendarClinic {
	t.Helper()
	ctx := t.Context()
	c := calendarClinic{org: "org-" + name}
	tn, key, err := store.CreateTenantWith(ctx, db.NewTenant{Name: name, DashaOrgID: c.org, Timezone: "Europe/Madrid"})
	if err != nil {
		t.Fatal(err)
	}
	c.tenant, c.key = tn.ID, key
	loc, _, err := store.CreateLocation(ctx, oncecall.NewLocation{TenantID: tn.ID, Name: "Centro", Timezone: "Europe/Madrid", Address: "Calle Mayor 1"})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: tn.ID, Name: "Dr. Ortiz", LocationIDs: []uuid.UUID{loc.ID}})
	if err != nil {
		t.Fatal(err)
	}
	cust, err := store.CreateCustomer(ctx, db.NewCustomer{TenantID: tn.ID, Name: "Lucía", Phone: "+34600000001", Email: "lucia@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	c.customer = cust.ID
	day := time.Now().UTC().AddDate(0, 0, 10)
	for i := range 3 {
		start := time.Date(day.Year(), day.Month(), day.Day(), 10, 30*i, 0, 0, time.UTC)
		id := uuid.New()
		if _, err := store.Pool().Exec(ctx, `INSERT INTO slots (id, tenant_id, starts_at, ends_at, practitioner_id, location_id) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, tn.ID, start, start.Add(30*time.Minute), p.ID, loc.ID); err != nil {
			t.Fatal(err)
		}
		c.slots, c.starts = append(c.slots, id), append(c.starts, start)
	}
	if _, err := store.ConnectCalendar(ctx, oncecall.CalendarConnection{
		TenantID: tn.ID, Provider: f.name, Credentials: "env:" + f.secretEnv, BaseURL: f.base, Settings: f.settings,
	}, []oncecall.CalendarMapping{{PractitionerID: p.ID, CalendarID: f.calendar}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// inProcess is oncecall in this process, reaching the fake with its
// secret, reading calendars through a short cache, its reconciler run by
// the test.
func inProcess(t *testing.T, f calendarFake) *apptest.Env {
	t.Helper()
	return apptest.Start(t, func(c *app.Config) {
		c.Calendars = calendars.Config{
			Secrets:   calendars.Secrets{Getenv: func(k string) string { return map[string]string{f.secretEnv: f.secret}[k] }},
			Tuning:    calendars.Tuning{Timeout: 3 * time.Second, VisibilityDelay: time.Second},
			ReadTTL:   100 * time.Millisecond,
			TenantTTL: 100 * time.Millisecond,
		}
		c.ReconcileDisabled = true
		c.Steps = step.Config{Backoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxChecks: 100}
	})
}

// dashaAnswer is a tool call's answer.
type dashaAnswer struct {
	Outcome  string          `json:"outcome"`
	ActionID string          `json:"action_id"`
	Reason   string          `json:"reason"`
	Say      string          `json:"say"`
	Details  json.RawMessage `json:"details"`
}

// tool posts a Dasha tool call to base.
func (c calendarClinic) tool(t *testing.T, base, name, callID string, args map[string]any) dashaAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"type": "ToolWebHookPayload", "status": "Running", "callId": callID, "agentId": "agent-1", "orgId": c.org,
		"toolName": name, "arguments": args, "callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/dasha/tools/"+name, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer res.Body.Close()
	var a dashaAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v", name, res.StatusCode, err)
	}
	return a
}

// offered lists the slot ids find_available_slots offers.
func (c calendarClinic) offered(t *testing.T, base string) []string {
	t.Helper()
	a := c.tool(t, base, "find_available_slots", "call-find", map[string]any{"from": c.starts[0].Add(-time.Hour).Format(time.RFC3339), "limit": 10})
	if a.Outcome != "confirmed" {
		t.Fatalf("find_available_slots: %+v", a)
	}
	var d struct {
		Slots []struct {
			ID string `json:"id"`
		} `json:"slots"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		t.Fatalf("find_available_slots: %s %s: %v", a.Outcome, a.Details, err)
	}
	var out []string
	for _, s := range d.Slots {
		out = append(out, s.ID)
	}
	return out
}

// listed is what list_appointments says of the customer's appointments.
func (c calendarClinic) listed(t *testing.T, base string) []listedAppointment {
	t.Helper()
	a := c.tool(t, base, "list_appointments", "call-list", map[string]any{"customer_id": c.customer})
	if a.Outcome != "confirmed" {
		t.Fatalf("list_appointments: %+v", a)
	}
	var d struct {
		Appointments []listedAppointment `json:"appointments"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		t.Fatalf("list_appointments: %s: %v", a.Details, err)
	}
	return d.Appointments
}

type listedAppointment struct {
	ID       string    `json:"id"`
	StartsAt time.Time `json:"starts_at"`
	When     string    `json:"when"`
}

func (c calendarClinic) book(slot int) map[string]any {
	return map[string]any{"customer_id": c.customer, "slot_id": c.slots[slot]}
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// A storm of identical book_appointment calls (the model re-sending, the
// platform retrying) makes one event in the calendar, and every answer
// that confirms names the one action.
func TestCalendarsStormOfIdenticalCallsMakesOneEvent(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "storm-"+name)
			const n = 12
			answers := make([]dashaAnswer, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { answers[i] = c.tool(t, e.URL, "book_appointment", "call-storm", c.book(0)) })
			}
			wg.Wait()
			actions := map[string]bool{}
			for _, a := range answers {
				if a.Outcome == "rejected" {
					t.Fatalf("an identical call was rejected: %+v", a)
				}
				if a.ActionID != "" {
					actions[a.ActionID] = true
				}
			}
			if len(actions) != 1 {
				t.Fatalf("%d storm calls answered for %d actions, want 1: %+v", n, len(actions), answers)
			}
			final := c.tool(t, e.URL, "book_appointment", "call-storm", c.book(0))
			if final.Outcome != "confirmed" || !actions[final.ActionID] {
				t.Fatalf("the call once more: %+v", final)
			}
			if ours := f.ours(t); len(ours) != 1 || ours[0].Action != final.ActionID {
				t.Fatalf("the calendar holds %d live events of oncecall's (%+v), want 1 of action %s", len(ours), ours, final.ActionID)
			}
		})
	}
}

// A booking whose create answer was lost (the calendar made the event,
// oncecall never heard) is pending, then settled by the reconciler from
// the calendar's evidence: confirmed, one event, and the appointment's
// record holds that event.
func TestCalendarsLostAnswerIsSettledByEvidence(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "lost-"+name)
			f.sim.Fault(simRule("drop_response", "write"))
			r := e.Post("/v1/appointments", c.key, "lost-1", c.book(1))
			if r.Status != http.StatusAccepted {
				t.Fatalf("the booking whose answer was lost: %d %s; want 202 pending", r.Status, r.Body)
			}
			id := r.JSON(t)["action_id"].(string)
			waitFor(t, "the reconciler to settle the booking", 20*time.Second, func() bool {
				if _, err := e.Main.Reconciler().RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
				return e.Count("SELECT count(*) FROM actions WHERE id = $1 AND outcome = 'confirmed'", id) == 1
			})
			ours := f.ours(t)
			if len(ours) != 1 || ours[0].Action != id {
				t.Fatalf("the calendar holds %+v, want one event of action %s", ours, id)
			}
			if n := e.Count("SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active' AND event_id = $2", id, ours[0].ID); n != 1 {
				t.Fatalf("the appointment's record does not hold event %s", ours[0].ID)
			}
		})
	}
}

// A slot someone took in the calendar directly is no longer offered once
// the short cache of reads has passed, and a booking of it, even from an
// answer heard before, is refused without anything sent.
func TestCalendarsSlotTakenDirectlyIsNotOfferedNorBooked(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "direct-"+name)
			if got := c.offered(t, e.URL); !contains(got, c.slots[0].String()) || len(got) != 3 {
				t.Fatalf("before: offered %v, want the three slots", got)
			}
			f.direct(t, c.starts[0], c.starts[0].Add(30*time.Minute))
			waitFor(t, "the slot taken in the calendar to be no longer offered", 10*time.Second, func() bool {
				return !contains(c.offered(t, e.URL), c.slots[0].String())
			})
			if got := c.offered(t, e.URL); len(got) != 2 {
				t.Fatalf("after: offered %v, want the two free slots", got)
			}
			a := c.tool(t, e.URL, "book_appointment", "call-direct", c.book(0))
			if a.Outcome != "rejected" || a.Reason != "slot_unavailable" {
				t.Fatalf("a booking of the taken slot: %+v; want rejected slot_unavailable", a)
			}
			if ours := f.ours(t); len(ours) != 0 {
				t.Fatalf("the calendar holds %d events of oncecall's, want none: nothing may be sent", len(ours))
			}
		})
	}
}

// An appointment someone moved in the calendar is listed at its new time,
// and the booking's status says it moved.
func TestCalendarsEventMovedThereIsListedAtItsNewTime(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "moved-"+name)
			booked := c.tool(t, e.URL, "book_appointment", "call-move", c.book(0))
			if booked.Outcome != "confirmed" {
				t.Fatalf("booking: %+v", booked)
			}
			if got := c.listed(t, e.URL); len(got) != 1 || !got[0].StartsAt.Equal(c.starts[0]) || got[0].ID != booked.ActionID {
				t.Fatalf("listed before the move: %+v", got)
			}
			ours := f.ours(t)
			if len(ours) != 1 {
				t.Fatalf("the calendar holds %+v, want one event", ours)
			}
			later := c.starts[0].Add(4 * time.Hour)
			f.move(t, ours[0].ID, later, later.Add(30*time.Minute))
			waitFor(t, "the appointment to be listed at its new time", 10*time.Second, func() bool {
				got := c.listed(t, e.URL)
				return len(got) == 1 && got[0].StartsAt.Equal(later) && got[0].ID == booked.ActionID
			})
			// The REST record says where the appointment is now: its new
			// time, and no slot of oncecall's, which is not at that time.
			got := e.Get("/v1/appointments/"+booked.ActionID, c.key).JSON(t)
			if got["starts_at"] != later.UTC().Format(time.RFC3339) || got["slot_id"] != nil || got["status"] != "active" {
				t.Fatalf("GET the appointment after it moved in the calendar: %v; want it at %s, active, with no slot", got, later)
			}
			status := c.tool(t, e.URL, "check_action_status", "call-move", map[string]any{"action_id": booked.ActionID})
			var now struct {
				Current string `json:"current"`
			}
			if err := json.Unmarshal(status.Details, &now); err != nil || now.Current != "moved" {
				t.Fatalf("the booking's status after the move: %+v; want it to say the appointment moved", status)
			}
		})
	}
}

// simRule is a one-shot fault.
func simRule(fault, on string) simkit.Rule { return simkit.Rule{Fault: fault, Count: 1, On: on} }

// killedEnv is what a kill-9 test needs of a real oncecall process: its
// environment, with the fake's secret where the connection says.
func killedEnv(dbURL string, f calendarFake) []string {
	return []string{
		"DATABASE_URL=" + dbURL, "ONCECALL_LEASE=1s", "ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_RATE_LIMIT=0",
		"ONCECALL_PRUNE_INTERVAL=0", "ONCECALL_CALENDAR_VISIBILITY_DELAY=1s", "ONCECALL_CALENDAR_TIMEOUT=5s",
		"ONCECALL_STEP_MAX_BACKOFF=500ms", f.secretEnv + "=" + f.secret,
	}
}

// A real oncecall process is killed (SIGKILL) while its create is at the
// calendar; the calendar makes the event after oncecall is gone. A new
// process's reconciler finds the event and confirms the booking: one
// event, and the caller's repeat hears it booked.
func TestCalendarsKilledBetweenDispatchAndRecordEndsWithOneEvent(t *testing.T) {
	t.Parallel()
	for _, name := range []string{oncecall.CalendarMicrosoft, oncecall.CalendarCalcom} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			url, store := processDB(t)
			c := newCalendarClinic(t, store, f, "killed-"+name)
			a := killDuringCreate(t, url, f, c, c.book(2), "call-killed")
			if ours := f.ours(t); len(ours) != 1 || ours[0].Action != a.ActionID {
				t.Fatalf("the calendar holds %+v, want one event of action %s", ours, a.ActionID)
			}
		})
	}
}

// TestADashaCallOnAGoogleCalendar is a caller's whole call against a tenant
// whose appointments live in Google Calendar: only free times are offered
// (one taken there directly is not), the chosen one is booked once though
// oncecall is killed while booking it and the call re-sends the tool, and
// the caller hears the calendar's truth when it lists their appointments
// after the clinic moved the appointment in Google Calendar.
func TestADashaCallOnAGoogleCalendar(t *testing.T) {
	t.Parallel()
	f := startCalendarFake(t, oncecall.CalendarGoogle)
	url, store := processDB(t)
	c := newCalendarClinic(t, store, f, "dasha-google")
	f.direct(t, c.starts[0], c.starts[0].Add(30*time.Minute))

	bin := buildOncecall(t)
	p := startOncecall(t, bin, killedEnv(url, f)...)
	offered := c.offered(t, p.url)
	if contains(offered, c.slots[0].String()) || !contains(offered, c.slots[1].String()) || len(offered) != 2 {
		t.Fatalf("offered %v; want the two free slots, not the one taken in the calendar", offered)
	}
	p.kill()

	booked := killDuringCreate(t, url, f, c, c.book(1), "call-dasha")
	ours := f.ours(t)
	if len(ours) != 1 || ours[0].Action != booked.ActionID {
		t.Fatalf("the calendar holds %+v, want one event of action %s", ours, booked.ActionID)
	}
	var said struct {
		When, Practitioner string
		StartsAt           time.Time `json:"starts_at"`
	}
	if err := json.Unmarshal(booked.Details, &said); err != nil || said.When == "" || said.Practitioner != "Dr. Ortiz" || !said.StartsAt.Equal(c.starts[1]) {
		t.Fatalf("the booking said %s (%v); want when, starts_at %s and Dr. Ortiz", booked.Details, err, c.starts[1])
	}

	p = startOncecall(t, bin, killedEnv(url, f)...)
	if again := c.tool(t, p.url, "book_appointment", "call-dasha", c.book(1)); again.Outcome != "confirmed" || again.ActionID != booked.ActionID {
		t.Fatalf("the tool once more: %+v", again)
	}
	if n := len(f.ours(t)); n != 1 {
		t.Fatalf("the calendar holds %d events of oncecall's, want 1", n)
	}
	later := c.starts[1].Add(3 * time.Hour)
	f.move(t, ours[0].ID, later, later.Add(30*time.Minute))
	waitFor(t, "list_appointments to say the time the calendar holds", 30*time.Second, func() bool {
		got := c.listed(t, p.url)
		return len(got) == 1 && got[0].StartsAt.Equal(later) && got[0].When != ""
	})
}

// processDB is a database for real oncecall processes, and a store on it.
func processDB(t *testing.T) (string, *db.Store) {
	t.Helper()
	e := apptest.Start(t) // migrates; its server is not used
	return e.DBURL, e.Store
}

// killDuringCreate books through a real oncecall process whose create is
// delayed at the calendar, kills the process while the create waits there,
// starts another, and returns what the tool call's repeat hears once the
// reconciler settled the booking.
func killDuringCreate(t *testing.T, dbURL string, f calendarFake, c calendarClinic, args map[string]any, callID string) dashaAnswer {
	t.Helper()
	bin := buildOncecall(t)
	first := startOncecall(t, bin, append(killedEnv(dbURL, f), "ONCECALL_NO_RECONCILE=true")...)
	f.sim.Fault(simRule("delay=2s", "write"))
	go func() {
		body, _ := json.Marshal(map[string]any{
			"type": "ToolWebHookPayload", "status": "Running", "callId": callID, "agentId": "agent-1", "orgId": c.org,
			"toolName": "book_appointment", "arguments": args, "callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
		})
		req, _ := http.NewRequest(http.MethodPost, first.url+"/v1/dasha/tools/book_appointment", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Content-Type", "application/json")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	waitFor(t, "the create to reach the calendar", 20*time.Second, func() bool { return f.sim.WritesDelayed() > 0 })
	first.kill()
	waitFor(t, "the calendar to make the event after oncecall died", 20*time.Second, func() bool { return len(f.ours(t)) == 1 })
	second := startOncecall(t, bin, killedEnv(dbURL, f)...)
	var a dashaAnswer
	waitFor(t, "the reconciler to settle the booking", 30*time.Second, func() bool {
		a = c.tool(t, second.url, "book_appointment", callID, args)
		return a.Outcome == "confirmed"
	})
	second.kill()
	return a
}

// An appointment is moved and cancelled through oncecall in the calendar
// itself: the move keeps one event (Cal.com: the new booking replaces the
// old), listed at the new time; the cancel leaves none, is not listed, and
// a second cancel is refused; the freed time can be booked again.
func TestCalendarsMoveAndCancelThroughOncecall(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "change-"+name)
			booked := c.tool(t, e.URL, "book_appointment", "call-change", c.book(0))
			if booked.Outcome != "confirmed" {
				t.Fatalf("booking: %+v", booked)
			}
			moved := c.tool(t, e.URL, "reschedule_appointment", "call-change", map[string]any{"appointment_id": booked.ActionID, "slot_id": c.slots[2]})
			if moved.Outcome != "confirmed" {
				t.Fatalf("move: %+v", moved)
			}
			ours := f.ours(t)
			if len(ours) != 1 || !ours[0].Start.Equal(c.starts[2]) {
				t.Fatalf("after the move the calendar holds %+v, want one event at %s", ours, c.starts[2])
			}
			if got := c.listed(t, e.URL); len(got) != 1 || got[0].ID != booked.ActionID || !got[0].StartsAt.Equal(c.starts[2]) {
				t.Fatalf("listed after the move: %+v", got)
			}
			if got := c.offered(t, e.URL); !contains(got, c.slots[0].String()) || contains(got, c.slots[2].String()) {
				t.Fatalf("offered after the move: %v; want the old slot free and the new one taken", got)
			}
			cancelled := c.tool(t, e.URL, "cancel_appointment", "call-change", map[string]any{"appointment_id": booked.ActionID})
			if cancelled.Outcome != "confirmed" {
				t.Fatalf("cancel: %+v", cancelled)
			}
			if ours := f.ours(t); len(ours) != 0 {
				t.Fatalf("after the cancel the calendar holds %+v, want no live event of oncecall's", ours)
			}
			if got := c.listed(t, e.URL); len(got) != 0 {
				t.Fatalf("listed after the cancel: %+v", got)
			}
			if again := c.tool(t, e.URL, "cancel_appointment", "call-again", map[string]any{"appointment_id": booked.ActionID}); again.ActionID != cancelled.ActionID {
				t.Fatalf("the same cancel again: %+v; want the first cancel's answer", again)
			}
			if r := e.Post("/v1/appointments/"+booked.ActionID+"/cancel", c.key, "cancel-again", map[string]any{}); r.Status != http.StatusUnprocessableEntity ||
				!strings.Contains(string(r.Body), "APPOINTMENT_NOT_ACTIVE") {
				t.Fatalf("another cancel: %d %s; want 422 APPOINTMENT_NOT_ACTIVE", r.Status, r.Body)
			}
			rebooked := c.tool(t, e.URL, "book_appointment", "call-rebook", c.book(2))
			if rebooked.Outcome != "confirmed" || len(f.ours(t)) != 1 {
				t.Fatalf("a booking of the freed time: %+v, %d live events", rebooked, len(f.ours(t)))
			}
		})
	}
}

// A server that cannot read a tenant's calendar secret claims the booking
// (planned for the tenant's connection) but never sends it, nor leases it
// in its reconciler: the caller hears pending. A server that reads the
// secret, on the same database, books it once.
func TestOnlyAServerWithTheCalendarsSecretBooksThere(t *testing.T) {
	t.Parallel()
	f := startCalendarFake(t, oncecall.CalendarGoogle)
	without := apptest.Start(t, func(c *app.Config) {
		c.Calendars = calendars.Config{Secrets: calendars.Secrets{Getenv: func(string) string { return "" }}, TenantTTL: time.Millisecond}
		c.ReconcileDisabled = true
	})
	c := newCalendarClinic(t, without.Store, f, "secretless")
	r := without.Post("/v1/appointments", c.key, "secretless-1", c.book(0))
	if r.Status != http.StatusAccepted {
		t.Fatalf("booking on a server without the secret: %d %s; want 202 pending", r.Status, r.Body)
	}
	id := r.JSON(t)["action_id"].(string)
	var kind, account string
	if err := without.Store.Pool().QueryRow(t.Context(), "SELECT provider_kind, provider_account FROM action_steps WHERE action_id = $1", id).
		Scan(&kind, &account); err != nil || kind != oncecall.CalendarGoogle {
		t.Fatalf("the step is planned for %q %q (%v), want the tenant's google connection", kind, account, err)
	}
	if st, err := without.Main.Reconciler().RunOnce(t.Context()); err != nil || st.Due+st.Abandoned != 0 {
		t.Fatalf("the secretless server's reconciler leased %+v (%v), want nothing", st, err)
	}
	if n := len(f.ours(t)); n != 0 {
		t.Fatalf("the calendar holds %d events, want none", n)
	}
	with := apptest.StartOn(t, without.DBURL, func(c *app.Config) {
		c.Calendars = calendars.Config{Secrets: calendars.Secrets{Getenv: func(k string) string { return map[string]string{f.secretEnv: f.secret}[k] }},
			Tuning: calendars.Tuning{VisibilityDelay: time.Second}}
		c.ReconcileDisabled = true
		c.Core.Lease = 500 * time.Millisecond
	})
	waitFor(t, "the server with the secret to book it", 20*time.Second, func() bool {
		if _, err := with.Main.Reconciler().RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		return with.Count("SELECT count(*) FROM actions WHERE id = $1 AND outcome = 'confirmed'", id) == 1
	})
	if ours := f.ours(t); len(ours) != 1 || ours[0].Action != id {
		t.Fatalf("the calendar holds %+v, want one event of action %s", ours, id)
	}
}

// A call books one appointment per customer in a remote calendar too, as
// in oncecall's own: a second booking in the same call is refused while
// the first stands (already_booked_in_call, naming it) or is still
// waiting for the calendar (booking_in_progress), and nothing is sent; a
// new booking_ref books a second one on purpose; another call books anew.
func TestCalendarsBookOncePerCustomerAndCall(t *testing.T) {
	t.Parallel()
	f := startCalendarFake(t, oncecall.CalendarGoogle)
	e := inProcess(t, f)
	c := newCalendarClinic(t, e.Store, f, "per-call")
	f.sim.Fault(simRule("drop_response", "write"))
	first := c.tool(t, e.URL, "book_appointment", "call-one", c.book(0))
	if first.Outcome != "pending" {
		t.Fatalf("the first booking, its answer lost: %+v", first)
	}
	waiting := c.tool(t, e.URL, "book_appointment", "call-one", c.book(1))
	if waiting.Outcome != "rejected" || waiting.Reason != "booking_in_progress" || !strings.Contains(string(waiting.Details), first.ActionID) {
		t.Fatalf("a second booking while the first waits: %+v; want rejected booking_in_progress naming %s", waiting, first.ActionID)
	}
	waitFor(t, "the first booking to be settled", 20*time.Second, func() bool {
		if _, err := e.Main.Reconciler().RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		return e.Count("SELECT count(*) FROM actions WHERE id = $1 AND outcome = 'confirmed'", first.ActionID) == 1
	})
	again := c.tool(t, e.URL, "book_appointment", "call-one", c.book(2))
	var d struct {
		AppointmentID string `json:"appointment_id"`
		When          string `json:"when"`
	}
	if err := json.Unmarshal(again.Details, &d); err != nil || again.Reason != "already_booked_in_call" || d.AppointmentID != first.ActionID {
		t.Fatalf("a second booking once the first stands: %+v; want rejected already_booked_in_call naming %s", again, first.ActionID)
	}
	if n := len(f.ours(t)); n != 1 {
		t.Fatalf("the calendar holds %d events of oncecall's, want 1: nothing may be sent for a refused booking", n)
	}
	args := c.book(2)
	args["booking_ref"] = "second"
	if second := c.tool(t, e.URL, "book_appointment", "call-one", args); second.Outcome != "confirmed" {
		t.Fatalf("a second booking asked for by name: %+v", second)
	}
	// (Its own booking_ref: the slot's refusal in call-one, moments ago, is
	// held for duplicates of that request.)
	args = c.book(1)
	args["booking_ref"] = "call-two"
	if other := c.tool(t, e.URL, "book_appointment", "call-two", args); other.Outcome != "confirmed" {
		t.Fatalf("a booking in another call: %+v", other)
	}
	if n := len(f.ours(t)); n != 3 {
		t.Fatalf("the calendar holds %d events of oncecall's, want 3", n)
	}
}

// While a move waits for the calendar's answer, another change of the
// appointment is refused and nothing is sent; and a move of an appointment
// someone edited in the calendar since oncecall last saw it is refused
// EVENT_CHANGED: the person's change stands, never overwritten.
func TestCalendarsChangesOfOneAppointmentNeverRace(t *testing.T) {
	t.Parallel()
	for _, name := range []string{oncecall.CalendarGoogle, oncecall.CalendarMicrosoft} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "race-"+name)
			booked := c.tool(t, e.URL, "book_appointment", "call-race", c.book(0))
			if booked.Outcome != "confirmed" {
				t.Fatalf("booking: %+v", booked)
			}
			f.sim.Fault(simRule("drop_response", "write"))
			moving := c.tool(t, e.URL, "reschedule_appointment", "call-race", map[string]any{"appointment_id": booked.ActionID, "slot_id": c.slots[1]})
			if moving.Outcome != "pending" {
				t.Fatalf("a move whose answer was lost: %+v", moving)
			}
			cancel := c.tool(t, e.URL, "cancel_appointment", "call-race", map[string]any{"appointment_id": booked.ActionID})
			if cancel.Outcome != "rejected" || cancel.Reason != "appointment_change_in_progress" {
				t.Fatalf("a cancel while the move waits: %+v", cancel)
			}
			if ours := f.ours(t); len(ours) != 1 || !ours[0].Start.Equal(c.starts[1]) {
				t.Fatalf("the calendar holds %+v, want the one event, moved and not cancelled", ours)
			}
			waitFor(t, "the move to be settled", 20*time.Second, func() bool {
				if _, err := e.Main.Reconciler().RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
				return e.Count("SELECT count(*) FROM actions WHERE id = $1 AND outcome = 'confirmed'", moving.ActionID) == 1
			})

			// The clinic drags the appointment in the calendar; oncecall has
			// not read it since: a move now is refused, and the clinic's
			// time stands.
			ours := f.ours(t)
			theirs := c.starts[0].Add(5 * time.Hour)
			f.move(t, ours[0].ID, theirs, theirs.Add(30*time.Minute))
			stale := c.tool(t, e.URL, "reschedule_appointment", "call-race-2", map[string]any{"appointment_id": booked.ActionID, "slot_id": c.slots[2]})
			if stale.Outcome != "rejected" || stale.Reason != "event_changed" {
				t.Fatalf("a move of an appointment changed in the calendar: %+v; want rejected event_changed", stale)
			}
			if ours := f.ours(t); len(ours) != 1 || !ours[0].Start.Equal(theirs) {
				t.Fatalf("the calendar holds %+v, want the clinic's time %s kept", ours, theirs)
			}
		})
	}
}

// A read of the calendar that lags behind oncecall's own write (the
// provider's visibility delay: the event is not there yet) is not taken
// for the event's deletion: the same tool call again hears the booking
// confirmed (not a new booking, rejected because the first holds the
// slot), and the appointment is listed.
func TestCalendarsALaggingReadIsNotADeletion(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newCalendarClinic(t, e.Store, f, "lag-"+name)
			booked := c.tool(t, e.URL, "book_appointment", "call-lag", c.book(0))
			if booked.Outcome != "confirmed" {
				t.Fatalf("booking: %+v", booked)
			}
			f.sim.Fault(simkit.Rule{Fault: "lookup_lag=30s", On: simkit.OnRead})
			again := c.tool(t, e.URL, "book_appointment", "call-lag", c.book(0))
			if again.Outcome != "confirmed" || again.ActionID != booked.ActionID {
				t.Fatalf("the same call again while reads lag: %+v; want the booking %s confirmed", again, booked.ActionID)
			}
			if got := c.listed(t, e.URL); len(got) != 1 || got[0].ID != booked.ActionID {
				t.Fatalf("listed while reads lag: %+v; want the booking", got)
			}
			if n := e.Count("SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active'", booked.ActionID); n != 1 {
				t.Fatal("a lagging read marked the appointment cancelled")
			}
		})
	}
}
