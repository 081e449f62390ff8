package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

type bookingEnv struct {
	*apptest.Env
	key      string
	customer uuid.UUID
	slot     uuid.UUID
	tenant   uuid.UUID
}

func setup(t *testing.T) bookingEnv {
	t.Helper()
	e := apptest.Start(t)
	tenant, key := e.Tenant("acme")
	return bookingEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
}

func (b bookingEnv) book(key string, slot uuid.UUID) apptest.Response {
	return b.Post("/v1/appointments", b.key, key, map[string]any{"customer_id": b.customer, "slot_id": slot})
}

func TestConcurrentSameKeyBooksOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 50
	var wg sync.WaitGroup
	answers := make([]apptest.Response, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = b.book("same-key", b.slot)
		})
	}
	close(start)
	wg.Wait()

	var first []byte
	firsts, replays, conflicts := 0, 0, 0
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated && !a.Replayed():
			firsts++
			first = a.Body
		case a.Status == http.StatusCreated && a.Replayed():
			replays++
		case a.Status == http.StatusConflict:
			conflicts++
			if a.Header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
		default:
			t.Errorf("unexpected answer %d: %s", a.Status, a.Body)
		}
	}
	if firsts != 1 {
		t.Fatalf("first executions = %d, want exactly 1 (replays %d, conflicts %d)", firsts, replays, conflicts)
	}
	for _, a := range answers {
		if a.Replayed() && !bytes.Equal(a.Body, first) {
			t.Errorf("replay differs from the first answer:\n%s\n%s", a.Body, first)
		}
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", b.slot); got != 1 {
		t.Fatalf("appointments for the slot = %d, want 1", got)
	}
	if got := b.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'same-key'"); got != 1 {
		t.Fatalf("actions = %d, want 1", got)
	}
	again := b.book("same-key", b.slot)
	if again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first) {
		t.Fatalf("sequential retry: %d replayed=%v %s", again.Status, again.Replayed(), again.Body)
	}
	t.Logf("50 concurrent: 1 first, %d replays, %d conflicts", replays, conflicts)
}

func TestKeyReuseWithOtherRequestIsRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.book("k1", b.slot)
	if first.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", first.Status, first.Body)
	}
	apptID := first.JSON(t)["result"].(map[string]any)["id"].(string)

	other := b.Slot(b.tenant, 2)
	changed := b.book("k1", other)
	if changed.Status != http.StatusUnprocessableEntity || changed.JSON(t)["code"] != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("changed slot: %d %s", changed.Status, changed.Body)
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", other); got != 0 {
		t.Fatalf("the changed request booked the other slot")
	}
	var slot string
	if err := b.Store.Pool().QueryRow(t.Context(), "SELECT slot_id::text FROM appointments WHERE id = $1", apptID).Scan(&slot); err != nil || slot != b.slot.String() {
		t.Fatalf("original appointment changed: slot %s err %v", slot, err)
	}

	// The same key on another operation.
	cancel := b.Post("/v1/appointments/"+apptID+"/cancel", b.key, "k1", map[string]any{})
	if cancel.Status != http.StatusUnprocessableEntity || cancel.JSON(t)["code"] != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("other operation: %d %s", cancel.Status, cancel.Body)
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE id = $1 AND status = 'active'", apptID); got != 1 {
		t.Fatalf("the appointment was cancelled by a reused key")
	}
}

func TestEquivalentSpellingsReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s"}`, b.customer, b.slot)
	respelled := fmt.Sprintf("{ \"slot_id\" : \"%s\",\n \"customer_id\": \"%s\", \"service\": \"  \" }",
		bytes.ToUpper([]byte(b.slot.String())), b.customer)
	first := b.Post("/v1/appointments", b.key, "spell", body)
	second := b.Post("/v1/appointments", b.key, "spell", respelled)
	if first.Status != http.StatusCreated || second.Status != http.StatusCreated || !second.Replayed() {
		t.Fatalf("first %d, second %d replayed=%v: %s", first.Status, second.Status, second.Replayed(), second.Body)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantB, keyB := b.Tenant("other")
	custB, slotB := b.Customer(tenantB.ID), b.Slot(tenantB.ID, 1)

	a := b.book("shared-key", b.slot)
	bb := b.Post("/v1/appointments", keyB, "shared-key", map[string]any{"customer_id": custB, "slot_id": slotB})
	if a.Status != http.StatusCreated || bb.Status != http.StatusCreated || bb.Replayed() {
		t.Fatalf("A %d, B %d replayed=%v %s", a.Status, bb.Status, bb.Replayed(), bb.Body)
	}
	idA, idB := a.JSON(t)["action_id"].(string), bb.JSON(t)["action_id"].(string)
	if idA == idB {
		t.Fatalf("two tenants share one action")
	}
	if got := b.Get("/v1/actions/"+idA, keyB); got.Status != http.StatusNotFound {
		t.Fatalf("tenant B read A's action: %d %s", got.Status, got.Body)
	}
	if got := b.Get("/v1/actions/"+idA, b.key); got.Status != http.StatusOK || got.JSON(t)["outcome"] != "confirmed" {
		t.Fatalf("tenant A reads its action: %d %s", got.Status, got.Body)
	}
	// B cannot book with A's customer or slot: they do not exist for B.
	cross := b.Post("/v1/appointments", keyB, "cross", map[string]any{"customer_id": b.customer, "slot_id": slotB})
	if cross.Status != http.StatusUnprocessableEntity || cross.JSON(t)["code"] != "CUSTOMER_NOT_FOUND" {
		t.Fatalf("cross-tenant customer: %d %s", cross.Status, cross.Body)
	}
}

func TestReplayNeedsAValidAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.book("auth-key", b.slot); r.Status != http.StatusCreated {
		t.Fatalf("book: %d", r.Status)
	}
	body := map[string]any{"customer_id": b.customer, "slot_id": b.slot}
	for _, apiKey := range []string{"", "oc_not-a-key"} {
		r := b.Post("/v1/appointments", apiKey, "auth-key", body)
		if r.Status != http.StatusUnauthorized || bytes.Contains(r.Body, []byte(b.slot.String())) {
			t.Fatalf("replay with key %q: %d %s", apiKey, r.Status, r.Body)
		}
	}
}

func TestTakenSlotIsARejectionThatReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.book("one", b.slot); r.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", r.Status, r.Body)
	}
	other := b.Customer(b.tenant)
	body := map[string]any{"customer_id": other, "slot_id": b.slot}
	first := b.Post("/v1/appointments", b.key, "two", body)
	p := first.JSON(t)
	if first.Status != http.StatusUnprocessableEntity || p["code"] != "SLOT_UNAVAILABLE" || p["outcome"] != "rejected" ||
		first.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("taken slot: %d %s", first.Status, first.Body)
	}
	again := b.Post("/v1/appointments", b.key, "two", body)
	if again.Status != http.StatusUnprocessableEntity || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("rejection replay: %d %v %s", again.Status, again.Replayed(), again.Body)
	}
	env := b.Get("/v1/actions/"+p["action_id"].(string), b.key).JSON(t)
	if env["outcome"] != "rejected" || env["reason"] != "SLOT_UNAVAILABLE" || env["state"] != "completed" {
		t.Fatalf("action envelope: %v", env)
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", b.slot); got != 1 {
		t.Fatalf("appointments = %d", got)
	}
}

func TestRescheduleAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	booked := b.book("book", b.slot).JSON(t)
	apptID := booked["result"].(map[string]any)["id"].(string)
	newSlot := b.Slot(b.tenant, 3)

	moved := b.Post("/v1/appointments/"+apptID+"/reschedule", b.key, "move", map[string]any{"slot_id": newSlot})
	if moved.Status != http.StatusOK || moved.JSON(t)["operation"] != "appointment.reschedule" {
		t.Fatalf("reschedule: %d %s", moved.Status, moved.Body)
	}
	if moved.JSON(t)["action_id"] == booked["action_id"] {
		t.Fatalf("a reschedule must be a new action")
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2", apptID, newSlot); got != 1 {
		t.Fatalf("appointment not moved")
	}
	// The old slot is free again: another customer can book it.
	other := b.Customer(b.tenant)
	if r := b.Post("/v1/appointments", b.key, "other", map[string]any{"customer_id": other, "slot_id": b.slot}); r.Status != http.StatusCreated {
		t.Fatalf("old slot not freed: %d %s", r.Status, r.Body)
	}
	cancel := b.Post("/v1/appointments/"+apptID+"/cancel", b.key, "cancel", nil)
	if cancel.Status != http.StatusOK || cancel.JSON(t)["result"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", cancel.Status, cancel.Body)
	}
	again := b.Post("/v1/appointments/"+apptID+"/cancel", b.key, "cancel-2", nil)
	if again.Status != http.StatusUnprocessableEntity || again.JSON(t)["code"] != "APPOINTMENT_NOT_ACTIVE" {
		t.Fatalf("second cancel under a new key: %d %s", again.Status, again.Body)
	}
	if got := b.Get("/v1/appointments/"+apptID, b.key); got.JSON(t)["status"] != "cancelled" {
		t.Fatalf("get appointment: %s", got.Body)
	}
}

func TestBadKeysAndBodiesClaimNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := map[string]any{"customer_id": b.customer, "slot_id": b.slot}
	long := string(bytes.Repeat([]byte("k"), 256))
	cases := []struct {
		name    string
		key     string
		body    any
		headers []string
		status  int
		code    string
	}{
		{"missing key", "", good, nil, 400, "IDEMPOTENCY_KEY_MISSING"},
		{"empty key", "", good, []string{"Idempotency-Key", ""}, 400, "IDEMPOTENCY_KEY_INVALID"},
		{"long key", long, good, nil, 400, "IDEMPOTENCY_KEY_INVALID"},
		{"non-ascii key", "kéy", good, nil, 400, "IDEMPOTENCY_KEY_INVALID"},
		{"malformed json", "k-json", `{"customer_id":`, nil, 400, "INVALID_JSON"},
		{"duplicate json key", "k-dup", fmt.Sprintf(`{"slot_id":"%s","slot_id":"%s","customer_id":"%s"}`, b.slot, b.slot, b.customer), nil, 400, "INVALID_JSON"},
		{"unknown field", "k-unknown", map[string]any{"customer_id": b.customer, "slot_id": b.slot, "x": 1}, nil, 400, "INVALID_INPUT"},
		{"wrong type", "k-type", map[string]any{"customer_id": 42, "slot_id": b.slot}, nil, 400, "INVALID_INPUT"},
		{"missing field", "k-missing", map[string]any{"customer_id": b.customer}, nil, 400, "INVALID_INPUT"},
		{"not an id", "k-id", map[string]any{"customer_id": "bob", "slot_id": b.slot}, nil, 400, "INVALID_INPUT"},
		{"form body", "k-form", "a=b", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"too large", "k-large", `{"service":"` + string(bytes.Repeat([]byte("a"), 70<<10)) + `"}`, nil, 413, "PAYLOAD_TOO_LARGE"},
	}
	for _, c := range cases {
		r := b.Post("/v1/appointments", b.key, c.key, c.body, c.headers...)
		if r.Status != c.status || r.JSON(t)["code"] != c.code || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: got %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	if got := b.Count("SELECT count(*) FROM actions"); got != 0 {
		t.Fatalf("bad requests claimed %d actions", got)
	}
	// A validation failure does not use up the key: fixing the body works.
	if r := b.book("k-missing", b.slot); r.Status != http.StatusCreated || r.Replayed() {
		t.Fatalf("retry after a fix: %d %s", r.Status, r.Body)
	}
}
