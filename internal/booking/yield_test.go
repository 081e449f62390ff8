package booking_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/wire"
)

// A booking in SQL (one statement) whose key another transaction holds
// uncommitted (an attempt of the same key run statement by statement:
// BEGIN, claim, writes, COMMIT) waits for it. When that attempt commits,
// the statement's own booking rolls back with it and the answer is the
// other attempt's action; when it rolls back, the statement books, once.
func TestABookingInSQLYieldsToItsKeyHeldElsewhere(t *testing.T) {
	t.Parallel()
	e := setup(t)
	customer := e.Customer(t)
	for _, commit := range []bool{true, false} {
		slot := futureSlot(t, e, 0)
		body, _ := json.Marshal(map[string]any{"customer_id": customer, "slot_id": slot})
		p, err := booking.Book.Prepare(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		key, holder := uuid.NewString(), uuid.New()
		a := e.WhileHeld(t, booking.Book, body, key, func(tx pgx.Tx) error {
			_, err := tx.Exec(t.Context(), `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, lease_until)
				VALUES ($1, $2, $3, $4, $5, $6, now() + interval '1 minute')`, holder, e.Tenant, key, p.Operation, p.Fingerprint, p.Input)
			return err
		}, func(tx pgx.Tx) error {
			if !commit {
				return tx.Rollback(t.Context())
			}
			if _, err := tx.Exec(t.Context(), `UPDATE actions SET state = 'completed', outcome = 'rejected', reason = 'SLOT_UNAVAILABLE',
				http_status = 422, result = '{}', lease_until = NULL, completed_at = now() WHERE id = $1`, holder); err != nil {
				return err
			}
			return tx.Commit(t.Context())
		})
		booked := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", slot)
		actions := e.Count(t, "SELECT count(*) FROM actions WHERE tenant_id = $1 AND idempotency_key = $2", e.Tenant, key)
		switch {
		case commit && (a.ID != holder || a.Reason != "SLOT_UNAVAILABLE" || booked != 0 || actions != 1):
			t.Errorf("after the other attempt committed: answer %v %s, %d appointments, %d actions; want the other attempt's, 0, 1",
				a.ID, a.Reason, booked, actions)
		case !commit && (a.ID == holder || a.Outcome != oncecall.Confirmed || booked != 1 || actions != 1):
			t.Errorf("after the other attempt rolled back: answer %v %s, %d appointments, %d actions; want a confirmed booking, 1, 1",
				a.ID, a.Outcome, booked, actions)
		}
	}
}

// A cancellation in SQL that waits for another transaction cancelling the
// same appointment is rejected as not active, and its answer shows the
// appointment as that transaction left it (cancelled), not as it was when
// the statement began.
func TestACancellationInSQLRejectedByARaceDescribesTheWinner(t *testing.T) {
	t.Parallel()
	e := setup(t)
	appointment := bookedIn(t, e, futureSlot(t, e, 0))
	body, _ := json.Marshal(map[string]any{"appointment_id": appointment})
	a := e.WhileHeld(t, booking.Cancel, body, uuid.NewString(), func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), "UPDATE appointments SET status = 'cancelled' WHERE id = $1", appointment)
		return err
	}, func(tx pgx.Tx) error { return tx.Commit(t.Context()) })
	var got wire.Appointment
	if err := json.Unmarshal(a.Result, &got); err != nil {
		t.Fatalf("answer %s: %v", a.Result, err)
	}
	if a.Reason != booking.AppointmentNotActive || got.Status != "cancelled" || got.ID != appointment {
		t.Fatalf("answer %s %s, want %s with the appointment cancelled", a.Reason, a.Result, booking.AppointmentNotActive)
	}
}

// A move in SQL to a slot another transaction is booking waits for it; when
// that booking commits, the move is run again and rejected as unavailable,
// and the appointment stays where it was.
func TestAMoveInSQLToASlotBookedMeanwhileIsRejected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	from, to := futureSlot(t, e, 0), futureSlot(t, e, 1)
	appointment := bookedIn(t, e, from)
	body, _ := json.Marshal(map[string]any{"appointment_id": appointment, "slot_id": to})
	a := e.WhileHeld(t, booking.Reschedule, body, uuid.NewString(), func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), `INSERT INTO appointments (id, tenant_id, customer_id, slot_id, action_id)
			VALUES ($1, $2, $3, $4, $5)`, uuid.New(), e.Tenant, e.Customer(t), to, uuid.New())
		return err
	}, func(tx pgx.Tx) error { return tx.Commit(t.Context()) })
	if a.Reason != booking.SlotUnavailable {
		t.Fatalf("answer %s %s %s, want %s", a.Outcome, a.Reason, a.Result, booking.SlotUnavailable)
	}
	if e.Count(t, "SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", appointment, from) != 1 {
		t.Fatal("the appointment left its slot")
	}
	if n := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", to); n != 1 {
		t.Fatalf("%d active appointments in the new slot, want 1", n)
	}
}

// futureSlot makes a slot i hours after a time three days ahead.
func futureSlot(t *testing.T, e env, i int) uuid.UUID {
	t.Helper()
	return e.Slot(t, time.Now().UTC().Truncate(time.Hour).Add(72*time.Hour+time.Duration(i)*time.Hour))
}

