package googleprovider_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/provider/calendar/calendartest"
	"github.com/oncecall/oncecall/internal/provider/googleprovider"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/googlecal"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	calsimtest.Remove()
	os.Exit(code)
}

const calID = "dr-ruiz@clinic.example"

var (
	keyOnce sync.Once
	keyPEM  []byte
)

// serviceAccount is a service account key file whose token_uri is the
// fake's, with a key made for the test.
func serviceAccount(t *testing.T, tokenURI string) []byte {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "oncecall-test", "private_key_id": "k1", "private_key": string(keyPEM),
		"client_email": "oncecall@oncecall-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type fixture struct {
	sim   *calsimtest.Process
	cal   *googleprovider.Calendar
	steps calendar.Steps
}

func setup(t *testing.T) fixture {
	t.Helper()
	sim := calsimtest.Start(t, "google")
	cal, err := googleprovider.New(context.Background(), googleprovider.Config{
		CredentialsJSON: serviceAccount(t, sim.URL+"/token"), BaseURL: sim.URL + "/calendar/v3", Timeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{sim: sim, cal: cal, steps: calendar.Steps{Calendar: cal}}
}

func (f fixture) ledger(t *testing.T) []googlecal.LedgerEvent {
	t.Helper()
	var l googlecal.Ledger
	f.sim.Call("GET", "/sim/ledger", nil, 200, &l)
	return l.Events
}

// one returns the only ledger event with id, failing unless there is one.
func (f fixture) one(t *testing.T, id string) googlecal.LedgerEvent {
	t.Helper()
	var found []googlecal.LedgerEvent
	for _, e := range f.ledger(t) {
		if e.Event.ID == id {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ledger holds %d events with id %s, want 1", len(found), id)
	}
	return found[0]
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestEventIDIsBase32HexFromTheKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"oc-0123456789abcdef0123456789abcdef01234567", "6f1d2c3b-aaaa-4bbb-8ccc-0123456789ab", "a", "book-42"} {
		id := googleprovider.EventID(key)
		if !validID(id) || googleprovider.EventID(key) != id {
			t.Errorf("EventID(%q) = %q: not a stable base32hex id of 5 to 1024 characters", key, id)
		}
	}
	if got := googleprovider.EventID("6f1d2c3b-aaaa-4bbb-8ccc-0123456789ab"); got != "6f1d2c3baaaa4bbb8ccc0123456789ab" {
		t.Errorf("a UUID key gives %q, want its hex", got)
	}
	if googleprovider.EventID("book-42") == googleprovider.EventID("book-43") {
		t.Error("two keys give one id")
	}
}

func validID(id string) bool {
	if len(id) < 5 || len(id) > 1024 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'v' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Twenty identical creates at once (the same step key) leave one event:
// every one is answered with it.
func TestCreateStormMakesOneEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(9, 0), 30))
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
	want := googleprovider.EventID(st.Key())
	for i := range 20 {
		if errs[i] != nil || ids[i] != want {
			t.Errorf("create %d: %q, %v; want event %s", i, ids[i], errs[i], want)
		}
	}
	if e := f.one(t, want); e.Inserts != 20 || e.Event.Status != "confirmed" {
		t.Errorf("the event had %d inserts and status %s, want 20 and confirmed", e.Inserts, e.Event.Status)
	}
	if n := len(f.ledger(t)); n != 1 {
		t.Errorf("ledger holds %d events, want 1", n)
	}
}

// A create whose answer is lost after Google committed it is ambiguous,
// and its lookup finds the same event; so does a 500 after commit, and a
// re-send then gets the event (409, read, same marks) instead of a second.
func TestAnswerLostAfterCreateIsSettledByLookup(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{simkit.FaultDropResponse, simkit.FaultFailAfterCommit} {
		t.Run(fault, func(t *testing.T) {
			f := setup(t)
			st := calendartest.NewStep("calendar")
			w := st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(10, 0), 45))
			f.sim.Fault(simkit.Rule{Fault: fault, Count: 1})
			if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
				t.Fatalf("write with %s: %v, want ambiguous", fault, err)
			}
			rec, found, err := f.steps.LookupWrite(ctx(t), w)
			id := googleprovider.EventID(st.Key())
			if err != nil || !found || rec.ID != id || rec.Status != "committed" {
				t.Fatalf("lookup: %+v found=%v err=%v; want committed %s", rec, found, err, id)
			}
			again, err := f.steps.Write(ctx(t), w)
			if err != nil || again.ID != id {
				t.Fatalf("re-send: %+v, %v; want %s", again, err, id)
			}
			if e := f.one(t, id); e.Inserts != 2 {
				t.Errorf("event had %d inserts, want 2", e.Inserts)
			}
		})
	}
}

