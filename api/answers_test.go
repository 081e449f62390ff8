package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/prune"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// Tests that every answer is true for the caller who hears it: whose record
// it is, the time and amount as a person says them, what already stands.

// fullAnswer is an answer with every field a Dasha answer may carry.
type fullAnswer struct {
	answer
	Current string `json:"current"`
}

func decodeFull(t *testing.T, body []byte) fullAnswer {
	t.Helper()
	var a fullAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("answer: %v: %s", err, body)
	}
	return a
}

func answerDetails(t *testing.T, a answer) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.Details, &m); err != nil {
		t.Fatalf("details %s: %v", a.Details, err)
	}
	return m
}

// A customer created by name alone in one call is not handed to another
// caller who gives the same name: without a phone, e-mail or external
// reference the call is part of the record's identity.
func TestCreateCustomerByNameAloneIsNotSharedAcrossCalls(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	args := map[string]any{"name": "John Smith"}
	a := decodeAnswer(t, d.call("create_customer", "call-A", args))
	again := d.call("create_customer", "call-A", args)
	b := decodeAnswer(t, d.call("create_customer", "call-B", args))
	if a.Outcome != "confirmed" || b.Outcome != "confirmed" {
		t.Fatalf("creates: %+v %+v", a, b)
	}
	if !again.Replayed() || decodeAnswer(t, again).ActionID != a.ActionID {
		t.Fatalf("a retry in the same call is not a replay: %s", again.Body)
	}
	if b.ActionID == a.ActionID || detailID(t, b) == detailID(t, a) {
		t.Fatalf("call B was handed call A's customer: %s / %s", a.Details, b.Details)
	}
	if n := d.Count("SELECT count(*) FROM customers WHERE tenant_id = $1 AND name = 'John Smith'", d.tenant); n != 2 {
		t.Fatalf("customers named John Smith = %d, want 2 (one per call)", n)
	}
}

// The answers that name a time say it in the tenant's local time, and the
// confirmation message renders it so too.
func TestBookingAnswersAndMessagesSpeakLocalTime(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	if _, err := d.Store.Pool().Exec(t.Context(), "UPDATE tenants SET timezone = 'America/New_York' WHERE id = $1", d.tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store.Pool().Exec(t.Context(), "UPDATE customers SET phone = '+12125550100' WHERE id = $1", d.customer); err != nil {
		t.Fatal(err)
	}
	// Set by SQL, the zone keeps the tenant's locale, en-GB.
	ny, _ := schedule.NewClock("America/New_York", "en-GB")
	whenOf := func(slot uuid.UUID) string {
		var start time.Time
		if err := d.Store.Pool().QueryRow(t.Context(), "SELECT starts_at FROM slots WHERE id = $1", slot).Scan(&start); err != nil {
			t.Fatal(err)
		}
		return ny.Spoken(start, time.Now())
	}
	args := d.bookArgs(d.slot)
	args["notify"] = "sms"
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", args))
	if booked.Outcome != "confirmed" {
		t.Fatalf("book: %+v", booked)
	}
	want := whenOf(d.slot)
	if got := answerDetails(t, booked); got["when"] != want || got["timezone"] != "America/New_York" {
		t.Fatalf("book answer details %s: want when %q in America/New_York", booked.Details, want)
	}
	var body string
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT body FROM messages WHERE customer_id = $1", d.customer).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, want) || strings.Contains(body, "UTC") {
		t.Fatalf("confirmation text %q: want the local time %q, not UTC", body, want)
	}
	other := d.Slot(d.tenant, 30)
	moved := decodeAnswer(t, d.call("reschedule_appointment", "call-1", map[string]any{"appointment_id": detailID(t, booked), "slot_id": other}))
	if got := answerDetails(t, moved); moved.Outcome != "confirmed" || got["when"] != whenOf(other) {
		t.Fatalf("reschedule answer details %s: want when %q", moved.Details, whenOf(other))
	}
}

