package microsoftprovider_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendar/calendartest"
	"github.com/oncecall/oncecall/internal/provider/microsoftprovider"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/msgraph"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	calsimtest.Remove()
	os.Exit(code)
}

const mailbox = "dr.ruiz@clinic.example"

type fixture struct {
	sim   *calsimtest.Process
	cal   *microsoftprovider.Calendar
	steps calendar.Steps
}

func setup(t *testing.T) fixture {
	t.Helper()
	sim := calsimtest.Start(t, "microsoft")
	cal, err := microsoftprovider.New(microsoftprovider.Config{
		TenantID: "contoso.onmicrosoft.com", ClientID: "app-1", ClientSecret: "secret",
		BaseURL: sim.URL + "/v1.0", AuthorityURL: sim.URL, Timeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{sim: sim, cal: cal, steps: calendar.Steps{Calendar: cal}}
}

func (f fixture) ledger(t *testing.T) []msgraph.LedgerEvent {
	t.Helper()
	var l msgraph.Ledger
	f.sim.Call("GET", "/sim/ledger", nil, 200, &l)
	return l.Events
}

// one returns the only live event of the ledger.
func (f fixture) one(t *testing.T) msgraph.LedgerEvent {
	t.Helper()
	var live []msgraph.LedgerEvent
	for _, e := range f.ledger(t) {
		if !e.Deleted {
			live = append(live, e)
		}
	}
	if len(live) != 1 {
		t.Fatalf("ledger holds %d live events, want 1: %+v", len(live), live)
	}
	return live[0]
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Twenty identical creates at once (one transactionId) make one event.
func TestCreateStormMakesOneEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(mailbox, calendartest.Day(9, 0), 30))
	var wg sync.WaitGroup
	ids := make([]string, 20)
	errs := make([]error, 20)
	for i := range 20 {
		wg.Go(func() {
			rec, err := f.steps.Write(ctx(t), w)
			ids[i], errs[i] = rec.ID, err
		})
	}
	wg.Wait()
	e := f.one(t)
	for i := range 20 {
		if errs[i] != nil || ids[i] != e.Event.ID {
			t.Errorf("create %d: %q, %v; want event %s", i, ids[i], errs[i], e.Event.ID)
		}
	}
	if e.Posts != 20 || e.Event.TransactionID != st.Key() {
		t.Errorf("event had %d posts with transactionId %q, want 20 with the step's key", e.Posts, e.Event.TransactionID)
	}
	if n := len(f.ledger(t)); n != 1 {
		t.Errorf("ledger holds %d events, want 1", n)
	}
}

// A create whose answer is lost after Graph made it (the connection cut, or
// a 500) is found by its key's extended property, and a re-send with the
// same transactionId answers the same event.
func TestAnswerLostAfterCreateIsSettledByLookup(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{simkit.FaultDropResponse, simkit.FaultFailAfterCommit} {
		t.Run(fault, func(t *testing.T) {
			f := setup(t)
			st := calendartest.NewStep("calendar")
			w := st.Write(t, calendar.Book, st.Payload(mailbox, calendartest.Day(10, 0), 45))
			f.sim.Fault(simkit.Rule{Fault: fault, Count: 1})
			if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
				t.Fatalf("write with %s: %v, want ambiguous", fault, err)
			}
			e := f.one(t)
			rec, found, err := f.steps.LookupWrite(ctx(t), w)
			if err != nil || !found || rec.ID != e.Event.ID || rec.Status != "committed" {
				t.Fatalf("lookup: %+v found=%v err=%v; want committed %s", rec, found, err, e.Event.ID)
			}
			again, err := f.steps.Write(ctx(t), w)
			if err != nil || again.ID != e.Event.ID {
				t.Fatalf("re-send: %+v, %v; want %s", again, err, e.Event.ID)
			}
			if e := f.one(t); e.Posts != 2 {
				t.Errorf("event had %d posts, want 2", e.Posts)
			}
		})
	}
}

// A lookup that lags finds nothing (not evidence until the visibility
// delay passed); a re-send meanwhile gets the first event, not a second.
func TestLaggingLookupIsNotEvidence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(mailbox, calendartest.Day(11, 0), 30))
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	f.sim.Fault(simkit.Rule{Fault: "lookup_lag=1h"})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write: %v, want ambiguous", err)
	}
	if _, found, err := f.steps.LookupWrite(ctx(t), w); found || err != nil {
		t.Fatalf("lookup during the lag: found=%v err=%v, want not found", found, err)
	}
	if microsoftprovider.DefaultVisibilityDelay <= 0 || f.cal.Traits().VisibilityDelay != microsoftprovider.DefaultVisibilityDelay {
		t.Fatalf("visibility delay %s: a lagging lookup would be believed", f.cal.Traits().VisibilityDelay)
	}
	again, err := f.steps.Write(ctx(t), w)
	if e := f.one(t); err != nil || again.ID != e.Event.ID {
		t.Fatalf("re-send: %+v, %v; want %s", again, err, e.Event.ID)
	}
}

// A slot someone booked in Outlook is busy.
func TestDirectBookingIsBusy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := calendartest.Day(10, 0)
	f.sim.Call("POST", "/sim/events", msgraph.DirectEvent{Calendar: mailbox, Start: at, End: at.Add(time.Hour), Summary: "Staff meeting"}, 201, nil)
	a, err := f.cal.Availability(ctx(t), mailbox, at.Add(-2*time.Hour), at.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Busy) != 1 || !a.Busy[0].Start.Equal(at) || !a.Busy[0].End.Equal(at.Add(time.Hour)) {
		t.Fatalf("busy = %+v, want [%s, %s)", a.Busy, at, at.Add(time.Hour))
	}
	if a.Free(calendar.Span{Start: at.Add(15 * time.Minute), End: at.Add(45 * time.Minute)}) || !a.Free(calendar.Span{Start: at.Add(time.Hour), End: at.Add(2 * time.Hour)}) {
		t.Errorf("free times are wrong: %+v", a)
	}
}

