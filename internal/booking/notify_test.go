package booking_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/idem"
)

// A booking that also sends its confirmation runs the booking's one
// statement too, in a transaction of its own: while another one-statement
// attempt of its key holds the key's lock past the claim wait, it answers
// "in progress" and books nothing, as a booking without a message does.
func TestABookingWithAConfirmationWaitsForItsKeyInAnotherStatement(t *testing.T) {
	t.Parallel()
	e := setup(t)
	slot := futureSlot(t, e, 0)
	body, _ := json.Marshal(map[string]any{"customer_id": e.Customer(t), "slot_id": slot, "notify": "sms"})
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

// A booking that also sends its confirmation is confirmed with the
// appointment and the fate of the message, which, with no messaging
// provider, is recorded in the outbox in the same transaction ("recorded":
// nothing sends it); a retry replays that answer and records nothing more.
func TestABookingWithAConfirmationQueuesItOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: e.Tenant, Name: "Ana", Phone: "+442079460958"})
	if err != nil {
		t.Fatal(err)
	}
	slot := futureSlot(t, e, 0)
	body, _ := json.Marshal(map[string]any{"customer_id": c.ID, "slot_id": slot, "notify": "sms"})
	req := e.Request(t, booking.Book, body, uuid.NewString())
	first, err := e.Core.Do(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.Store.ActionByID(t.Context(), e.Tenant, first.Action.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID           uuid.UUID `json:"id"`
		SlotID       uuid.UUID `json:"slot_id"`
		Status       string    `json:"status"`
		Confirmation string    `json:"confirmation"`
	}
	if err := json.Unmarshal(stored.Result, &got); err != nil {
		t.Fatalf("answer %s: %v", stored.Result, err)
	}
	if stored.Outcome != oncecall.Confirmed || stored.Status != 201 || got.SlotID != slot || got.Status != "active" ||
		got.Confirmation != "recorded" || got.ID.String() != stored.ResourceID || !bytes.Equal(first.Action.Result, stored.Result) {
		t.Fatalf("answer %s %d %s (given %s), want confirmed 201 with the appointment and its confirmation recorded",
			stored.Outcome, stored.Status, stored.Result, first.Action.Result)
	}
	again, err := e.Core.Do(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Action.ID != stored.ID || !bytes.Equal(again.Action.Result, stored.Result) {
		t.Fatalf("retry: replayed=%v %s, want the stored answer replayed", again.Replayed, again.Action.Result)
	}
	if n := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1 AND action_id = $2", slot, stored.ID); n != 1 {
		t.Fatalf("%d appointments of the action, want 1", n)
	}
	if n := e.Count(t, "SELECT count(*) FROM messages WHERE tenant_id = $1", e.Tenant); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}
