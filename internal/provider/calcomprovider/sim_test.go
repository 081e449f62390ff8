package calcomprovider_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calcomprovider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendar/calendartest"
	"github.com/oncecall/oncecall/internal/sim/calcom"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	calsimtest.Remove()
	os.Exit(code)
}

const eventType = "1001"

type fixture struct {
	sim   *calsimtest.Process
	cal   *calcomprovider.Calendar
	steps calendar.Steps
}

func setup(t *testing.T) fixture {
	t.Helper()
	sim := calsimtest.Start(t, "calcom")
	cal, err := calcomprovider.New(calcomprovider.Config{APIKey: calcom.DefaultAPIKey, BaseURL: sim.URL, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{sim: sim, cal: cal, steps: calendar.Steps{Calendar: cal}}
}

func (f fixture) ledger(t *testing.T) []calcom.LedgerBooking {
	t.Helper()
	var l calcom.Ledger
	f.sim.Call("GET", "/sim/ledger", nil, 200, &l)
	return l.Bookings
}

func (f fixture) booking(t *testing.T, uid string) calcom.LedgerBooking {
	t.Helper()
	for _, b := range f.ledger(t) {
		if b.Booking.UID == uid {
			return b
		}
	}
	t.Fatalf("no booking %s in the ledger", uid)
	return calcom.LedgerBooking{}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Twenty identical creates at once: Cal.com makes one booking and refuses
// the rest; each refusal is settled by the lookup as that booking.
func TestCreateStormMakesOneBooking(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(eventType, calendartest.Day(9, 0), 30))
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
	l := f.ledger(t)
	if len(l) != 1 {
		t.Fatalf("ledger holds %d bookings, want 1", len(l))
	}
	for i := range 20 {
		if errs[i] != nil || ids[i] != l[0].Booking.UID {
			t.Errorf("create %d: %q, %v; want booking %s", i, ids[i], errs[i], l[0].Booking.UID)
		}
	}
	if l[0].Refused != 19 || l[0].Booking.Metadata[calendar.MarkKey] != st.Key() {
		t.Errorf("booking refused %d creates with metadata %v; want 19 and the step's key", l[0].Refused, l[0].Booking.Metadata)
	}
}

// A create whose answer was lost after Cal.com booked it is found by the
// key in its metadata; the create sent again is refused by Cal.com, and
// that refusal is settled by the lookup as the same booking.
func TestAnswerLostAfterCreateIsSettledByLookup(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{simkit.FaultDropResponse, simkit.FaultFailAfterCommit} {
		t.Run(fault, func(t *testing.T) {
			f := setup(t)
			st := calendartest.NewStep("calendar")
			w := st.Write(t, calendar.Book, st.Payload(eventType, calendartest.Day(10, 0), 30))
			f.sim.Fault(simkit.Rule{Fault: fault, Count: 1})
			if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
				t.Fatalf("write with %s: %v, want ambiguous", fault, err)
			}
			l := f.ledger(t)
			if len(l) != 1 {
				t.Fatalf("ledger holds %d bookings, want 1", len(l))
			}
			rec, found, err := f.steps.LookupWrite(ctx(t), w)
			if err != nil || !found || rec.ID != l[0].Booking.UID || rec.Status != "committed" {
				t.Fatalf("lookup: %+v found=%v err=%v; want committed %s", rec, found, err, l[0].Booking.UID)
			}
			again, err := f.steps.Write(ctx(t), w)
			if err != nil || again.ID != l[0].Booking.UID {
				t.Fatalf("re-send: %+v, %v; want %s", again, err, l[0].Booking.UID)
			}
			if l := f.ledger(t); len(l) != 1 || l[0].Refused != 1 {
				t.Errorf("ledger %+v: want one booking that refused the re-send", l)
			}
		})
	}
}

// A lookup that lags finds nothing: it is evidence only past the
// visibility delay, which the driver waits out before sending again.
func TestLaggingLookupIsNotEvidence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(eventType, calendartest.Day(11, 0), 30))
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	f.sim.Fault(simkit.Rule{Fault: "lookup_lag=1h"})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write: %v, want ambiguous", err)
	}
	if _, found, err := f.steps.LookupWrite(ctx(t), w); found || err != nil {
		t.Fatalf("lookup during the lag: found=%v err=%v, want not found", found, err)
	}
	if tr := f.cal.Traits(); tr.HonoursKeys || tr.VisibilityDelay != calcomprovider.DefaultVisibilityDelay {
		t.Fatalf("traits %+v: the driver would re-send before a lookup can be believed", tr)
	}
	f.sim.ClearFaults()
	if rec, found, err := f.steps.LookupWrite(ctx(t), w); !found || err != nil || rec.ID != f.ledger(t)[0].Booking.UID {
		t.Fatalf("lookup after the lag: %+v found=%v err=%v", rec, found, err)
	}
}

