package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// callbackArgs is a request for a callback of customer in a window on the
// tenant's wall clock.
func callbackArgs(customer uuid.UUID, start, end, reason string) map[string]any {
	return map[string]any{"customer_id": customer, "window_start": start, "window_end": end, "reason": reason}
}

// A callback requested over REST is one row; a retry with the key replays
// the answer and writes nothing more.
func TestCallbackRequestOverRESTIsOneRow(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	ana := e.customer("+442079460001", "")
	body := callbackArgs(ana, "2030-07-05T14:00", "2030-07-05T16:00", "Question about the last invoice")
	first := e.Post("/v1/callbacks", e.key, "cb-1", body)
	if first.Status != http.StatusCreated || first.Replayed() {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	res := resultOf(t, first)
	if res["status"] != "requested" || res["customer_id"] != ana.String() || res["timezone"] != "UTC" ||
		res["window_start_local"] != "2030-07-05T14:00:00Z" {
		t.Fatalf("result: %v", res)
	}
	again := e.Post("/v1/callbacks", e.key, "cb-1", body)
	if again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("retry: %d replayed=%v %s", again.Status, again.Replayed(), again.Body)
	}
	if n := e.Count(`SELECT count(*) FROM callbacks WHERE tenant_id = $1 AND customer_id = $2 AND status = 'requested'
		AND window_start = '2030-07-05T14:00:00Z' AND window_end = '2030-07-05T16:00:00Z'
		AND reason = 'Question about the last invoice'`, e.tenant, ana); n != 1 {
		t.Fatalf("callback rows = %d, want 1", n)
	}
	byPhone := e.Post("/v1/callbacks", e.key, "cb-2", map[string]any{
		"phone": "+44 20 7946 0002", "window_start": "2030-07-06 09:00", "window_end": "2030-07-06T12:00:00", "reason": "Quote",
	})
	if byPhone.Status != http.StatusCreated {
		t.Fatalf("by phone: %d %s", byPhone.Status, byPhone.Body)
	}
	if n := e.Count("SELECT count(*) FROM callbacks WHERE phone = '+442079460002' AND customer_id IS NULL AND window_start = '2030-07-06T09:00:00Z'"); n != 1 {
		t.Fatalf("callback rows by phone = %d, want 1", n)
	}
	list := e.Get("/v1/callbacks?customer_id="+ana.String(), e.key)
	if list.Status != http.StatusOK || strings.Count(string(list.Body), `"id"`) != 1 || !strings.Contains(string(list.Body), "Question about the last invoice") {
		t.Fatalf("list: %d %s", list.Status, list.Body)
	}
	if l := e.Get("/v1/callbacks?phone=%2B442079460002", e.key); l.Status != http.StatusOK || !strings.Contains(string(l.Body), `"Quote"`) {
		t.Fatalf("list by phone: %d %s", l.Status, l.Body)
	}
	cancelled := e.Post("/v1/callbacks/"+resultOf(t, byPhone)["id"].(string)+"/cancel", e.key, "cb-2-cancel", nil)
	if cancelled.Status != http.StatusOK || resultOf(t, cancelled)["status"] != "cancelled" {
		t.Fatalf("cancel over REST: %d %s", cancelled.Status, cancelled.Body)
	}
	if n := e.Count("SELECT count(*) FROM callbacks WHERE phone = '+442079460002' AND status = 'cancelled' AND cancelled_at IS NOT NULL"); n != 1 {
		t.Fatalf("cancelled callback rows by phone = %d, want 1", n)
	}
}

