package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/netcut"
)

// within sends a request that must be answered before d has passed.
func within(t *testing.T, e *apptest.Env, d time.Duration, method, path, apiKey string, body any, headers ...string) apptest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	r, err := e.RequestCtx(ctx, method, path, apiKey, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: no answer within %v: %v", method, path, d, err)
	}
	return r
}

// A transaction left open outside oncecall (an operator's psql session)
// holds a customer's row. Requests that need it answer within the lock
// timeout, 503 with Retry-After, and store nothing; once the row is free,
// the same requests run, once.
func TestHeldCustomerRowAnswers503WithinTheLockTimeout(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	lock := holdCustomer(t, d.DBURL, d.customer)
	// Warm the API key cache: the answer must come from the blocked write.
	if a := decodeAnswer(t, d.call("find_available_slots", "c", map[string]any{})); a.Outcome != "confirmed" {
		t.Fatal(a)
	}

	const bound = 4 * time.Second // the 2s lock timeout and some slack
	restSlot, dashaSlot := d.slot, d.Slot(d.tenant, 2)
	restBody := map[string]any{"customer_id": d.customer, "slot_id": restSlot}
	dashaPayload := payload("book_appointment", "call_locked", d.bookArgs(dashaSlot))
	for name, r := range map[string]apptest.Response{
		"REST":  within(t, d.Env, bound, http.MethodPost, "/v1/appointments", d.key, restBody, "Idempotency-Key", "locked-1"),
		"Dasha": within(t, d.Env, bound, http.MethodPost, "/v1/dasha/tools/book_appointment", d.key, dashaPayload),
	} {
		if detail := assertUnavailable(t, r); detail == "" {
			t.Errorf("%s: 503 without detail", name)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("requests that timed out on a lock stored %d actions", n)
	}

	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	rest := within(t, d.Env, bound, http.MethodPost, "/v1/appointments", d.key, restBody, "Idempotency-Key", "locked-1")
	if rest.Status != http.StatusCreated || rest.Replayed() {
		t.Fatalf("REST retry after the lock: %d replayed=%v %s", rest.Status, rest.Replayed(), rest.Body)
	}
	dasha := within(t, d.Env, bound, http.MethodPost, "/v1/dasha/tools/book_appointment", d.key, dashaPayload)
	if a := decodeAnswer(t, dasha); a.Outcome != "confirmed" || dasha.Replayed() {
		t.Fatalf("Dasha retry after the lock: %s", dasha.Body)
	}
	for _, slot := range []any{restSlot, dashaSlot} {
		if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slot); n != 1 {
			t.Fatalf("appointments of slot %v = %d, want 1", slot, n)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 2 {
		t.Fatalf("actions = %d, want 2", n)
	}
}

// oncecall's own connection is cut off by a network partition just as it
// sends a booking's COMMIT: PostgreSQL still holds the transaction, with
// the booking's uncommitted claim. Another attempt of the same key waits on
// that claim only up to the lock timeout and answers "in progress" (409 on
// REST, pending on Dasha), not 503. PostgreSQL ends the orphaned session at
// the idle-in-transaction timeout, which rolls it back; the retry then
// books, once.
func TestPartitionedClaimIsInProgressUntilTheIdleTimeoutEndsIt(t *testing.T) {
	t.Parallel()
	c := setupCut(t, func(cfg *app.Config) {
		cfg.DBTimeouts = db.Timeouts{Lock: 300 * time.Millisecond, IdleInTransaction: 2 * time.Second}
	})
	body := c.txBooking()
	// Warm the API key cache.
	if r := c.Get("/v1/actions/"+uuid.NewString(), c.key); r.Status != http.StatusNotFound {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	fired := c.proxy.Arm(netcut.Stall)
	first := make(chan apptest.Response, 1)
	go func() { first <- c.Post("/v1/appointments", c.key, "partitioned", body) }()
	waitCut(t, fired)

	const bound = 3 * time.Second // the lock timeout and some slack, well under the 10s claim wait
	r := within(t, c.Env, bound, http.MethodPost, "/v1/appointments", c.key, body, "Idempotency-Key", "partitioned")
	if r.Status != http.StatusConflict || r.Header.Get("Retry-After") == "" || r.JSON(t)["code"] != "IDEMPOTENCY_IN_PROGRESS" {
		t.Fatalf("REST attempt during the partition: %d %s", r.Status, r.Body)
	}
	dasha := within(t, c.Env, bound, http.MethodPost, "/v1/dasha/tools/book_appointment", c.key,
		payload("book_appointment", "call_p", body), "Idempotency-Key", "partitioned")
	if a := decodeAnswer(t, dasha); a.Outcome != "pending" {
		t.Fatalf("Dasha attempt during the partition: %s", dasha.Body)
	}

	// PostgreSQL ends the orphaned session; nothing was committed.
	deadline := time.Now().Add(10 * time.Second)
	for c.count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partitioned transaction is still open past the idle-in-transaction timeout")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("the partitioned transaction left %d actions", n)
	}
	retry := within(t, c.Env, bound, http.MethodPost, "/v1/appointments", c.key, body, "Idempotency-Key", "partitioned")
	if retry.Status != http.StatusCreated || retry.Replayed() {
		t.Fatalf("retry after the partition: %d %s", retry.Status, retry.Body)
	}
	// The first attempt learns of the partition when its connection is cut:
	// it had sent its COMMIT, so its outcome is unknown to it.
	c.proxy.CutAll()
	assertOutcomeUnknown(t, assertUnavailable(t, <-first))
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
}

// holdCustomer holds a customer's row lock in a transaction of its own, as
// an operator's psql session would, until the test rolls it back or ends.
func holdCustomer(t *testing.T, dbURL string, customer any) pgx.Tx {
	t.Helper()
	holder, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(context.WithoutCancel(t.Context())) })
	lock, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Rollback(context.WithoutCancel(t.Context())) }) //nolint:errcheck
	if _, err := lock.Exec(t.Context(), "SELECT id FROM customers WHERE id = $1 FOR UPDATE", customer); err != nil {
		t.Fatal(err)
	}
	return lock
}
