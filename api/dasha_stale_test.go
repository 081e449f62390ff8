package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
)

// A key derived from identity fields (no action_id, no Idempotency-Key)
// names "this customer in this slot", not one moment: once the object it
// names is no longer as the stored answer describes, the same words are a
// new request, never a replay of a confirmation that is no longer true.

func TestBookAfterCancelBooksAgain(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	first := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if first.Outcome != "confirmed" {
		t.Fatalf("first booking: %+v", first)
	}
	appt := detailID(t, first)
	cancel := decodeAnswer(t, d.call("cancel_appointment", "call-2", map[string]any{"appointment_id": appt}))
	if cancel.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", cancel)
	}
	again := decodeAnswer(t, d.call("book_appointment", "call-3", d.bookArgs(d.slot)))
	if again.Outcome != "confirmed" || again.ActionID == first.ActionID {
		t.Fatalf("booking after the cancellation answered %+v (first action %s): a replay of a booking that no longer exists", again, first.ActionID)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", d.slot); n != 1 {
		t.Fatalf("active appointments in the slot = %d, want 1", n)
	}
	if id := detailID(t, again); id == appt {
		t.Fatalf("the new booking names the cancelled appointment %s", appt)
	}
	// A Dasha retry of call 3's request replays call 3's booking.
	retry := decodeAnswer(t, d.call("book_appointment", "call-3", d.bookArgs(d.slot)))
	if retry.ActionID != again.ActionID || retry.Outcome != "confirmed" {
		t.Fatalf("retry of the new booking: %+v, want a replay of %s", retry, again.ActionID)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", d.slot); n != 2 {
		t.Fatalf("appointments in the slot = %d, want 2 (one cancelled, one active)", n)
	}
}

func TestRescheduleBackAndForthMovesEachTime(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	s1, s2 := d.slot, d.Slot(d.tenant, 2)
	appt := detailID(t, decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.Slot(d.tenant, 3)))))
	for i, to := range []uuid.UUID{s1, s2, s1, s2} {
		a := decodeAnswer(t, d.call("reschedule_appointment", "call-1", map[string]any{"appointment_id": appt, "slot_id": to}))
		if a.Outcome != "confirmed" {
			t.Fatalf("move %d: %+v", i+1, a)
		}
		if n := d.Count("SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", appt, to); n != 1 {
			t.Fatalf("after move %d the appointment is not in slot %s: the answer said confirmed", i+1, to)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'appointment.reschedule'"); n != 4 {
		t.Fatalf("reschedule actions = %d, want 4 (each move is its own action)", n)
	}
}

func TestCreateCustomerAfterThePhoneWasRemovedCreatesAgain(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	args := map[string]any{"name": "Ana", "phone": "+447700900123"}
	first := decodeAnswer(t, d.call("create_customer", "call-1", args))
	if first.Outcome != "confirmed" {
		t.Fatalf("create: %+v", first)
	}
	removed := decodeAnswer(t, d.call("update_customer", "call-2", map[string]any{"customer_id": detailID(t, first), "phone": nil}))
	if removed.Outcome != "confirmed" {
		t.Fatalf("remove phone: %+v", removed)
	}
	again := decodeAnswer(t, d.call("create_customer", "call-3", args))
	if again.Outcome != "confirmed" || again.ActionID == first.ActionID {
		t.Fatalf("create after the phone was removed answered %+v: a replay of a record that no longer has that phone", again)
	}
	if n := d.Count("SELECT count(*) FROM customers WHERE tenant_id = $1 AND phone = '+447700900123'", d.tenant); n != 1 {
		t.Fatalf("customers with the phone = %d, want 1", n)
	}
}

// A rejection did nothing, so once it is older than the rejection hold the
// same request is decided afresh; until then (duplicates of the request)
// it is the answer, even when the slot was freed meanwhile.
func TestSlotUnavailableIsNotReplayedAfterTheSlotIsFreed(t *testing.T) {
	t.Parallel()
	const hold = 2 * time.Second
	d := setupDasha(t, func(c *app.Config) { c.Core.RejectionHold = hold })
	other := d.Customer(d.tenant)
	taken := decodeAnswer(t, d.call("book_appointment", "call-1", map[string]any{"customer_id": other, "slot_id": d.slot}))
	if taken.Outcome != "confirmed" {
		t.Fatalf("other customer's booking: %+v", taken)
	}
	refused := decodeAnswer(t, d.call("book_appointment", "call-2", d.bookArgs(d.slot)))
	if refused.Outcome != "rejected" || refused.Reason != "slot_unavailable" {
		t.Fatalf("booking a taken slot: %+v", refused)
	}
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-1", map[string]any{"appointment_id": detailID(t, taken)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	if dup := decodeAnswer(t, d.call("book_appointment", "call-2", d.bookArgs(d.slot))); dup.ActionID != refused.ActionID || dup.Reason != "slot_unavailable" {
		t.Fatalf("a duplicate within the rejection hold answered %+v, want the rejection %s", dup, refused.ActionID)
	}
	var completed time.Time
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT completed_at FROM actions WHERE id = $1", refused.ActionID).Scan(&completed); err != nil {
		t.Fatal(err)
	}
	// The rule is about time: wait until the hold has passed.
	time.Sleep(time.Until(completed.Add(hold)))
	now := decodeAnswer(t, d.call("book_appointment", "call-2", d.bookArgs(d.slot)))
	if now.Outcome != "confirmed" {
		t.Fatalf("booking the freed slot answered %+v: a stale rejection", now)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND customer_id = $2 AND status = 'active'", d.slot, d.customer); n != 1 {
		t.Fatalf("the caller's active appointments in the slot = %d, want 1", n)
	}
}