// A slot someone booked on Cal.com's own page is not offered, and a
// booking of it is rejected SLOT_UNAVAILABLE with nothing made.
func TestDirectBookingIsNotOffered(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := calendartest.Day(10, 0)
	f.sim.Call("POST", "/sim/bookings", calcom.Direct{EventTypeID: 1001, Start: at}, 201, nil)
	a, err := f.cal.Availability(ctx(t), eventType, calendartest.Day(8, 0), calendartest.Day(12, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Slots || len(a.Open) != 7 {
		t.Fatalf("open slots %+v, want the 7 half hours from 8:00 to 12:00 but 10:00", a.Open)
	}
	if a.Free(calendar.Span{Start: at, End: at.Add(30 * time.Minute)}) || !a.Free(calendar.Span{Start: at.Add(30 * time.Minute), End: at.Add(time.Hour)}) {
		t.Errorf("free times are wrong: %+v", a.Open)
	}
	st := calendartest.NewStep("calendar")
	_, err = f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(eventType, at, 30)))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.SlotUnavailable {
		t.Fatalf("booking the taken slot: %v, want SLOT_UNAVAILABLE", err)
	}
	if n := len(f.ledger(t)); n != 1 {
		t.Errorf("ledger holds %d bookings, want the one made directly", n)
	}
}

// A reschedule makes a new uid; the step records it and the uid it
// replaced. A lost answer is found through the old booking's link, and the
// reschedule sent again is the same one, not a third booking.
func TestRescheduleGivesANewUIDTrackedFromTheOld(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(eventType, at, 30)))
	if err != nil {
		t.Fatal(err)
	}
	mv := calendartest.NewStep("calendar")
	to := at.Add(4 * time.Hour)
	p := mv.Payload(eventType, to, 30)
	p.Event = &calendar.EventRef{ID: rec.ID}
	w := mv.Write(t, calendar.Reschedule, p)
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("reschedule: %v, want ambiguous", err)
	}
	found, ok, err := f.steps.LookupWrite(ctx(t), w)
	if err != nil || !ok || found.ID == rec.ID || found.Data["replaces"] != rec.ID || found.Data["start"] != to.Format(time.RFC3339) {
		t.Fatalf("lookup of the reschedule: %+v found=%v err=%v; want a new uid replacing %s at %s", found, ok, err, rec.ID, to)
	}
	again, err := f.steps.Write(ctx(t), w)
	if err != nil || again.ID != found.ID {
		t.Fatalf("re-sent reschedule: %+v, %v; want %s", again, err, found.ID)
	}
	if n := len(f.ledger(t)); n != 2 {
		t.Fatalf("ledger holds %d bookings, want the old and the new", n)
	}
	old, next := f.booking(t, rec.ID), f.booking(t, found.ID)
	if old.Booking.Status != "cancelled" || old.Booking.RescheduledToUID != found.ID || next.Booking.RescheduledFromUID != rec.ID || !next.Start.Equal(to) {
		t.Errorf("old %+v, new %+v: want them linked, the old cancelled", old.Booking, next.Booking)
	}
}

