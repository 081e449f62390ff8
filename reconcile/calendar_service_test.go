package reconcile_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
)

// serviceClinic is a tenant whose two practitioners, Dr. Blanco and Dr.
// Ortiz, perform one service at one location, each with their own calendar
// in the fake, and both have a slot at the same two half-hour times.
type serviceClinic struct {
	calendarClinic
	service          uuid.UUID
	blanco, ortiz    uuid.UUID
	blancoCal        string
	ortizCal         string
	second           uuid.UUID // another customer
	start, nextStart time.Time
}

func newServiceClinic(t *testing.T, store *db.Store, f calendarFake, name string) serviceClinic {
	t.Helper()
	ctx := t.Context()
	c := serviceClinic{calendarClinic: calendarClinic{org: "org-" + name}}
	tn, key, err := store.CreateTenantWith(ctx, db.NewTenant{Name: name, DashaOrgID: c.org, Timezone: "Europe/Madrid"})
	if err != nil {
		t.Fatal(err)
	}
	c.tenant, c.key = tn.ID, key
	loc, _, err := store.CreateLocation(ctx, oncecall.NewLocation{TenantID: tn.ID, Name: "Centro", Timezone: "Europe/Madrid", Address: "Calle Mayor 1"})
	if err != nil {
		t.Fatal(err)
	}
	svc, _, err := store.CreateService(ctx, oncecall.NewService{TenantID: tn.ID, Name: "Limpieza", DurationMinutes: 30})
	if err != nil {
		t.Fatal(err)
	}
	c.service = svc.ID
	practitioner := func(name string) uuid.UUID {
		p, _, err := store.CreatePractitioner(ctx, oncecall.NewPractitioner{TenantID: tn.ID, Name: name,
			LocationIDs: []uuid.UUID{loc.ID}, ServiceIDs: []uuid.UUID{svc.ID}})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	// Created in this order so that the first by name is not the first made.
	c.ortiz, c.blanco = practitioner("Dr. Ortiz"), practitioner("Dr. Blanco")
	for _, who := range []string{"Lucía", "Marta"} {
		cust, err := store.CreateCustomer(ctx, db.NewCustomer{TenantID: tn.ID, Name: who, Phone: "+3460000000" + strconv.Itoa(len(who)), Email: "x@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if c.customer == uuid.Nil {
			c.customer = cust.ID
		} else {
			c.second = cust.ID
		}
	}
	day := time.Now().UTC().AddDate(0, 0, 10)
	c.start = time.Date(day.Year(), day.Month(), day.Day(), 10, 0, 0, 0, time.UTC)
	c.nextStart = c.start.Add(30 * time.Minute)
	for _, p := range []uuid.UUID{c.blanco, c.ortiz} {
		for _, start := range []time.Time{c.start, c.nextStart} {
			if _, err := store.Pool().Exec(ctx, `INSERT INTO slots (id, tenant_id, starts_at, ends_at, practitioner_id, location_id) VALUES ($1, $2, $3, $4, $5, $6)`,
				uuid.New(), tn.ID, start, start.Add(30*time.Minute), p, loc.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.ortizCal, c.blancoCal = f.calendar, f.other()
	if _, err := store.ConnectCalendar(ctx, oncecall.CalendarConnection{
		TenantID: tn.ID, Provider: f.name, Credentials: "env:" + f.secretEnv, BaseURL: f.base, Settings: f.settings,
	}, []oncecall.CalendarMapping{{PractitionerID: c.ortiz, CalendarID: c.ortizCal}, {PractitionerID: c.blanco, CalendarID: c.blancoCal}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// other is a second calendar in the fake: another mailbox, another Cal.com
// event type.
func (f calendarFake) other() string {
	if f.name == oncecall.CalendarCalcom {
		return "4343"
	}
	return "blanco@clinic.example"
}

// directOn makes an event at [start, end) in calendar cal, as a person
// there would.
func (f calendarFake) directOn(t *testing.T, cal string, start, end time.Time) {
	t.Helper()
	if f.name == oncecall.CalendarCalcom {
		id, err := strconv.Atoi(cal)
		if err != nil {
			t.Fatal(err)
		}
		f.sim.Call("POST", "/sim/bookings", map[string]any{"event_type_id": id, "start": start, "minutes": int(end.Sub(start).Minutes())}, 201, nil)
		return
	}
	f.sim.Call("POST", "/sim/events", map[string]any{"calendar": cal, "start": start, "end": end, "summary": "walk-in"}, 201, nil)
}

// A booking by service and time on a tenant whose appointments live in
// its own calendar picks a practitioner whose calendar is free: the first
// by name is passed over when their time was taken in the calendar
// directly, and the one picked holds the only event of oncecall's. When
// nobody is free the booking is refused with the next free times and
// nothing is sent; at one of those times the first by name is booked.
func TestCalendarsBookByServiceTakesAFreePractitioner(t *testing.T) {
	t.Parallel()
	for _, name := range calendarProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startCalendarFake(t, name)
			e := inProcess(t, f)
			c := newServiceClinic(t, e.Store, f, "service-"+name)
			f.directOn(t, c.blancoCal, c.start, c.start.Add(30*time.Minute))

			a := c.tool(t, e.URL, "book_appointment", "call-service", map[string]any{
				"customer_id": c.customer, "service_id": c.service, "starts_at": c.start.Format(time.RFC3339),
			})
			var said struct {
				When         string    `json:"when"`
				Practitioner string    `json:"practitioner"`
				Service      string    `json:"service"`
				StartsAt     time.Time `json:"starts_at"`
			}
			if a.Outcome != "confirmed" || json.Unmarshal(a.Details, &said) != nil {
				t.Fatalf("book_appointment by service: %+v", a)
			}
			if said.Practitioner != "Dr. Ortiz" || said.When == "" || said.Service != "Limpieza" || !said.StartsAt.Equal(c.start) {
				t.Fatalf("the booking said %s; want Dr. Ortiz (Dr. Blanco's time is taken in the calendar), Limpieza, when, at %s", a.Details, c.start)
			}
			ours := f.ours(t)
			if len(ours) != 1 || ours[0].Calendar != c.ortizCal || ours[0].Action != a.ActionID || !ours[0].Start.Equal(c.start) {
				t.Fatalf("the calendar holds %+v; want one event of action %s in %s at %s", ours, a.ActionID, c.ortizCal, c.start)
			}
			if n := e.Count(`SELECT count(*) FROM calendar_appointments WHERE id = $1 AND practitioner_id = $2 AND service_id = $3
				AND status = 'active' AND event_id = $4`, a.ActionID, c.ortiz, c.service, ours[0].ID); n != 1 {
				t.Fatalf("the appointment's record does not name Dr. Ortiz, the service and event %s", ours[0].ID)
			}

			// Both are taken now: nobody is free, nothing is sent.
			r := e.Post("/v1/appointments", c.key, "service-full", map[string]any{
				"customer_id": c.second, "service_id": c.service, "starts_at": c.start.Format(time.RFC3339),
			})
			var refused struct {
				Code    string `json:"code"`
				Details struct {
					Alternatives []struct {
						StartsAt     time.Time `json:"starts_at"`
						Practitioner string    `json:"practitioner"`
					} `json:"alternatives"`
				} `json:"details"`
			}
			if r.Status != http.StatusUnprocessableEntity || json.Unmarshal(r.Body, &refused) != nil || refused.Code != "NO_PRACTITIONER_FREE" {
				t.Fatalf("a booking when both calendars are taken: %d %s; want 422 NO_PRACTITIONER_FREE", r.Status, r.Body)
			}
			if len(refused.Details.Alternatives) == 0 {
				t.Fatalf("no alternatives offered: %s", r.Body)
			}
			for _, alt := range refused.Details.Alternatives {
				if !alt.StartsAt.Equal(c.nextStart) {
					t.Fatalf("alternative %+v; want only the free times at %s", alt, c.nextStart)
				}
			}
			if n := len(f.ours(t)); n != 1 {
				t.Fatalf("the calendar holds %d events of oncecall's after the refusal, want 1", n)
			}

			r = e.Post("/v1/appointments", c.key, "service-next", map[string]any{
				"customer_id": c.second, "service_id": c.service, "starts_at": c.nextStart.Format(time.RFC3339),
			})
			if r.Status != http.StatusCreated {
				t.Fatalf("a booking at the next time: %d %s; want 201", r.Status, r.Body)
			}
			id := r.JSON(t)["action_id"].(string)
			var onBlanco int
			for _, ev := range f.ours(t) {
				if ev.Action == id {
					if ev.Calendar != c.blancoCal || !ev.Start.Equal(c.nextStart) {
						t.Fatalf("the booking at the next time made %+v; want Dr. Blanco's calendar at %s", ev, c.nextStart)
					}
					onBlanco++
				}
			}
			if onBlanco != 1 {
				t.Fatalf("the booking at the next time made %d events, want 1", onBlanco)
			}
		})
	}
}
