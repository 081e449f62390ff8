package booking_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/op/optest"
	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A booking written in SQL (one round trip) stores what the Go writes
// store, for every outcome. Each case runs both ways on twin slots of the
// same database state.
func TestBookingInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	customer := newCustomer(t, store, tenant)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour).Add(1500 * time.Millisecond)
	slot := func(at time.Time) uuid.UUID { return newSlot(t, store, tenant, at) }
	taken := func() uuid.UUID {
		s := slot(start)
		if _, ok, err := store.BookSlot(t.Context(), db.Booking{TenantID: tenant, ActionID: uuid.New(), CustomerID: newCustomer(t, store, tenant), SlotID: s}); err != nil || ok != db.BookedOK {
			t.Fatalf("book the slot beforehand: %v %v", ok, err)
		}
		return s
	}
	missingCustomer, missingSlot := uuid.New(), uuid.New()
	cases := []struct {
		name     string
		customer uuid.UUID
		slot     func() uuid.UUID
		service  string
		outcome  oncecall.Outcome
		reason   string
	}{
		{"confirmed", customer, func() uuid.UUID { return slot(start) }, "Cut and colour", oncecall.Confirmed, ""},
		{"confirmed, text to escape", customer, func() uuid.UUID { return slot(start) }, `<Cut & "colour"> é`, oncecall.Confirmed, ""},
		{"slot taken", customer, taken, "", oncecall.Rejected, booking.SlotUnavailable},
		{"slot in the past", customer, func() uuid.UUID { return slot(time.Now().Add(-time.Hour)) }, "", oncecall.Rejected, booking.SlotUnavailable},
		{"slot missing", customer, func() uuid.UUID { return missingSlot }, "", oncecall.Rejected, booking.SlotNotFound},
		{"customer missing", missingCustomer, func() uuid.UUID { return slot(start) }, "", oncecall.Rejected, booking.CustomerNotFound},
	}
	for _, c := range cases {
		var slots [2][]string
		got := e.Run(t, booking.Book, func(inSQL bool) []byte {
			s := c.slot()
			if inSQL {
				slots[0] = []string{s.String()}
			} else {
				slots[1] = []string{s.String()}
			}
			b, _ := json.Marshal(map[string]any{"customer_id": c.customer, "slot_id": s, "service": c.service})
			return b
		})
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, slots, strings.ContainsAny(c.service, "<>&"))
	}
}

// newSlot makes an hour-long slot of tenant starting at at.
func newSlot(t *testing.T, store *db.Store, tenant uuid.UUID, at time.Time) uuid.UUID {
	t.Helper()
	s, err := store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant, StartsAt: at, EndsAt: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func newCustomer(t *testing.T, store *db.Store, tenant uuid.UUID) uuid.UUID {
	t.Helper()
	c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// A cancellation written in SQL stores what the Go writes store, for every
// outcome, each case on twin appointments of the same database state.
func TestCancelInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	customer := newCustomer(t, store, tenant)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour).Add(1500 * time.Millisecond)
	// booked returns an appointment's id and its slot's.
	booked := func(service string, cancelled bool) []uuid.UUID {
		s := newSlot(t, store, tenant, start)
		a, ok, err := store.BookSlot(t.Context(), db.Booking{TenantID: tenant, ActionID: uuid.New(), CustomerID: customer, SlotID: s, Service: service})
		if err != nil || ok != db.BookedOK {
			t.Fatalf("book beforehand: %v %v", ok, err)
		}
		if cancelled {
			if _, ok, err := store.CancelAppointment(t.Context(), tenant, a.ID); err != nil || !ok {
				t.Fatalf("cancel beforehand: %v %v", ok, err)
			}
		}
		return []uuid.UUID{a.ID, s}
	}
	cases := []struct {
		name        string
		appointment func() []uuid.UUID
		escapes     bool
		outcome     oncecall.Outcome
		reason      string
	}{
		{"confirmed", func() []uuid.UUID { return booked("Cut", false) }, false, oncecall.Confirmed, ""},
		{"confirmed, text to escape", func() []uuid.UUID { return booked(`<Cut & "colour"> é`, false) }, true, oncecall.Confirmed, ""},
		{"already cancelled", func() []uuid.UUID { return booked("Cut", true) }, false, oncecall.Rejected, booking.AppointmentNotActive},
		{"missing", func() []uuid.UUID { return []uuid.UUID{uuid.New()} }, false, oncecall.Rejected, booking.AppointmentNotFound},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, booking.Cancel, func(inSQL bool) []byte {
			a := c.appointment()
			var own []string
			for _, id := range a {
				own = append(own, id.String())
			}
			if inSQL {
				ids[0] = own
			} else {
				ids[1] = own
			}
			b, _ := json.Marshal(map[string]any{"appointment_id": a[0]})
			return b
		})
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, c.escapes)
	}
}

