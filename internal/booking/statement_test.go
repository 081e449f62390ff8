package booking_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/wire"
)

// appointmentNow is the answer's JSON of appointment id as it is stored,
// written by the wire converter the API answers with: the JSON the
// ClaimAnd... statements spell in SQL (queries/appointments.sql) must be
// that, byte for byte.
func (e env) appointmentNow(t *testing.T, id string) []byte {
	t.Helper()
	a, err := e.Store.AppointmentByID(t.Context(), e.Tenant, op.MustUUID(id))
	if err != nil {
		t.Fatal(err)
	}
	return answerOf(t, wire.FromAppointment(a))
}

// check fails unless a is outcome with reason and status, and its body is
// want (the stored appointment when want is nil and a names one).
func (e env) check(t *testing.T, name string, a oncecall.Action, outcome oncecall.Outcome, reason string, status int, want []byte) {
	t.Helper()
	if a.State != oncecall.Completed || a.Outcome != outcome || a.Reason != reason || a.Status != status {
		t.Errorf("%s: %s %s %s %d, want completed %s %s %d", name, a.State, a.Outcome, a.Reason, a.Status, outcome, reason, status)
	}
	if (a.ResourceID != "") != (outcome == oncecall.Confirmed) {
		t.Errorf("%s: resource id %q", name, a.ResourceID)
	}
	if want == nil {
		want = e.appointmentNow(t, a.ResourceID)
	}
	if !bytes.Equal(a.Result, want) {
		t.Errorf("%s: answer\n %s\nwant\n %s", name, a.Result, want)
	}
}

// A booking is confirmed with the appointment, or rejected naming the
// slot or customer, for every outcome.
func TestBookingOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	customer := e.Customer(t)
	start := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour).Add(1500 * time.Millisecond)
	slot := func(at time.Time) uuid.UUID { return e.Slot(t, at) }
	taken := slot(start)
	bookedIn(t, e, taken)
	past, missingCustomer, missingSlot := slot(time.Now().Add(-time.Hour)), uuid.New(), uuid.New()
	for _, c := range []struct {
		name     string
		customer uuid.UUID
		slot     uuid.UUID
		service  string
		outcome  oncecall.Outcome
		reason   string
		body     map[string]any
	}{
		{"confirmed", customer, slot(start), "Cut and colour", oncecall.Confirmed, "", nil},
		{"confirmed, text to escape", customer, slot(start), `<Cut & "colour"> é`, oncecall.Confirmed, "", nil},
		{"slot taken", customer, taken, "", oncecall.Rejected, booking.SlotUnavailable, map[string]any{"slot_id": taken}},
		{"slot in the past", customer, past, "", oncecall.Rejected, booking.SlotUnavailable, map[string]any{"slot_id": past}},
		{"slot missing", customer, missingSlot, "", oncecall.Rejected, booking.SlotNotFound, map[string]any{"slot_id": missingSlot}},
		{"customer missing", missingCustomer, slot(start), "", oncecall.Rejected, booking.CustomerNotFound, map[string]any{"customer_id": missingCustomer}},
	} {
		a := e.Run(t, booking.Book, map[string]any{"customer_id": c.customer, "slot_id": c.slot, "service": c.service})
		status, want := 201, []byte(nil)
		if c.body != nil {
			status, want = 422, answerOf(t, c.body)
		}
		e.check(t, c.name, a, c.outcome, c.reason, status, want)
		if n := e.Count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1 AND action_id = $2", c.slot, a.ID); n != map[bool]int{true: 1}[c.outcome == oncecall.Confirmed] {
			t.Errorf("%s: %d appointments of the action", c.name, n)
		}
	}
}

// A cancellation is confirmed with the cancelled appointment, or rejected
// with the appointment as it is, or naming it when it is missing.
func TestCancelOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cancelled := bookedIn(t, e, futureSlot(t, e, 1))
	if _, ok, err := e.Store.CancelAppointment(t.Context(), e.Tenant, cancelled); err != nil || !ok {
		t.Fatalf("cancel beforehand: %v %v", ok, err)
	}
	missing := uuid.New()
	for _, c := range []struct {
		name        string
		appointment uuid.UUID
		outcome     oncecall.Outcome
		reason      string
		body        []byte
	}{
		{"confirmed", bookedIn(t, e, futureSlot(t, e, 0)), oncecall.Confirmed, "", nil},
		{"already cancelled", cancelled, oncecall.Rejected, booking.AppointmentNotActive, e.appointmentNow(t, cancelled.String())},
		{"missing", missing, oncecall.Rejected, booking.AppointmentNotFound, answerOf(t, map[string]any{"appointment_id": missing})},
	} {
		a := e.Run(t, booking.Cancel, map[string]any{"appointment_id": c.appointment})
		status := 200
		if c.outcome == oncecall.Rejected {
			status = 422
		}
		e.check(t, c.name, a, c.outcome, c.reason, status, c.body)
	}
	if n := e.Count(t, "SELECT count(*) FROM appointments WHERE status = 'active'"); n != 0 {
		t.Errorf("%d active appointments left", n)
	}
}

// A move is confirmed with the moved appointment (unchanged when it is in
// that slot already), or rejected as the appointment or slot allows.
func TestRescheduleOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := 0
	slot := func() uuid.UUID { n++; return futureSlot(t, e, n) }
	stay := slot()
	inPlace := bookedIn(t, e, stay)
	cancelled := bookedIn(t, e, slot())
	if _, ok, err := e.Store.CancelAppointment(t.Context(), e.Tenant, cancelled); err != nil || !ok {
		t.Fatalf("cancel beforehand: %v %v", ok, err)
	}
	taken := slot()
	bookedIn(t, e, taken)
	past := e.Slot(t, time.Now().Add(-time.Hour))
	missingAppointment, missingSlot := uuid.New(), uuid.New()
	for _, c := range []struct {
		name        string
		appointment uuid.UUID
		slot        uuid.UUID
		outcome     oncecall.Outcome
		reason      string
		body        []byte
	}{
		{"moved", bookedIn(t, e, slot()), slot(), oncecall.Confirmed, "", nil},
		{"already in that slot", inPlace, stay, oncecall.Confirmed, "", nil},
		{"appointment missing", missingAppointment, slot(), oncecall.Rejected, booking.AppointmentNotFound,
			answerOf(t, map[string]any{"appointment_id": missingAppointment})},
		{"appointment cancelled", cancelled, slot(), oncecall.Rejected, booking.AppointmentNotActive, e.appointmentNow(t, cancelled.String())},
		{"slot taken", bookedIn(t, e, slot()), taken, oncecall.Rejected, booking.SlotUnavailable, answerOf(t, map[string]any{"slot_id": taken})},
		{"slot in the past", bookedIn(t, e, slot()), past, oncecall.Rejected, booking.SlotUnavailable, answerOf(t, map[string]any{"slot_id": past})},
		{"slot missing", bookedIn(t, e, slot()), missingSlot, oncecall.Rejected, booking.SlotNotFound, answerOf(t, map[string]any{"slot_id": missingSlot})},
	} {
		a := e.Run(t, booking.Reschedule, map[string]any{"appointment_id": c.appointment, "slot_id": c.slot})
		status := 200
		if c.outcome == oncecall.Rejected {
			status = 422
		}
		e.check(t, c.name, a, c.outcome, c.reason, status, c.body)
		if c.outcome == oncecall.Confirmed && e.Count(t, "SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", c.appointment, c.slot) != 1 {
			t.Errorf("%s: the appointment is not active in the new slot", c.name)
		}
	}
}
