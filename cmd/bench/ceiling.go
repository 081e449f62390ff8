package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/canon"
)

// The ceiling scenarios send the SQL of one booking (claim, booking,
// completion) without HTTP and without anything else the server does. The
// statements are the server's own: ceiling sends the one statement a first
// execution of a booking sends (db.Store.ClaimOnce with the booking's
// statement), and ceiling_tx calls the store's methods in one transaction as
// the idempotency core does for an operation without a statement.

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

// ceilingBatch books slot with the server's one statement.
func (b *bench) ceilingBatch(ctx context.Context, tenant, customer, slot uuid.UUID) error {
	_, err := claimBooking(ctx, b.store, tenant, uuid.NewString(), customer, slot)
	return err
}

// claimBooking sends the statement a first execution of a booking sends
// (db.Store.ClaimOnce with the booking's statement) under a fresh key, as
// ceiling does and the statement scenario's handler does, and returns the
// action it stored.
func claimBooking(ctx context.Context, store *db.Store, tenant uuid.UUID, key string, customer, slot uuid.UUID) (oncecall.Action, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Action{}, err
	}
	input := bookInput(customer, slot)
	st := db.NewStatement(tenant)
	st.Book(customer, slot, "")
	claimed, a, err := store.ClaimOnce(ctx, db.Claim{
		ID: id, TenantID: tenant, Key: key, Operation: "appointment.book",
		Fingerprint: canon.Fingerprint("appointment.book", 1, input), Request: input,
	}, claimWait, st)
	if err != nil {
		return a, err
	}
	if !claimed || a.Outcome != oncecall.Confirmed {
		return a, errors.New("a fresh key and a free slot were not booked")
	}
	return a, nil
}

// claimWait is the idempotency core's default.
const claimWait = 10 * time.Second

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
			Outcome: oncecall.Confirmed, Status: http.StatusCreated, ResourceID: a.ID.String(), Result: resultBody,
		})
	})
}