// Input that cannot be a callback is a 400 naming the field, an unknown
// customer a stored 422; neither leaves a callback row.
func TestBadCallbackRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	e.Contract.AllowUndocumentedInput()
	ana := e.customer("", "")
	for i, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "x"}, "customer_id"},
		{callbackArgs(ana, "2030-07-05T16:00", "2030-07-05T14:00", "x"), "window_end"},
		{callbackArgs(ana, "2030-07-05T14:00:00+01:00", "2030-07-05T16:00", "x"), "window_start"},
		{callbackArgs(ana, "2020-07-05T14:00", "2020-07-05T16:00", "x"), "window_end"},
		{callbackArgs(ana, "2030-07-05T14:00", "2030-07-05T16:00", " "), "reason"},
		{map[string]any{"phone": "020 7946 0958", "window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "x"}, "phone"},
		{map[string]any{"customer_id": ana, "window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "x", "urgent": true}, "urgent"},
	} {
		r := e.Post("/v1/callbacks", e.key, uuid.NewString(), c.body)
		if p := r.JSON(t); r.Status != http.StatusBadRequest || p["field"] != c.field {
			t.Errorf("case %d: %d %s, want 400 naming %s", i, r.Status, r.Body, c.field)
		}
	}
	wantRejection(t, e.Post("/v1/callbacks", e.key, "cb-ghost", callbackArgs(uuid.New(), "2030-07-05T14:00", "2030-07-05T16:00", "x")), "CUSTOMER_NOT_FOUND")
	if n := e.Count("SELECT count(*) FROM callbacks"); n != 0 {
		t.Fatalf("callback rows = %d, want 0", n)
	}
}

// Within one call a reworded reason or a moved window amends the call's
// callback; a second callback on purpose names itself with callback_ref.
func TestDashaCallbackIsOnePerCallUnlessNamed(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	first := decodeAnswer(t, d.call("request_callback", "call-1", callbackArgs(d.customer, "2030-07-05T14:00", "2030-07-05T16:00", "Wants to discuss the invoice")))
	if first.Outcome != "confirmed" {
		t.Fatalf("request: %+v", first)
	}
	again := decodeAnswer(t, d.call("request_callback", "call-1", callbackArgs(d.customer, "2030-07-05T15:00", "2030-07-05T17:00", "Invoice question")))
	if again.Outcome != "confirmed" || detailID(t, again) != detailID(t, first) {
		t.Fatalf("reworded request: %+v (first %s)", again, first.Details)
	}
	if n := d.Count("SELECT count(*) FROM callbacks WHERE customer_id = $1", d.customer); n != 1 {
		t.Fatalf("callbacks after a reworded request = %d, want 1", n)
	}
	if n := d.Count(`SELECT count(*) FROM callbacks WHERE customer_id = $1 AND reason = 'Invoice question'
		AND window_start = '2030-07-05T15:00:00Z' AND amended_at IS NOT NULL`, d.customer); n != 1 {
		t.Fatal("the call's callback does not hold the later reason and window")
	}
	args := callbackArgs(d.customer, "2030-07-08T09:00", "2030-07-08T10:00", "Book a check-up for her son")
	args["callback_ref"] = "son"
	second := decodeAnswer(t, d.call("request_callback", "call-1", args))
	if second.Outcome != "confirmed" || detailID(t, second) == detailID(t, first) {
		t.Fatalf("second callback: %+v", second)
	}
	if n := d.Count("SELECT count(*) FROM callbacks WHERE customer_id = $1", d.customer); n != 2 {
		t.Fatalf("callbacks after a named second one = %d, want 2", n)
	}
	// The same request in another call is another callback.
	if a := decodeAnswer(t, d.call("request_callback", "call-2", callbackArgs(d.customer, "2030-07-05T14:00", "2030-07-05T16:00", "Wants to discuss the invoice"))); a.Outcome != "confirmed" {
		t.Fatalf("another call: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM callbacks WHERE customer_id = $1", d.customer); n != 3 {
		t.Fatalf("callbacks after another call = %d, want 3", n)
	}
	bad := decodeAnswer(t, d.call("request_callback", "call-1", map[string]any{"window_start": "2030-07-05T14:00", "window_end": "2030-07-05T16:00", "reason": "x"}))
	if bad.Outcome != "rejected" || bad.Reason != "invalid_arguments" {
		t.Fatalf("no customer and no phone: %+v", bad)
	}
}

// A cancelled callback is cancelled once: the agent's retry replays the
// answer, and a second cancellation under another key changes nothing.
func TestCallbackCancelIsOneEffect(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	req := decodeAnswer(t, d.call("request_callback", "call-1", callbackArgs(d.customer, "2030-07-05T14:00", "2030-07-05T16:00", "Invoice")))
	id := detailID(t, req)
	cancel := func() answer {
		return decodeAnswer(t, d.call("cancel_callback", "call-1", map[string]any{"callback_id": id}))
	}
	first := cancel()
	if first.Outcome != "confirmed" {
		t.Fatalf("cancel: %+v", first)
	}
	var cancelledAt time.Time
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT cancelled_at FROM callbacks WHERE id = $1 AND status = 'cancelled'", id).Scan(&cancelledAt); err != nil {
		t.Fatalf("the callback is not cancelled: %v", err)
	}
	if again := cancel(); again.Outcome != "confirmed" || again.ActionID != first.ActionID {
		t.Fatalf("a retried cancel is not a replay: %+v", again)
	}
	rest := d.Post("/v1/callbacks/"+id+"/cancel", d.key, "cancel-again", nil)
	wantRejection(t, rest, "CALLBACK_NOT_ACTIVE")
	var after time.Time
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT cancelled_at FROM callbacks WHERE id = $1 AND status = 'cancelled'", id).Scan(&after); err != nil || !after.Equal(cancelledAt) {
		t.Fatalf("a second cancel changed the callback: %v %v / %v", err, after, cancelledAt)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'callback.cancel' AND outcome = 'confirmed'"); n != 1 {
		t.Fatalf("confirmed cancellations = %d, want 1", n)
	}
	wantRejection(t, d.Post("/v1/callbacks/"+uuid.NewString()+"/cancel", d.key, "cancel-ghost", nil), "CALLBACK_NOT_FOUND")
}

// The window is read and spoken on the tenant's wall clock.
func TestCallbackWindowIsTheTenantsLocalTime(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	if _, err := d.Store.Pool().Exec(t.Context(), "UPDATE tenants SET timezone = 'America/New_York' WHERE id = $1", d.tenant); err != nil {
		t.Fatal(err)
	}
	a := decodeAnswer(t, d.call("request_callback", "call-1", callbackArgs(d.customer, "2030-07-05T14:00", "2030-07-05T16:30", "Invoice")))
	if a.Outcome != "confirmed" {
		t.Fatalf("request: %+v", a)
	}
	// 14:00 in New York in July is 18:00 UTC (EDT, UTC-4).
	if n := d.Count("SELECT count(*) FROM callbacks WHERE window_start = '2030-07-05T18:00:00Z' AND window_end = '2030-07-05T20:30:00Z' AND timezone = 'America/New_York'"); n != 1 {
		t.Fatal("the window is not stored as New York's wall-clock time")
	}
	det := answerDetails(t, a)
	when, _ := det["when"].(string)
	if det["timezone"] != "America/New_York" || det["window_start_local"] != "2030-07-05T14:00:00-04:00" ||
		det["window_end_local"] != "2030-07-05T16:30:00-04:00" || !strings.Contains(when, "Friday 5 July") ||
		!strings.Contains(when, "14:00") || !strings.Contains(when, "16:30") || strings.Contains(when, "18:00") {
		t.Fatalf("answer details %s: want the window in New York time", a.Details)
	}
	if _, ok := det["phone"]; ok {
		t.Fatalf("the answer reads back a phone number: %s", a.Details)
	}
}