// A lookup that lags is not evidence: the event is not found while the
// lag lasts (the driver waits out the visibility delay), and a re-send
// meanwhile is refused 409 and stays ambiguous; nothing is made twice.
func TestLaggingLookupIsNotEvidence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(11, 0), 30))
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	f.sim.Fault(simkit.Rule{Fault: "lookup_lag=1h"})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("write: %v, want ambiguous", err)
	}
	if _, found, err := f.steps.LookupWrite(ctx(t), w); found || err != nil {
		t.Fatalf("lookup during the lag: found=%v err=%v, want not found", found, err)
	}
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("re-send during the lag: %v, want ambiguous", err)
	}
	f.sim.ClearFaults()
	if rec, found, err := f.steps.LookupWrite(ctx(t), w); !found || err != nil || rec.ID != googleprovider.EventID(st.Key()) {
		t.Fatalf("lookup after the lag: %+v found=%v err=%v", rec, found, err)
	}
	f.one(t, googleprovider.EventID(st.Key()))
}

// Google may not detect a collision at create time: a re-send answered
// 200 still names the one event, and the calendar keeps one.
func TestUndetectedCollisionLeavesOneEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	w := st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(12, 0), 30))
	first, err := f.steps.Write(ctx(t), w)
	if err != nil {
		t.Fatal(err)
	}
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultCollisionUndetected, Count: 1})
	again, err := f.steps.Write(ctx(t), w)
	if err != nil || again.ID != first.ID {
		t.Fatalf("re-send: %+v, %v; want %s", again, err, first.ID)
	}
	if e := f.one(t, first.ID); e.Collisions != 1 || e.Inserts != 2 {
		t.Errorf("inserts %d, collisions %d; want 2 and 1", e.Inserts, e.Collisions)
	}
}

// An id held by another write's event is a key conflict, never confirmed.
func TestIDHeldByAnotherWriteIsKeyConflict(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	if _, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(13, 0), 30))); err != nil {
		t.Fatal(err)
	}
	other := st
	other.Tenant = calendartest.NewStep("x").Tenant // the same key, another tenant's write
	_, err := f.steps.Write(ctx(t), other.Write(t, calendar.Book, other.Payload(calID, calendartest.Day(13, 0), 30)))
	if !errors.Is(err, provider.ErrKeyConflict) {
		t.Fatalf("write: %v, want a key conflict", err)
	}
}

// A slot someone booked in the calendar directly is busy.
func TestDirectBookingIsBusy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := calendartest.Day(10, 0)
	f.sim.Call("POST", "/sim/events", googlecal.DirectEvent{Calendar: calID, Start: at, End: at.Add(time.Hour), Summary: "Staff meeting"}, 201, nil)
	a, err := f.cal.Availability(ctx(t), calID, at.Add(-2*time.Hour), at.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Busy) != 1 || !a.Busy[0].Start.Equal(at) || !a.Busy[0].End.Equal(at.Add(time.Hour)) {
		t.Fatalf("busy = %+v, want [%s, %s)", a.Busy, at, at.Add(time.Hour))
	}
	if a.Free(calendar.Span{Start: at.Add(30 * time.Minute), End: at.Add(time.Hour)}) {
		t.Error("a time inside the meeting reads free")
	}
	if !a.Free(calendar.Span{Start: at.Add(2 * time.Hour), End: at.Add(150 * time.Minute)}) {
		t.Error("a free time reads busy")
	}
}

// An event someone moved in the calendar is read, and listed, at its new
// time; a move oncecall sends with the etag it read before is refused
// EVENT_CHANGED, and the person's time stays.
func TestMovedEventIsReadAtItsNewTimeAndAStaleMoveIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(calID, at, 30)))
	if err != nil {
		t.Fatal(err)
	}
	read, err := f.cal.Event(ctx(t), calID, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	moved := at.Add(3 * time.Hour)
	f.sim.Call("POST", "/sim/events/move", googlecal.DirectEvent{Calendar: calID, ID: rec.ID, Start: moved, End: moved.Add(30 * time.Minute)}, 200, nil)
	now, err := f.cal.Event(ctx(t), calID, rec.ID)
	if err != nil || !now.Start.Equal(moved) {
		t.Fatalf("event after the move: %+v, %v; want start %s", now, err, moved)
	}
	list, err := f.cal.Events(ctx(t), calendar.EventQuery{CalendarID: calID, From: at.Add(-time.Hour), To: at.Add(6 * time.Hour), Customer: st.Customer.String()})
	if err != nil || len(list) != 1 || !list[0].Start.Equal(moved) {
		t.Fatalf("the customer's events: %+v, %v; want one at %s", list, err, moved)
	}

	mv := calendartest.NewStep("calendar")
	p := mv.Payload(calID, at.Add(time.Hour), 30)
	p.Event = &calendar.EventRef{ID: rec.ID, ETag: read.ETag}
	_, err = f.steps.Write(ctx(t), mv.Write(t, calendar.Reschedule, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.EventChanged {
		t.Fatalf("move with a stale etag: %v, want EVENT_CHANGED", err)
	}
	if e := f.one(t, rec.ID); !e.Start.Equal(moved) {
		t.Errorf("the event is at %s, want the person's %s", e.Start, moved)
	}
}

// A move under the current etag lands once; its lost answer is found by
// its key among the event's moves, and a re-send confirms it.
func TestMoveIsRetrySafe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	at := calendartest.Day(9, 0)
	rec, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(calID, at, 30)))
	if err != nil {
		t.Fatal(err)
	}
	mv := calendartest.NewStep("calendar")
	to := at.Add(2 * time.Hour)
	p := mv.Payload(calID, to, 30)
	p.Event = &calendar.EventRef{ID: rec.ID, ETag: rec.Data["etag"]}
	w := mv.Write(t, calendar.Reschedule, p)
	f.sim.Fault(simkit.Rule{Fault: simkit.FaultDropResponse, Count: 1})
	if _, err := f.steps.Write(ctx(t), w); provider.Classify(err) != "ambiguous" {
		t.Fatalf("move: %v, want ambiguous", err)
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), w); !found || err != nil || got.ID != rec.ID || got.Data["start"] != to.Format(time.RFC3339) {
		t.Fatalf("lookup of the move: %+v found=%v err=%v", got, found, err)
	}
	if got, err := f.steps.Write(ctx(t), w); err != nil || got.ID != rec.ID {
		t.Fatalf("re-sent move: %+v, %v", got, err)
	}
	e := f.one(t, rec.ID)
	if !e.Start.Equal(to) || e.Event.ExtendedProperties.Private[calendar.MarkKey] != st.Key() {
		t.Errorf("event at %s with marks %v; want %s and the booking's marks kept", e.Start, e.Event.ExtendedProperties.Private, to)
	}
}

