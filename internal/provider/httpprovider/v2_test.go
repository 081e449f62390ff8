package httpprovider_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider/httpprovider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// v2 is a version 2 calendar payload: the practitioner's calendar, the
// time in UTC and on the location's clock, and the event for a move or a
// cancel.
func v2(calendar string, start time.Time, minutes int, event string) map[string]any {
	madrid, _ := time.LoadLocation("Europe/Madrid")
	end := start.Add(time.Duration(minutes) * time.Minute)
	p := map[string]any{
		"version": 2, "tenant_id": "t-1", "action_id": "a-1",
		"start":        map[string]string{"utc": start.UTC().Format(time.RFC3339), "local": start.In(madrid).Format("2006-01-02T15:04:05"), "zone": "Europe/Madrid"},
		"end":          map[string]string{"utc": end.UTC().Format(time.RFC3339), "local": end.In(madrid).Format("2006-01-02T15:04:05"), "zone": "Europe/Madrid"},
		"practitioner": map[string]string{"id": "p-1", "name": "Dr. Ana Ruiz", "calendar_id": calendar},
		"service":      map[string]string{"name": "Cleaning"},
		"customer":     map[string]string{"id": "c-1", "name": "Lucía", "phone": "+34600000001"},
	}
	if event != "" {
		p["event"] = map[string]string{"id": event}
	}
	return p
}