// A booking the attendee rescheduled on Cal.com is listed at its new time
// and the create's lookup follows it there; oncecall's move of the old uid
// is refused EVENT_CHANGED, and a cancel of the old uid cancels the
// booking that stands.
func TestBookingRescheduledInCalcomIsFollowed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	book := st.Write(t, calendar.Book, st.Payload(eventType, at, 30))
	rec, err := f.steps.Write(ctx(t), book)
	if err != nil {
		t.Fatal(err)
	}
	moved := at.Add(2 * time.Hour)
	var now calcom.LedgerBooking
	f.sim.Call("POST", "/sim/bookings/reschedule", calcom.Direct{UID: rec.ID, Start: moved}, 201, &now)
	list, err := f.cal.Events(ctx(t), calendar.EventQuery{CalendarID: eventType, From: at.Add(-time.Hour), To: at.Add(6 * time.Hour), Customer: st.Customer.String()})
	if err != nil || len(list) != 1 || list[0].ID != now.Booking.UID || !list[0].Start.Equal(moved) {
		t.Fatalf("the customer's bookings: %+v, %v; want %s at %s", list, err, now.Booking.UID, moved)
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), book); !found || err != nil || got.ID != now.Booking.UID || got.Status != "committed" {
		t.Fatalf("lookup of the create: %+v found=%v err=%v; want the booking that stands", got, found, err)
	}

	mv := calendartest.NewStep("calendar")
	p := mv.Payload(eventType, at.Add(5*time.Hour), 30)
	p.Event = &calendar.EventRef{ID: rec.ID}
	_, err = f.steps.Write(ctx(t), mv.Write(t, calendar.Reschedule, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.EventChanged {
		t.Fatalf("move of the old uid: %v, want EVENT_CHANGED", err)
	}

	cn := calendartest.NewStep("calendar")
	cp := cn.Payload(eventType, at, 30)
	cp.Event = &calendar.EventRef{ID: rec.ID}
	cancel := cn.Write(t, calendar.CancelOp, cp)
	for i := range 2 {
		if got, err := f.steps.Write(ctx(t), cancel); err != nil || got.ID != now.Booking.UID {
			t.Fatalf("cancel %d: %+v, %v; want %s cancelled", i, got, err, now.Booking.UID)
		}
	}
	if b := f.booking(t, now.Booking.UID); b.Booking.Status != "cancelled" {
		t.Errorf("the standing booking is %s, want cancelled", b.Booking.Status)
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), cancel); !found || err != nil || got.ID != now.Booking.UID {
		t.Fatalf("lookup of the cancel: %+v found=%v err=%v", got, found, err)
	}
}

// Cancel needs the booking's string uid: the numeric id is not found.
func TestCancelNeedsTheUID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	if _, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(eventType, calendartest.Day(14, 0), 30))); err != nil {
		t.Fatal(err)
	}
	b := f.ledger(t)[0]
	cn := calendartest.NewStep("calendar")
	p := cn.Payload(eventType, calendartest.Day(14, 0), 30)
	p.Event = &calendar.EventRef{ID: strconv.Itoa(b.Booking.ID)}
	_, err := f.steps.Write(ctx(t), cn.Write(t, calendar.CancelOp, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.EventNotFound {
		t.Fatalf("cancel by the numeric id: %v, want EVENT_NOT_FOUND", err)
	}
	if got := f.booking(t, b.Booking.UID); got.Booking.Status != "accepted" {
		t.Errorf("booking is %s, want accepted", got.Booking.Status)
	}
}

// A customer with neither e-mail nor phone cannot be booked on Cal.com:
// rejected before anything is sent.
func TestCustomerWithoutContactIsRejected(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	p := st.Payload(eventType, calendartest.Day(9, 0), 30)
	p.Customer.Email, p.Customer.Phone = "", ""
	_, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calcomprovider.NoContact {
		t.Fatalf("write: %v, want %s", err, calcomprovider.NoContact)
	}
	if n := len(f.ledger(t)); n != 0 {
		t.Errorf("ledger holds %d bookings, want none", n)
	}
}
