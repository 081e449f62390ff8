package calendars_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendar/calendartest"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/googlecal"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	calsimtest.Remove()
	os.Exit(code)
}

const calID = "dr-ruiz@clinic.example"

type fixture struct {
	store *db.Store
	sim   *calsimtest.Process
	svc   *calendars.Service
	env   map[string]string
}

func setup(t *testing.T) fixture {
	t.Helper()
	f := fixture{store: db.New(pgtest.NewPool(t)), sim: calsimtest.Start(t, "google"), env: map[string]string{}}
	key, err := calsimtest.GoogleKey(f.sim.URL + "/token")
	if err != nil {
		t.Fatal(err)
	}
	f.env["GOOGLE_KEY"] = string(key)
	f.svc = calendars.New(calendars.Config{
		Store:   f.store,
		Secrets: calendars.Secrets{Getenv: func(k string) string { return f.env[k] }},
		Tuning:  calendars.Tuning{Timeout: 3 * time.Second, VisibilityDelay: time.Second},
	})
	return f
}

// connect creates a tenant whose single calendar is calID at the fake,
// its key read from the variable named.
func (f fixture) connect(t *testing.T, name, variable string) oncecall.CalendarConnection {
	t.Helper()
	tenant, _, err := f.store.CreateTenant(context.Background(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.store.ConnectCalendar(context.Background(), oncecall.CalendarConnection{
		TenantID: tenant.ID, Provider: oncecall.CalendarGoogle, Credentials: "env:" + variable, BaseURL: f.sim.URL + "/calendar/v3",
	}, []oncecall.CalendarMapping{{CalendarID: calID}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f fixture) ledger(t *testing.T) []googlecal.LedgerEvent {
	t.Helper()
	var l googlecal.Ledger
	f.sim.Call("GET", "/sim/ledger", nil, 200, &l)
	return l.Events
}

func TestOnlyConnectionsWhoseSecretIsReadableAreReached(t *testing.T) {
	t.Parallel()
	f := setup(t)
	readable := f.connect(t, "readable", "GOOGLE_KEY")
	unreadable := f.connect(t, "unreadable", "NOT_SET_HERE")
	reached, err := f.svc.Reachable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(reached) != 1 || reached[0].Identity != calendars.Identity(readable) || reached[0].Capability != provider.Calendar {
		t.Fatalf("reachable %+v, want only %+v", reached, calendars.Identity(readable))
	}
	if _, ok, err := f.svc.Reach(t.Context(), provider.Calendar, calendars.Identity(unreadable)); ok || err != nil {
		t.Fatalf("reach a connection whose secret is not here: %v, %v; want false, nil", ok, err)
	}
	p, ok, err := f.svc.Reach(t.Context(), provider.Calendar, calendars.Identity(readable))
	if !ok || err != nil {
		t.Fatalf("reach the readable connection: %v, %v", ok, err)
	}
	if got := provider.IdentityOf(p); got != calendars.Identity(readable) {
		t.Fatalf("the provider reached names itself %+v, want %+v", got, calendars.Identity(readable))
	}
	other := calendars.Identity(readable)
	other.Kind = oncecall.CalendarMicrosoft
	if _, ok, _ := f.svc.Reach(t.Context(), provider.Calendar, other); ok {
		t.Fatal("a step planned for another provider at the same connection id was reached")
	}
}

func TestACreateOfATimeTheCalendarShowsTakenIsNotSent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	conn := f.connect(t, "clinic", "GOOGLE_KEY")
	p, ok, err := f.svc.Reach(t.Context(), provider.Calendar, calendars.Identity(conn))
	if !ok || err != nil {
		t.Fatalf("reach: %v, %v", ok, err)
	}
	start := calendartest.Day(10, 0)
	// The time is free when read, and cached so.
	a, err := f.svc.Availability(t.Context(), conn.TenantID, calID, start, start.Add(time.Hour), false)
	if err != nil || !a.Free(calendar.Span{Start: start, End: start.Add(time.Hour)}) {
		t.Fatalf("availability before: %+v, %v; want free", a, err)
	}
	// Someone books it in the calendar directly.
	f.sim.Call("POST", "/sim/events", map[string]any{"calendar": calID, "start": start, "end": start.Add(time.Hour), "summary": "walk-in"}, 201, nil)

	st := calendartest.NewStep("calendar")
	st.Tenant = conn.TenantID
	_, err = p.Write(t.Context(), st.Write(t, calendar.Book, st.Payload(calID, start, 60)))
	var rej *provider.Rejected
	if !errors.As(err, &rej) || rej.Code != calendar.SlotUnavailable {
		t.Fatalf("write of a taken time: %v, want rejected SLOT_UNAVAILABLE", err)
	}
	if got := f.ledger(t); len(got) != 1 || !got[0].Direct {
		t.Fatalf("ledger holds %d events, want only the direct one: the create must not be sent", len(got))
	}

	// A free time is booked, and the write drops what was read: the next
	// read shows it busy at once.
	free := start.Add(2 * time.Hour)
	if _, err := f.svc.Availability(t.Context(), conn.TenantID, calID, free, free.Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	st2 := calendartest.NewStep("calendar")
	st2.Tenant = conn.TenantID
	rec, err := p.Write(t.Context(), st2.Write(t, calendar.Book, st2.Payload(calID, free, 60)))
	if err != nil || rec.ID == "" {
		t.Fatalf("write of a free time: %+v, %v", rec, err)
	}
	a, err = f.svc.Availability(t.Context(), conn.TenantID, calID, free, free.Add(time.Hour), false)
	if err != nil || a.Free(calendar.Span{Start: free, End: free.Add(time.Hour)}) {
		t.Fatalf("availability after oncecall's own booking: %+v, %v; want busy (the write must drop the cache)", a, err)
	}
}

func TestAStepForAnotherTenantIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	conn := f.connect(t, "clinic", "GOOGLE_KEY")
	p, _, err := f.svc.Reach(t.Context(), provider.Calendar, calendars.Identity(conn))
	if err != nil {
		t.Fatal(err)
	}
	st := calendartest.NewStep("calendar") // another tenant's id
	_, err = p.Write(t.Context(), st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(11, 0), 60)))
	var rej *provider.Rejected
	if !errors.As(err, &rej) || rej.Code != calendar.InvalidPayload {
		t.Fatalf("write naming another tenant: %v, want rejected %s", err, calendar.InvalidPayload)
	}
	if got := f.ledger(t); len(got) != 0 {
		t.Fatalf("ledger holds %d events, want none", len(got))
	}
}