// A charge's answer gives the amount as a person says it, read from the
// intent (the payments provider's answer holds only its reference).
func TestRemoteChargeAnswerSpeaksTheAmount(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Payments: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: 24 * time.Hour, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true
	})
	intent := d.intent(t, 4500)
	charged := decodeAnswer(t, d.call("charge_payment", "call-1", map[string]any{"payment_intent_id": intent}))
	got := answerDetails(t, charged)
	if charged.Outcome != "confirmed" || got["amount_spoken"] != "45.00 euros" || got["currency"] != "EUR" || got["amount"] != float64(4500) {
		t.Fatalf("remote charge answer details %s: want amount 4500, currency EUR, amount_spoken 45.00 euros", charged.Details)
	}
	if n := d.Count("SELECT count(*) FROM payments WHERE intent_id = $1 AND status = 'succeeded'", intent); n != 1 {
		t.Fatalf("succeeded payments of the intent = %d, want 1", n)
	}
}

// A re-planned request that restates the default (the intent's own amount)
// is the same request; one with another detail is told what already stands
// and not to try again, never that nothing was done.
func TestChargeRestatingTheIntentsAmountIsAReplay(t *testing.T) {
	t.Parallel()
	d := setupDasha(t, simPayments(t))
	intent := d.intent(t, 4500)
	charged := decodeAnswer(t, d.call("charge_payment", "call-1", map[string]any{"payment_intent_id": intent}))
	restated := d.call("charge_payment", "call-1", map[string]any{"payment_intent_id": intent, "amount": 4500})
	if a := decodeAnswer(t, restated); a.Outcome != "confirmed" || a.ActionID != charged.ActionID || !restated.Replayed() {
		t.Fatalf("a charge restating the intent's amount: %s", restated.Body)
	}
	if n := d.Count("SELECT count(*) FROM payments WHERE intent_id = $1", intent); n != 1 {
		t.Fatalf("payments = %d, want 1", n)
	}
}

