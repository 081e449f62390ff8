package booking_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

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
	slot := func(at time.Time) uuid.UUID {
		s, err := store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant, StartsAt: at, EndsAt: at.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
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
		outcome  db.Outcome
		reason   string
	}{
		{"confirmed", customer, func() uuid.UUID { return slot(start) }, "Cut and colour", db.Confirmed, ""},
		{"confirmed, text to escape", customer, func() uuid.UUID { return slot(start) }, `<Cut & "colour"> é`, db.Confirmed, ""},
		{"slot taken", customer, taken, "", db.Rejected, booking.SlotUnavailable},
		{"slot in the past", customer, func() uuid.UUID { return slot(time.Now().Add(-time.Hour)) }, "", db.Rejected, booking.SlotUnavailable},
		{"slot missing", customer, func() uuid.UUID { return missingSlot }, "", db.Rejected, booking.SlotNotFound},
		{"customer missing", missingCustomer, func() uuid.UUID { return slot(start) }, "", db.Rejected, booking.CustomerNotFound},
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

func newCustomer(t *testing.T, store *db.Store, tenant uuid.UUID) uuid.UUID {
	t.Helper()
	c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}