// bookedIn books slot for a new customer and returns the appointment.
func bookedIn(t *testing.T, e env, slot uuid.UUID) uuid.UUID {
	t.Helper()
	a, ok, err := e.Store.BookSlot(t.Context(), db.Booking{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: e.Customer(t), SlotID: slot})
	if err != nil || ok != db.BookedOK {
		t.Fatalf("book: %v %v", ok, err)
	}
	return a.ID
}

// A booking in SQL whose key another transaction holds uncommitted for
// longer than the lock timeout answers "in progress" (the key is taken by an
// attempt still running), not "the database is unavailable", and books
// nothing.
func TestABookingInSQLWaitingOutTheLockTimeoutForItsKeyIsInProgress(t *testing.T) {
	t.Parallel()
	e := setupWithTimeouts(t, db.Timeouts{Lock: 300 * time.Millisecond})
	slot := futureSlot(t, e, 0)
	body, _ := json.Marshal(map[string]any{"customer_id": e.Customer(t), "slot_id": slot})
	p, err := booking.Book.Prepare(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck
	if _, err := tx.Exec(t.Context(), `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, now() + interval '1 minute')`, uuid.New(), e.Tenant, key, p.Operation, p.Fingerprint, p.Input); err != nil {
		t.Fatal(err)
	}
	_, err = e.Core.Do(t.Context(), idem.Request{
		TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input, Work: p.Work(),
	})
	var inProgress *idem.InProgressError
	if !errors.As(err, &inProgress) {
		t.Fatalf("got %v, want the action in progress", err)
	}
	if n := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", slot); n != 0 {
		t.Fatalf("%d appointments, want 0", n)
	}
}

// lockKey takes, in tx, the advisory lock a one-statement attempt of key
// holds until it ends (oncecall_key_free's).
func lockKey(t *testing.T, tx pgx.Tx, tenant uuid.UUID, key string) error {
	_, err := tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(hashtextextended('idempotency-key/' || $1::text || '/' || $2, 0))`, tenant, key)
	return err
}

// A booking in SQL whose key another one-statement attempt is working on
// (the key's advisory lock held, its action inserted, not yet committed)
// waits for it in oncecall_key_free. When that attempt commits, the answer
// is its action and nothing is booked; when it rolls back, the statement
// books, once.
func TestABookingInSQLWaitsForItsKeyInAnotherStatement(t *testing.T) {
	t.Parallel()
	e := setup(t)
	customer := e.Customer(t)
	for _, commit := range []bool{true, false} {
		slot := futureSlot(t, e, 0)
		body, _ := json.Marshal(map[string]any{"customer_id": customer, "slot_id": slot})
		p, err := booking.Book.Prepare(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		key, holder := uuid.NewString(), uuid.New()
		a := e.WhileHeld(t, booking.Book, body, key, func(tx pgx.Tx) error {
			if err := lockKey(t, tx, e.Tenant, key); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request,
				state, outcome, reason, http_status, result, completed_at)
				VALUES ($1, $2, $3, $4, $5, $6, 'completed', 'rejected', 'SLOT_UNAVAILABLE', 422, '{}', now())`,
				holder, e.Tenant, key, p.Operation, p.Fingerprint, p.Input)
			return err
		}, func(tx pgx.Tx) error {
			if commit {
				return tx.Commit(t.Context())
			}
			return tx.Rollback(t.Context())
		})
		booked := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", slot)
		actions := e.Count(t, "SELECT count(*) FROM actions WHERE tenant_id = $1 AND idempotency_key = $2", e.Tenant, key)
		switch {
		case commit && (a.ID != holder || a.Reason != "SLOT_UNAVAILABLE" || booked != 0 || actions != 1):
			t.Errorf("after the other attempt committed: answer %v %s, %d appointments, %d actions; want the other attempt's, 0, 1",
				a.ID, a.Reason, booked, actions)
		case !commit && (a.ID == holder || a.Outcome != oncecall.Confirmed || booked != 1 || actions != 1):
			t.Errorf("after the other attempt rolled back: answer %v %s, %d appointments, %d actions; want a confirmed booking, 1, 1",
				a.ID, a.Outcome, booked, actions)
		}
	}
}

// A booking in SQL that waits out its claim wait for another one-statement
// attempt of its key answers "in progress" and stores nothing.
func TestABookingInSQLWaitingOutItsClaimWaitIsInProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	slot := futureSlot(t, e, 0)
	body, _ := json.Marshal(map[string]any{"customer_id": e.Customer(t), "slot_id": slot})
	p, err := booking.Book.Prepare(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck
	if err := lockKey(t, tx, e.Tenant, key); err != nil {
		t.Fatal(err)
	}
	_, err = e.Core.Do(t.Context(), idem.Request{
		TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
		Work: p.Work(), Wait: 300 * time.Millisecond,
	})
	var inProgress *idem.InProgressError
	if !errors.As(err, &inProgress) {
		t.Fatalf("got %v, want the action in progress", err)
	}
	booked := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", slot)
	actions := e.Count(t, "SELECT count(*) FROM actions WHERE tenant_id = $1 AND idempotency_key = $2", e.Tenant, key)
	if booked != 0 || actions != 0 {
		t.Fatalf("%d appointments, %d actions; want 0, 0", booked, actions)
	}
}