// A cancel deletes the event; a second cancel is answered 410 and is the
// same cancel. The deleted id stays taken: the booking's create sent again
// is refused EVENT_CANCELLED, never a new event, and its lookup says so.
func TestCancelledEventKeepsItsID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	book := st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(15, 0), 30))
	rec, err := f.steps.Write(ctx(t), book)
	if err != nil {
		t.Fatal(err)
	}
	cn := calendartest.NewStep("calendar")
	p := cn.Payload(calID, calendartest.Day(15, 0), 30)
	p.Event = &calendar.EventRef{ID: rec.ID}
	cancel := cn.Write(t, calendar.CancelOp, p)
	for i := range 2 {
		if got, err := f.steps.Write(ctx(t), cancel); err != nil || got.ID != rec.ID {
			t.Fatalf("cancel %d: %+v, %v", i, got, err)
		}
	}
	if got, found, err := f.steps.LookupWrite(ctx(t), cancel); !found || err != nil || got.Status != "committed" {
		t.Fatalf("lookup of the cancel: %+v found=%v err=%v", got, found, err)
	}
	_, err = f.steps.Write(ctx(t), book)
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.EventCancelled {
		t.Fatalf("create after the cancel: %v, want EVENT_CANCELLED", err)
	}
	if got, found, _ := f.steps.LookupWrite(ctx(t), book); !found || got.Status != "rejected" || got.Code != calendar.EventCancelled {
		t.Fatalf("lookup of the create: %+v found=%v", got, found)
	}
	if e := f.one(t, rec.ID); e.Event.Status != "cancelled" {
		t.Errorf("status %s, want cancelled", e.Event.Status)
	}
}

// A payload that is not version 2 is rejected before anything is sent.
func TestInvalidPayloadIsRejectedUnsent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st := calendartest.NewStep("calendar")
	p := st.Payload(calID, calendartest.Day(9, 0), 30)
	p.Start.Local = "2001-01-01T00:00:00"
	_, err := f.steps.Write(ctx(t), st.Write(t, calendar.Book, p))
	if rej, ok := errors.AsType[*provider.Rejected](err); !ok || rej.Code != calendar.InvalidPayload {
		t.Fatalf("write: %v, want INVALID_CALENDAR_PAYLOAD", err)
	}
	if n := len(f.ledger(t)); n != 0 {
		t.Errorf("ledger holds %d events, want none", n)
	}
}

// A create that could not get an access token (the key's token_uri
// refuses it) was never sent, and nothing was made.
func TestNoTokenIsNotSent(t *testing.T) {
	t.Parallel()
	sim := calsimtest.Start(t, "google")
	cal, err := googleprovider.New(context.Background(), googleprovider.Config{
		CredentialsJSON: serviceAccount(t, sim.URL+"/no-such-token-uri"), BaseURL: sim.URL + "/calendar/v3", Timeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := calendartest.NewStep("calendar")
	_, err = calendar.Steps{Calendar: cal}.Write(ctx(t), st.Write(t, calendar.Book, st.Payload(calID, calendartest.Day(9, 0), 30)))
	if !errors.Is(err, provider.ErrNotSent) {
		t.Fatalf("write without a token: %v, want not sent", err)
	}
	var l googlecal.Ledger
	sim.Call("GET", "/sim/ledger", nil, 200, &l)
	if len(l.Events) != 0 {
		t.Errorf("ledger holds %d events, want none", len(l.Events))
	}
}