// A version 2 calendar is a calendar: a booking over another on the same
// calendar is refused, the same time on another calendar is not; a move
// keeps the booking's event and is refused over another booking or for an
// event it does not hold; a cancel frees the time. Every answer says which
// event it made or changed.
func TestVersion2CalendarHoldsEventsByCalendarAndTime(t *testing.T) {
	t.Parallel()
	s, c := setup(t, providersim.Config{})
	at := time.Date(2031, 3, 4, 9, 0, 0, 0, time.UTC)
	first, err := c.Write(ctx, "calendar", "k-1", "a-1/calendar", "appointment.book", v2("ana", at, 60, ""))
	if err != nil || first.Data["event_id"] != first.ID || first.Data["start"] != "2031-03-04T09:00:00Z" || first.Data["calendar_id"] != "ana" {
		t.Fatalf("first booking: %+v, %v", first, err)
	}
	_, err = c.Write(ctx, "calendar", "k-2", "a-2/calendar", "appointment.book", v2("ana", at.Add(30*time.Minute), 60, ""))
	var rej *httpprovider.Rejected
	if !errors.As(err, &rej) || rej.Code != "SLOT_UNAVAILABLE" {
		t.Fatalf("an overlapping booking: %v, want SLOT_UNAVAILABLE", err)
	}
	if _, err := c.Write(ctx, "calendar", "k-3", "a-3/calendar", "appointment.book", v2("luis", at, 60, "")); err != nil {
		t.Fatalf("the same time on another calendar: %v", err)
	}
	second, err := c.Write(ctx, "calendar", "k-4", "a-4/calendar", "appointment.book", v2("ana", at.Add(2*time.Hour), 60, ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Write(ctx, "calendar", "k-5", "a-5/calendar", "appointment.reschedule", v2("ana", at.Add(90*time.Minute), 60, first.ID))
	if !errors.As(err, &rej) || rej.Code != "SLOT_UNAVAILABLE" {
		t.Fatalf("a move over another booking: %v, want SLOT_UNAVAILABLE", err)
	}
	moved, err := c.Write(ctx, "calendar", "k-6", "a-6/calendar", "appointment.reschedule", v2("ana", at.Add(30*time.Minute), 60, first.ID))
	if err != nil || moved.Data["event_id"] != first.ID || moved.Data["start"] != "2031-03-04T09:30:00Z" {
		t.Fatalf("a move of the first booking over its own time: %+v, %v; want its event at 09:30", moved, err)
	}
	_, err = c.Write(ctx, "calendar", "k-7", "a-7/calendar", "appointment.reschedule", v2("ana", at.Add(5*time.Hour), 60, "cal_nosuch"))
	if !errors.As(err, &rej) || rej.Code != "EVENT_NOT_FOUND" {
		t.Fatalf("a move of an unknown event: %v, want EVENT_NOT_FOUND", err)
	}
	cancel := v2("ana", time.Time{}, 0, second.ID)
	delete(cancel, "start")
	delete(cancel, "end")
	if rec, err := c.Write(ctx, "calendar", "k-8", "a-8/calendar", "appointment.cancel", cancel); err != nil || rec.Data["status"] != "cancelled" || rec.Data["event_id"] != second.ID {
		t.Fatalf("cancel: %+v, %v", rec, err)
	}
	_, err = c.Write(ctx, "calendar", "k-9", "a-9/calendar", "appointment.reschedule", v2("ana", at.Add(6*time.Hour), 60, second.ID))
	if !errors.As(err, &rej) || rej.Code != "EVENT_CANCELLED" {
		t.Fatalf("a move of a cancelled event: %v, want EVENT_CANCELLED", err)
	}
	if _, err := c.Write(ctx, "calendar", "k-10", "a-10/calendar", "appointment.book", v2("ana", at.Add(2*time.Hour), 60, "")); err != nil {
		t.Fatalf("a booking of the cancelled time: %v", err)
	}
	if n := len(s.Ledger("calendar")); n != 6 {
		t.Fatalf("ledger holds %d calendar writes, want 6 (4 bookings, a move, a cancel)", n)
	}
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A write confirmed later (the pending fault) answers Pending, not a
// record: lookups and a re-send with the key say pending until it is
// decided, then committed; the ledger lists it only then.
func TestAWriteDecidedLaterIsPendingUntilItIs(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: time.Date(2031, 1, 1, 8, 0, 0, 0, time.UTC)}
	s, c := setup(t, providersim.Config{Now: clock.Now})
	payload := v2("ana", time.Date(2031, 3, 4, 9, 0, 0, 0, time.UTC), 30, "")
	s.Fault("calendar", "pending=1m", 1)
	rec, err := c.Write(ctx, "calendar", "k-1", "a-1/calendar", "appointment.book", payload)
	wantClass(t, err, httpprovider.ClassPending)
	if rec.ID == "" || rec.Status != httpprovider.StatusPending {
		t.Fatalf("pending write: %+v", rec)
	}
	if got, found, err := c.LookupByKey(ctx, "calendar", "k-1"); err != nil || !found || got.Status != httpprovider.StatusPending {
		t.Fatalf("lookup before the decision: %+v, %v, %v; want pending", got, found, err)
	}
	if _, err := c.Write(ctx, "calendar", "k-1", "a-1/calendar", "appointment.book", payload); httpprovider.ClassOf(err) != httpprovider.ClassPending {
		t.Fatalf("re-send before the decision: %v, want pending", err)
	}
	if n := len(s.Ledger("calendar")); n != 0 {
		t.Fatalf("ledger lists %d writes before the decision, want 0", n)
	}
	clock.Add(time.Minute)
	again, err := c.Write(ctx, "calendar", "k-1", "a-1/calendar", "appointment.book", payload)
	if err != nil || again.ID != rec.ID || again.Status != httpprovider.StatusCommitted || !again.Replayed {
		t.Fatalf("re-send after the decision: %+v, %v; want the same write, committed", again, err)
	}
	if refs, err := c.LookupByRef(ctx, "calendar", "a-1/calendar"); err != nil || len(refs) != 1 || refs[0].Status != httpprovider.StatusCommitted {
		t.Fatalf("lookup by reference after the decision: %+v, %v", refs, err)
	}
	if n := len(s.Ledger("calendar")); n != 1 {
		t.Fatalf("ledger lists %d writes after the decision, want 1", n)
	}
}
