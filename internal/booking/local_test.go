package booking_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A booking written in SQL (one round trip, op.Spec.Local) must store the
// answer the Go writes (Execute) store, for every outcome: the same outcome,
// reason, status and body. Each case runs both ways on twin slots of the
// same database state.
func TestBookingInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	store := db.New(pgtest.NewPool(t))
	core := idem.New(store, idem.Config{})
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	customer := newCustomer(t, store, tenant.ID)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour).Add(1500 * time.Millisecond)
	slot := func(at time.Time) uuid.UUID {
		s, err := store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant.ID, StartsAt: at, EndsAt: at.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	taken := func() uuid.UUID {
		s := slot(start)
		if _, ok, err := store.BookSlot(t.Context(), db.Booking{TenantID: tenant.ID, ActionID: uuid.New(), CustomerID: newCustomer(t, store, tenant.ID), SlotID: s}); err != nil || ok != db.BookedOK {
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
		var got [2]db.Action
		var slots [2]uuid.UUID
		for i, inSQL := range []bool{true, false} {
			slots[i] = c.slot()
			input, _ := json.Marshal(map[string]any{"customer_id": c.customer, "slot_id": slots[i], "service": c.service})
			p, err := booking.Book.Prepare(input, nil)
			if err != nil {
				t.Fatal(err)
			}
			req := idem.Request{TenantID: tenant.ID, Key: uuid.NewString(), Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input, Run: p.Run}
			if inSQL {
				if p.Local == nil {
					t.Fatal("appointment.book has no SQL form")
				}
				req.Local = p.Local
			}
			reply, err := core.Do(t.Context(), req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			// What is stored, as a replay reads it.
			if got[i], err = store.ActionByID(t.Context(), tenant.ID, reply.Action.ID); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[i].Result, reply.Action.Result) {
				t.Errorf("%s: the answer %s is not what was stored %s", c.name, reply.Action.Result, got[i].Result)
			}
		}
		sql, goes := got[0], got[1]
		if sql.Outcome != c.outcome || sql.Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, sql.Outcome, sql.Reason, c.outcome, c.reason)
		}
		if sql.State != goes.State || sql.Outcome != goes.Outcome || sql.Reason != goes.Reason || sql.Status != goes.Status {
			t.Errorf("%s: in SQL %s %s %s %d, in Go %s %s %s %d", c.name,
				sql.State, sql.Outcome, sql.Reason, sql.Status, goes.State, goes.Outcome, goes.Reason, goes.Status)
		}
		// The bodies name their own appointment and slot; with those made
		// equal they must be the same JSON, and the same bytes unless the
		// text holds characters Go escapes for HTML (<, >, &).
		norm := func(a db.Action, slot uuid.UUID) []byte {
			b := bytes.ReplaceAll(a.Result, []byte(slot.String()), []byte("SLOT"))
			if a.ResourceID != "" {
				b = bytes.ReplaceAll(b, []byte(a.ResourceID), []byte("RESOURCE"))
			}
			return b
		}
		bs, bg := norm(sql, slots[0]), norm(goes, slots[1])
		var js, jg any
		if err := json.Unmarshal(bs, &js); err != nil {
			t.Fatalf("%s: the body in SQL is not JSON: %s", c.name, bs)
		}
		if err := json.Unmarshal(bg, &jg); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(js, jg) {
			t.Errorf("%s: bodies differ:\n in SQL %s\n in Go  %s", c.name, bs, bg)
		}
		if !bytes.ContainsAny([]byte(c.service), "<>&") && !bytes.Equal(bs, bg) {
			t.Errorf("%s: bodies differ in bytes:\n in SQL %s\n in Go  %s", c.name, bs, bg)
		}
		if (sql.ResourceID == "") != (goes.ResourceID == "") {
			t.Errorf("%s: resource ids %q and %q", c.name, sql.ResourceID, goes.ResourceID)
		}
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