// An event someone moved in Outlook is read and listed at its new time; a
// move sent with the etag read before is refused EVENT_CHANGED.
func TestMovedEventIsReadAtItsNewTimeAndAStaleMoveIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(mailbox, at, 30)))
	if err != nil {
		t.Fatal(err)
	}
	read, err := f.cal.Event(ctx(t), mailbox, rec.ID)
	if err != nil || read.Marks.Key != st.Key() {
		t.Fatalf("read: %+v, %v; want the booking's marks", read, err)
	}
	moved := at.Add(3 * time.Hour)
	f.sim.Call("POST", "/sim/events/move", msgraph.DirectEvent{Calendar: mailbox, ID: rec.ID, Start: moved, End: moved.Add(30 * time.Minute)}, 200, nil)
	if now, err := f.cal.Event(ctx(t), mailbox, rec.ID); err != nil || !now.Start.Equal(moved) {
		t.Fatalf("event after the move: %+v, %v; want start %s", now, err, moved)
	}
	for _, q := range []calendar.EventQuery{
		{CalendarID: mailbox, From: at.Add(-time.Hour), To: at.Add(6 * time.Hour)},
		{CalendarID: mailbox, From: at.Add(-time.Hour), To: at.Add(6 * time.Hour), Customer: st.Customer.String()},
	} {
		list, err := f.cal.Events(ctx(t), q)
		if err != nil || len(list) != 1 || !list[0].Start.Equal(moved) {
			t.Fatalf("events %+v: %+v, %v; want one at %s", q, list, err, moved)
		}
	}
	mv := calendartest.NewStep("calendar")
	p := mv.Payload(mailbox, at.Add(time.Hour), 30)
	p.Event = &calendar.EventRef{ID: rec.ID, ETag: read.ETag}
	_, err = f.steps.Write(ctx(t), mv.Write(t, calendar.Reschedule, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.EventChanged {
		t.Fatalf("move with a stale etag: %v, want EVENT_CHANGED", err)
	}
	if e := f.one(t); !e.Start.Equal(moved) {
		t.Errorf("the event is at %s, want the person's %s", e.Start, moved)
	}
}

// A move's lost answer is found by its key among the event's moves; the
// re-send confirms it without a second change.
func TestMoveIsRetrySafe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(mailbox, at, 30)))
	if err != nil {
		t.Fatal(err)
	}
	mv := calendartest.NewStep("calendar")
	to := at.Add(2 * time.Hour)
	p := mv.Payload(mailbox, to, 30)
	p.Event = &calendar.EventRef{ID: rec.ID, ETag: rec.Data["etag"]}
	w := mv.Write(t, calendar.Reschedule, p)
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultFailAfterCommit, Count: 1})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("move: %v, want ambiguous", err)
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), w); !found || err != nil || got.Data["start"] != to.Format(time.RFC3339) {
		t.Fatalf("lookup of the move: %+v found=%v err=%v", got, found, err)
	}
	if got, err := f.steps.Write(ctx(t), w); err != nil || got.ID != rec.ID {
		t.Fatalf("re-sent move: %+v, %v", got, err)
	}
	if e := f.one(t); !e.Start.Equal(to) {
		t.Errorf("event at %s, want %s", e.Start, to)
	}
}

// A cancel deletes the event; sent again it is the same cancel, and its
// lookup finds the event gone.
func TestCancelIsRetrySafe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(mailbox, calendartest.Day(15, 0), 30)))
	if err != nil {
		t.Fatal(err)
	}
	cn := calendartest.NewStep("calendar")
	p := cn.Payload(mailbox, calendartest.Day(15, 0), 30)
	p.Event = &calendar.EventRef{ID: rec.ID}
	w := cn.Write(t, calendar.CancelOp, p)
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("cancel: %v, want ambiguous", err)
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), w); !found || err != nil || got.Status != "committed" {
		t.Fatalf("lookup of the cancel: %+v found=%v err=%v", got, found, err)
	}
	if _, err := f.steps.Write(ctx(t), w); err != nil {
		t.Fatalf("re-sent cancel: %v", err)
	}
	l := f.ledger(t)
	if len(l) != 1 || !l[0].Deleted {
		t.Fatalf("ledger %+v, want the one event deleted", l)
	}
}

// A create that could not get an access token was never sent: it may be
// sent again safely, and nothing was made.
func TestNoTokenIsNotSent(t *testing.T) {
	t.Parallel()
	sim := calsimtest.Start(t, "microsoft")
	cal, err := microsoftprovider.New(microsoftprovider.Config{
		TenantID: "contoso.onmicrosoft.com", ClientID: "app-1", ClientSecret: "secret",
		BaseURL: sim.URL + "/v1.0", AuthorityURL: sim.URL + "/no-such-issuer", Timeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := calendartest.NewStep("calendar")
	_, err = calendar.Steps{Calendar: cal}.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(mailbox, calendartest.Day(9, 0), 30)))
	if !errors.Is(err, provider.ErrNotSent) {
		t.Fatalf("write without a token: %v, want not sent", err)
	}
	var l msgraph.Ledger
	sim.Call("GET", "/sim/ledger", nil, 200, &l)
	if len(l.Events) != 0 {
		t.Errorf("ledger holds %d events, want none", len(l.Events))
	}
}