func TestConflictingBookingSaysWhatStands(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	args := d.bookArgs(d.slot)
	args["service"] = "haircut"
	c := decodeFull(t, d.call("book_appointment", "call-1", args).Body)
	if c.Reason != "conflicting_request" || strings.Contains(c.Say, "Nothing was done") {
		t.Fatalf("conflicting booking: %+v", c)
	}
	var det struct {
		Existing struct {
			ActionID string          `json:"action_id"`
			Outcome  string          `json:"outcome"`
			Details  json.RawMessage `json:"details"`
		} `json:"existing"`
	}
	if err := json.Unmarshal(c.Details, &det); err != nil || det.Existing.ActionID != booked.ActionID ||
		det.Existing.Outcome != "confirmed" || !strings.Contains(string(det.Existing.Details), d.slot.String()) {
		t.Fatalf("conflicting answer does not say what stands: %s (%v)", c.Details, err)
	}
	if !strings.Contains(strings.ToLower(c.Say), "do not call") {
		t.Fatalf("say %q does not forbid a second attempt", c.Say)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE customer_id = $1", d.customer); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// A reworded reason is the same points change within a call; a deliberate
// second change of the same size names itself with points_ref. A replay
// gives the balance as it is now.
func TestRewordedPointsChangeAddsOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	add := func(reason, ref string) fullAnswer {
		args := map[string]any{"customer_id": d.customer, "delta": 10, "reason": reason}
		if ref != "" {
			args["points_ref"] = ref
		}
		return decodeFull(t, d.call("add_loyalty_points", "call-1", args).Body)
	}
	first := add("deposit paid over the phone", "")
	second := add("Deposit paid by phone", "")
	if first.Outcome != "confirmed" || second.Outcome != "confirmed" || second.ActionID != first.ActionID {
		t.Fatalf("reworded points change: %+v / %+v", first, second)
	}
	if n := d.Count("SELECT points FROM customers WHERE id = $1", d.customer); n != 10 {
		t.Fatalf("balance after a reworded retry = %d, want 10", n)
	}
	if a := add("second visit", "visit-2"); a.Outcome != "confirmed" || a.ActionID == first.ActionID {
		t.Fatalf("deliberate second change: %+v", a)
	}
	if n := d.Count("SELECT points FROM customers WHERE id = $1", d.customer); n != 20 {
		t.Fatalf("balance after a deliberate second change = %d, want 20", n)
	}
	replay := add("deposit paid over the phone", "")
	var det map[string]any
	if err := json.Unmarshal(replay.Details, &det); err != nil {
		t.Fatal(err)
	}
	if b, ok := det["balance"]; ok && b != float64(20) {
		t.Fatalf("a replay quotes a stale balance: %s", replay.Details)
	}
	if det["balance_now"] != float64(20) {
		t.Fatalf("a replay does not give the balance now: %s", replay.Details)
	}
}

// A reworded note in the same call amends that call's note; a deliberate
// second note names itself with note_ref.
func TestRewordedNoteIsOneNotePerCall(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	note := func(text, ref string) answer {
		args := map[string]any{"customer_id": d.customer, "text": text}
		if ref != "" {
			args["note_ref"] = ref
		}
		return decodeAnswer(t, d.call("add_customer_note", "call-1", args))
	}
	if a := note("Prefers morning appointments", ""); a.Outcome != "confirmed" {
		t.Fatalf("note: %+v", a)
	}
	if a := note("Prefers mornings", ""); a.Outcome != "confirmed" {
		t.Fatalf("reworded note: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", d.customer); n != 1 {
		t.Fatalf("notes after a reworded note = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1 AND text = 'Prefers mornings'", d.customer); n != 1 {
		t.Fatal("the call's note does not hold the later wording")
	}
	if a := note("Allergic to latex", "allergy"); a.Outcome != "confirmed" {
		t.Fatalf("second note: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM customer_notes WHERE customer_id = $1", d.customer); n != 2 {
		t.Fatalf("notes after a deliberate second note = %d, want 2", n)
	}
}

// With a remote CRM, which is asked to append and cannot amend, a reworded
// note in the same call is the same request: one note at the provider, and
// the answer says what stands.
func TestRewordedNoteToARemoteCRMIsOneWrite(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.CRM: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: 24 * time.Hour, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true
	})
	first := decodeAnswer(t, d.call("add_customer_note", "call-1", map[string]any{"customer_id": d.customer, "text": "Prefers morning appointments"}))
	again := decodeFull(t, d.call("add_customer_note", "call-1", map[string]any{"customer_id": d.customer, "text": "Prefers mornings"}).Body)
	if first.Outcome != "confirmed" || again.Reason != "conflicting_request" || !strings.Contains(string(again.Details), first.ActionID) {
		t.Fatalf("reworded note to a remote CRM: %+v / %+v", first, again)
	}
	if n := len(sim.Ledger(provider.CRM)); n != 1 {
		t.Fatalf("CRM writes = %d, want 1", n)
	}
}

// A status check of a cancelled booking does not show it active: its
// details are marked as of the action.
func TestStatusOfACancelledBookingMarksItsDetails(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-1", map[string]any{"appointment_id": detailID(t, booked)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	before := decodeFull(t, d.call("check_action_status", "call-2", map[string]any{"action_id": booked.ActionID}).Body)
	// Details either show the current state or are marked as of the action.
	var det struct {
		Status  string          `json:"status"`
		Current string          `json:"current"`
		Then    json.RawMessage `json:"as_of_the_action"`
	}
	if err := json.Unmarshal(before.Details, &det); err != nil || before.Current != "cancelled" || det.Status == "active" ||
		det.Current != "cancelled" || !strings.Contains(string(det.Then), d.slot.String()) {
		t.Fatalf("status of a cancelled booking shows it active: %+v %s", before, before.Details)
	}
}

// After the response body and request are pruned, a status check of a
// cancelled booking does not say it stands.
func TestStatusAfterPruningReportsACancelledBooking(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call-1", d.bookArgs(d.slot)))
	if a := decodeAnswer(t, d.call("cancel_appointment", "call-1", map[string]any{"appointment_id": detailID(t, booked)})); a.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", a)
	}
	p := prune.New(d.Store, prune.Config{ResponseRetention: time.Hour, ActionRetention: 30 * 24 * time.Hour})
	if c, err := p.Run(t.Context(), time.Now().Add(2*time.Hour)); err != nil || c.Responses == 0 {
		t.Fatalf("prune: %+v %v", c, err)
	}
	after := decodeFull(t, d.call("check_action_status", "call-2", map[string]any{"action_id": booked.ActionID}).Body)
	if after.Current != "cancelled" || strings.Contains(after.Say, "is booked") {
		t.Fatalf("status after pruning says the cancelled booking stands: %+v", after)
	}
}

// An action waiting for an operator gets a final wording: a person follows
// up, and the agent stops checking.
func TestNeedsOperatorHasAFinalWording(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	id := uuid.Must(uuid.NewV7())
	if _, err := d.Store.Pool().Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, needs_operator)
		VALUES ($1, $2, 'stuck', 'payment.charge', 'fp', '{}', 'unknown', true)`, id, d.tenant); err != nil {
		t.Fatal(err)
	}
	a := decodeFull(t, d.call("check_action_status", "call-1", map[string]any{"action_id": id.String()}).Body)
	say := strings.ToLower(a.Say)
	if a.Outcome != "pending" || a.Reason != "needs_operator" || strings.Contains(say, "then call check_action_status") ||
		!strings.Contains(say, "do not call check_action_status") || !strings.Contains(say, "follow up") {
		t.Fatalf("needs_operator answer: %+v", a)
	}
	assertPendingWording(t, a.answer)
}

// find_available_slots takes a plain date: the tenant's local day.
func TestFreeSlotsFromAPlainDate(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	day := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	a := decodeAnswer(t, d.call("find_available_slots", "call-1", map[string]any{"from": day}))
	if a.Outcome != "confirmed" {
		t.Fatalf("find_available_slots with a plain date: %+v", a)
	}
}

// An agent finds the payment intent to charge: the customer's approved,
// uncharged intents with speakable amounts, by tool and by REST.
func TestOpenPaymentIntentsAreListed(t *testing.T) {
	t.Parallel()
	d := setupDasha(t, simPayments(t))
	charged, open := d.intent(t, 4500), d.intent(t, 1000)
	if a := decodeAnswer(t, d.call("charge_payment", "call-1", map[string]any{"payment_intent_id": charged})); a.Outcome != "confirmed" {
		t.Fatalf("charge: %+v", a)
	}
	type intent struct {
		ID           string `json:"payment_intent_id"`
		Amount       int64  `json:"amount"`
		Currency     string `json:"currency"`
		AmountSpoken string `json:"amount_spoken"`
	}
	a := decodeAnswer(t, d.call("list_payment_intents", "call-1", map[string]any{"customer_id": d.customer}))
	var det struct {
		Intents []intent `json:"payment_intents"`
	}
	if err := json.Unmarshal(a.Details, &det); err != nil || a.Outcome != "confirmed" || len(det.Intents) != 1 ||
		det.Intents[0].ID != open || det.Intents[0].AmountSpoken != "10.00 euros" || det.Intents[0].Currency != "EUR" {
		t.Fatalf("list_payment_intents: %+v %s (%v)", a, a.Details, err)
	}
	if !strings.Contains(a.Say, "charge_payment") {
		t.Fatalf("say %q does not lead to charge_payment", a.Say)
	}
	r := d.Get("/v1/payment-intents?customer_id="+d.customer.String(), d.key)
	var list struct {
		Intents []struct {
			ID           string `json:"id"`
			AmountSpoken string `json:"amount_spoken"`
		} `json:"payment_intents"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Status != 200 || len(list.Intents) != 1 ||
		list.Intents[0].ID != open || list.Intents[0].AmountSpoken != "10.00 euros" {
		t.Fatalf("GET /v1/payment-intents: %d %s", r.Status, r.Body)
	}
	if r := d.Get("/v1/payment-intents?customer_id="+d.customer.String()+"&customer_id=x", d.key); r.Status != 400 {
		t.Fatalf("a parameter given twice: %d %s", r.Status, r.Body)
	}
	other := decodeAnswer(t, d.call("list_payment_intents", "call-1", map[string]any{"customer_id": uuid.NewString()}))
	if other.Outcome != "rejected" || other.Reason != "customer_not_found" {
		t.Fatalf("another customer id: %+v", other)
	}
}