// A move written in SQL stores what the Go writes store, for every
// outcome, each case on twin appointments and slots of the same state.
func TestRescheduleInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	customer := newCustomer(t, store, tenant)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour).Add(1500 * time.Millisecond)
	slot := func(at time.Time) uuid.UUID { return newSlot(t, store, tenant, at) }
	book := func(s uuid.UUID, cancelled bool) uuid.UUID {
		a, ok, err := store.BookSlot(t.Context(), db.Booking{TenantID: tenant, ActionID: uuid.New(), CustomerID: customer, SlotID: s, Service: "Cut"})
		if err != nil || ok != db.BookedOK {
			t.Fatalf("book beforehand: %v %v", ok, err)
		}
		if cancelled {
			if _, ok, err := store.CancelAppointment(t.Context(), tenant, a.ID); err != nil || !ok {
				t.Fatalf("cancel beforehand: %v %v", ok, err)
			}
		}
		return a.ID
	}
	// Each case makes an appointment and the slot to move it to, and
	// returns [appointment, its slot, the new slot].
	active := func(to func() uuid.UUID) func() []uuid.UUID {
		return func() []uuid.UUID {
			from := slot(start)
			return []uuid.UUID{book(from, false), from, to()}
		}
	}
	taken := func() uuid.UUID {
		s := slot(start.Add(time.Hour))
		book(s, false)
		return s
	}
	missingSlot := uuid.New()
	cases := []struct {
		name    string
		make    func() []uuid.UUID
		outcome oncecall.Outcome
		reason  string
	}{
		{"moved", active(func() uuid.UUID { return slot(start.Add(2 * time.Hour)) }), oncecall.Confirmed, ""},
		{"already in that slot", func() []uuid.UUID { s := slot(start); return []uuid.UUID{book(s, false), s, s} }, oncecall.Confirmed, ""},
		{"appointment missing", func() []uuid.UUID { return []uuid.UUID{uuid.New(), slot(start)} }, oncecall.Rejected, booking.AppointmentNotFound},
		{"appointment cancelled", func() []uuid.UUID {
			from := slot(start)
			return []uuid.UUID{book(from, true), from, slot(start.Add(time.Hour))}
		}, oncecall.Rejected, booking.AppointmentNotActive},
		{"slot taken", active(taken), oncecall.Rejected, booking.SlotUnavailable},
		{"slot in the past", active(func() uuid.UUID { return slot(time.Now().Add(-time.Hour)) }), oncecall.Rejected, booking.SlotUnavailable},
		{"slot missing", active(func() uuid.UUID { return missingSlot }), oncecall.Rejected, booking.SlotNotFound},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, booking.Reschedule, func(inSQL bool) []byte {
			made := c.make()
			var own []string
			for _, id := range made {
				own = append(own, id.String())
			}
			i := 1
			if inSQL {
				i = 0
			}
			ids[i] = own
			b, _ := json.Marshal(map[string]any{"appointment_id": made[0], "slot_id": made[len(made)-1]})
			return b
		})
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, false)
	}
}
