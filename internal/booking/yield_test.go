package booking_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op/optest"
)

// A booking in SQL (one statement) whose key another transaction holds
// uncommitted (an attempt of the same key in the Go form: BEGIN, claim,
// writes, COMMIT) waits for it. When that attempt commits, the statement's
// own booking rolls back with it and the answer is the other attempt's
// action; when it rolls back, the statement books, once.
func TestABookingInSQLYieldsToItsKeyHeldElsewhere(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	customer := newCustomer(t, e.Store, e.Tenant)
	for _, commit := range []bool{true, false} {
		at := time.Now().UTC().Truncate(time.Hour).Add(72 * time.Hour)
		slot, err := e.Store.CreateSlot(t.Context(), db.NewSlot{TenantID: e.Tenant, StartsAt: at, EndsAt: at.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"customer_id": customer, "slot_id": slot.ID})
		p, err := booking.Book.Prepare(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		key, holder := uuid.NewString(), uuid.New()
		tx, err := e.Store.Pool().Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, now() + interval '1 minute')`, holder, e.Tenant, key, p.Operation, p.Fingerprint, p.Input); err != nil {
			t.Fatal(err)
		}

		type answer struct {
			reply idem.Reply
			err   error
		}
		done := make(chan answer, 1)
		go func() {
			r, err := e.Core.Do(t.Context(), idem.Request{
				TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
				Run: p.Run, Local: p.Local, Wait: 5 * time.Second,
			})
			done <- answer{r, err}
		}()
		waitForLockWaiter(t, e.Store)

		if commit {
			if _, err := tx.Exec(t.Context(), `UPDATE actions SET state = 'completed', outcome = 'rejected', reason = 'SLOT_UNAVAILABLE',
				http_status = 422, result = '{}', lease_until = NULL, completed_at = now() WHERE id = $1`, holder); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
		} else if err := tx.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil {
			t.Fatalf("commit=%v: %v", commit, a.err)
		}
		booked := count(t, e.Store, "SELECT count(*) FROM appointments WHERE slot_id = $1", slot.ID)
		actions := count(t, e.Store, "SELECT count(*) FROM actions WHERE tenant_id = $1 AND idempotency_key = $2", e.Tenant, key)
		switch {
		case commit && (a.reply.Action.ID != holder || a.reply.Action.Reason != "SLOT_UNAVAILABLE" || booked != 0 || actions != 1):
			t.Errorf("after the other attempt committed: answer %v %s, %d appointments, %d actions; want the other attempt's, 0, 1",
				a.reply.Action.ID, a.reply.Action.Reason, booked, actions)
		case !commit && (a.reply.Action.ID == holder || a.reply.Action.Outcome != db.Confirmed || booked != 1 || actions != 1):
			t.Errorf("after the other attempt rolled back: answer %v %s, %d appointments, %d actions; want a confirmed booking, 1, 1",
				a.reply.Action.ID, a.reply.Action.Outcome, booked, actions)
		}
	}
}

// waitForLockWaiter waits until a session of the test's database waits on
// a lock.
func waitForLockWaiter(t *testing.T, store *db.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count(t, store, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no session waits on a lock")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
}

func count(t *testing.T, store *db.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := store.Pool().QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A cancellation in SQL that waits for another transaction cancelling the
// same appointment is rejected as not active, and its answer shows the
// appointment as that transaction left it (cancelled), not as it was when
// the statement began.
func TestACancellationInSQLRejectedByARaceDescribesTheWinner(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	customer := newCustomer(t, e.Store, e.Tenant)
	at := time.Now().UTC().Truncate(time.Hour).Add(72 * time.Hour)
	slot, err := e.Store.CreateSlot(t.Context(), db.NewSlot{TenantID: e.Tenant, StartsAt: at, EndsAt: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := e.Store.BookSlot(t.Context(), db.Booking{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: customer, SlotID: slot.ID})
	if err != nil || ok != db.BookedOK {
		t.Fatalf("book: %v %v", ok, err)
	}
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck
	if _, err := tx.Exec(t.Context(), "UPDATE appointments SET status = 'cancelled' WHERE id = $1", a.ID); err != nil {
		t.Fatal(err)
	}

	body, _ := json.Marshal(map[string]any{"appointment_id": a.ID})
	p, err := booking.Cancel.Prepare(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan idem.Reply, 1)
	go func() {
		r, err := e.Core.Do(t.Context(), idem.Request{
			TenantID: e.Tenant, Key: uuid.NewString(), Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
			Run: p.Run, Local: p.Local,
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForLockWaiter(t, e.Store)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var got db.Appointment
	if err := json.Unmarshal(r.Action.Result, &got); err != nil {
		t.Fatalf("answer %s: %v", r.Action.Result, err)
	}
	if r.Action.Reason != booking.AppointmentNotActive || got.Status != "cancelled" || got.ID != a.ID {
		t.Fatalf("answer %s %s, want %s with the appointment cancelled", r.Action.Reason, r.Action.Result, booking.AppointmentNotActive)
	}
}

// A move in SQL to a slot another transaction is booking waits for it; when
// that booking commits, the move is run again and rejected as unavailable,
// and the appointment stays where it was.
func TestAMoveInSQLToASlotBookedMeanwhileIsRejected(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	customer := newCustomer(t, e.Store, e.Tenant)
	at := time.Now().UTC().Truncate(time.Hour).Add(72 * time.Hour)
	var slots [2]uuid.UUID
	for i := range slots {
		s, err := e.Store.CreateSlot(t.Context(), db.NewSlot{TenantID: e.Tenant, StartsAt: at.Add(time.Duration(i) * time.Hour), EndsAt: at.Add(time.Duration(i+1) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		slots[i] = s.ID
	}
	a, ok, err := e.Store.BookSlot(t.Context(), db.Booking{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: customer, SlotID: slots[0]})
	if err != nil || ok != db.BookedOK {
		t.Fatalf("book: %v %v", ok, err)
	}
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck
	if _, err := tx.Exec(t.Context(), `INSERT INTO appointments (id, tenant_id, customer_id, slot_id, action_id)
		VALUES ($1, $2, $3, $4, $5)`, uuid.New(), e.Tenant, customer, slots[1], uuid.New()); err != nil {
		t.Fatal(err)
	}

	body, _ := json.Marshal(map[string]any{"appointment_id": a.ID, "slot_id": slots[1]})
	p, err := booking.Reschedule.Prepare(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan idem.Reply, 1)
	go func() {
		r, err := e.Core.Do(t.Context(), idem.Request{
			TenantID: e.Tenant, Key: uuid.NewString(), Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
			Run: p.Run, Local: p.Local,
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForLockWaiter(t, e.Store)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Action.Reason != booking.SlotUnavailable {
		t.Fatalf("answer %s %s %s, want %s", r.Action.Outcome, r.Action.Reason, r.Action.Result, booking.SlotUnavailable)
	}
	if n := count(t, e.Store, "SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", a.ID, slots[0]); n != 1 {
		t.Fatal("the appointment left its slot")
	}
	if n := count(t, e.Store, "SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", slots[1]); n != 1 {
		t.Fatalf("%d active appointments in the new slot, want 1", n)
	}
}