func TestCheckActionStatusReportsACancelledBooking(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-2", map[string]any{"appointment_id": detailID(t, booked)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	resp := d.call("check_action_status", "call-3", map[string]any{"action_id": booked.ActionID})
	var status struct {
		answer
		Current string `json:"current"`
	}
	if err := json.Unmarshal(resp.Body, &status); err != nil {
		t.Fatal(err)
	}
	if status.Current != "cancelled" {
		t.Fatalf("check_action_status of a cancelled booking: current %q, want cancelled: %s", status.Current, resp.Body)
	}
	if strings.Contains(status.Say, "is booked") || !strings.Contains(status.Say, "cancelled") {
		t.Fatalf("say %q must not call the booking current and must say it was cancelled", status.Say)
	}
}

// detailID is the id of the resource an answer's details describe.
func detailID(t *testing.T, a answer) string {
	t.Helper()
	var d struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(a.Details, &d); err != nil || d.ID == "" {
		t.Fatalf("answer details carry no id: %s", a.Details)
	}
	return d.ID
}

// Concurrent deliveries of the request that supersedes a stale answer make
// one new action between them.
func TestConcurrentRebookAfterCancelBooksOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	first := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-2", map[string]any{"appointment_id": detailID(t, first)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	const n = 10
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = decodeAnswer(t, d.call("book_appointment", "call-3", d.bookArgs(d.slot))) })
	}
	wg.Wait()
	for _, a := range answers {
		if a.Outcome != "confirmed" || a.ActionID != answers[0].ActionID || a.ActionID == first.ActionID {
			t.Fatalf("answers %+v: want one new confirmed action for all", answers)
		}
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1 AND status = 'active'", d.slot); n != 1 {
		t.Fatalf("active appointments in the slot = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'appointment.book'"); n != 2 {
		t.Fatalf("booking actions = %d, want 2 (the cancelled one and one new)", n)
	}
}

// A repeat that names its action (action_id) is a retry of that action, not
// a new request: it replays, and says what became of the booking since.
func TestRetryByActionIDSaysTheBookingWasCancelled(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	first := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-1", map[string]any{"appointment_id": detailID(t, first)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	args := d.bookArgs(d.slot)
	args["action_id"] = first.ActionID
	resp := d.call("book_appointment", "call-1", args)
	var got struct {
		answer
		Current string `json:"current"`
	}
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	if got.ActionID != first.ActionID || got.Current != "cancelled" || strings.Contains(got.Say, "is booked") {
		t.Fatalf("retry of a cancelled booking by its action_id: %s", resp.Body)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", d.slot); n != 1 {
		t.Fatalf("appointments in the slot = %d, want 1 (the retry must not book)", n)
	}
}

// An agent is not read back contact data it does not need: the answers to
// create_customer and send_message carry ids, not the phone or e-mail.
func TestDashaAnswersWithholdContactData(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	const phone, email = "+447700900999", "ana@example.com"
	created := d.call("create_customer", "call-1", map[string]any{"name": "Ana", "phone": phone, "email": email})
	a := decodeAnswer(t, created)
	if a.Outcome != "confirmed" || strings.Contains(string(created.Body), phone) || strings.Contains(string(created.Body), email) {
		t.Fatalf("create_customer answer: %s", created.Body)
	}
	sent := d.call("send_message", "call-1", map[string]any{
		"customer_id": detailID(t, a), "channel": "sms", "template": "generic", "variables": map[string]string{"body": "See you soon"},
	})
	if m := decodeAnswer(t, sent); m.Outcome != "confirmed" || strings.Contains(string(sent.Body), phone) {
		t.Fatalf("send_message answer: %s", sent.Body)
	}
	if n := d.Count("SELECT count(*) FROM messages WHERE recipient = $1", phone); n != 1 {
		t.Fatalf("outbox rows to the customer = %d, want 1", n)
	}
}

// A retry of a tool call sent under its own Idempotency-Key is answered from
// the answers the server keeps in memory, and still says what happened to
// the booking since, as one read from the database does: the kept answer
// holds the request it was made for.
func TestKeptToolAnswerSaysTheBookingMoved(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot), "Idempotency-Key", "book-hdr-1"))
	if booked.Outcome != "confirmed" {
		t.Fatalf("book: %+v", booked)
	}
	other := d.Slot(d.tenant, 2)
	moved := d.Post("/v1/appointments/"+detailID(t, booked)+"/reschedule", d.key, "move-1", map[string]any{"slot_id": other})
	if moved.Status != http.StatusOK {
		t.Fatalf("reschedule: %d %s", moved.Status, moved.Body)
	}
	resp := d.call("book_appointment", "call-1", d.bookArgs(d.slot), "Idempotency-Key", "book-hdr-1")
	var again struct {
		answer
		Current string `json:"current"`
	}
	if err := json.Unmarshal(resp.Body, &again); err != nil {
		t.Fatal(err)
	}
	if again.ActionID != booked.ActionID || again.Current != "moved" {
		t.Fatalf("retry after the booking moved: action %s current %q, want %s moved: %s", again.ActionID, again.Current, booked.ActionID, resp.Body)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 1 {
		t.Fatalf("%d appointments, want 1", n)
	}
}
