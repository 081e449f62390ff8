package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/canon"
)

// The ceiling scenarios send the SQL of one booking (claim, booking,
// completion) without HTTP and without anything else the server does. The
// statements are the server's own: ceiling_tx calls the store's methods in
// one transaction exactly as the idempotency core does, and ceiling has the
// sqlc-generated code queue the same statements into one pgx Batch, which
// PostgreSQL runs as one implicit transaction in one round trip.

// batchQueue is a dbsqlc.DBTX that queues each statement into a batch
// instead of running it; results are read from the batch afterwards.
type batchQueue struct{ b *pgx.Batch }

func (q batchQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (q batchQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errors.New("batchQueue: Query is not batched")
}

func (q batchQueue) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	q.b.Queue(sql, args...)
	return queuedRow{}
}

// queuedRow stands in for a row that the batch will produce later.
type queuedRow struct{}

func (queuedRow) Scan(...any) error { return nil }

// resultBody is a stored answer of the usual size (an appointment as the
// envelope's result); the ceiling stores it like the server stores its own.
var resultBody = []byte(`{"id":"0197a3b0-0000-7000-8000-000000000000","customer_id":"0197a3b0-0000-7000-8000-000000000001",` +
	`"slot_id":"0197a3b0-0000-7000-8000-000000000002","service":"","status":"active",` +
	`"starts_at":"2030-01-02T09:00:00Z","ends_at":"2030-01-02T09:30:00Z"}`)

const lease = 30 * time.Second

// bookInput is the canonical input the server stores for a booking.
func bookInput(customer, slot uuid.UUID) []byte {
	b := make([]byte, 0, 112)
	b = append(b, `{"customer_id":"`...)
	b = append(b, customer.String()...)
	b = append(b, `","service":"","slot_id":"`...)
	b = append(b, slot.String()...)
	return append(b, `"}`...)
}

// ceilingBatch books slot in one round trip.
func (b *bench) ceilingBatch(ctx context.Context, tenant, customer, slot uuid.UUID) error {
	actionID, err := uuid.NewV7()
	if err != nil {
		return err
	}
	apptID, err := uuid.NewV7()
	if err != nil {
		return err
	}
	input := bookInput(customer, slot)
	confirmed, status, resource := string(db.Confirmed), int32(http.StatusCreated), apptID.String()
	batch := &pgx.Batch{}
	q := dbsqlc.New(batchQueue{batch})
	// Queueing cannot fail; the errors come from the batch results below.
	q.ClaimAction(ctx, dbsqlc.ClaimActionParams{ //nolint:errcheck
		ID: actionID, TenantID: tenant, IdempotencyKey: uuid.NewString(), Operation: "appointment.book",
		Fingerprint: canon.Fingerprint("appointment.book", 1, input), Request: input,
		Lease: pgtype.Interval{Microseconds: lease.Microseconds(), Valid: true},
	})
	q.BookSlot(ctx, dbsqlc.BookSlotParams{ //nolint:errcheck
		TenantID: tenant, SlotID: slot, ID: apptID, CustomerID: customer, ActionID: actionID,
	})
	q.CompleteAction(ctx, dbsqlc.CompleteActionParams{ //nolint:errcheck
		ID: actionID, Outcome: &confirmed, HTTPStatus: &status, ResourceID: &resource, Result: resultBody,
	})
	br := b.pool.SendBatch(ctx, batch)
	var errs []error
	for range batch.Len() {
		tag, err := br.Exec()
		if err == nil && tag.RowsAffected() != 1 {
			err = errors.New("a statement of the booking touched no row")
		}
		errs = append(errs, err)
	}
	return errors.Join(append(errs, br.Close())...)
}

// ceilingTx books slot with the store's methods one statement at a time in
// one transaction: BEGIN, claim, booking, completion, COMMIT.
func (b *bench) ceilingTx(ctx context.Context, tenant, customer, slot uuid.UUID) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	input := bookInput(customer, slot)
	return b.store.InTx(ctx, func(tx *db.Tx) error {
		claimed, err := tx.ClaimAction(ctx, db.Claim{
			ID: id, TenantID: tenant, Key: uuid.NewString(), Operation: "appointment.book",
			Fingerprint: canon.Fingerprint("appointment.book", 1, input), Request: input, Lease: lease,
		})
		if err != nil {
			return err
		}
		if !claimed {
			return errors.New("fresh key not claimed")
		}
		a, ok, err := tx.BookSlot(ctx, db.Booking{TenantID: tenant, ActionID: id, CustomerID: customer, SlotID: slot})
		if err != nil {
			return err
		}
		if ok != db.BookedOK {
			return errors.New("free slot not booked")
		}
		return tx.CompleteAction(ctx, id, db.Completion{
			Outcome: db.Confirmed, Status: http.StatusCreated, ResourceID: a.ID.String(), Result: resultBody,
		})
	})
}
