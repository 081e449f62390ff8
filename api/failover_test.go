package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// These tests run oncecall on a primary with one synchronous standby (see
// docs/high-availability.md): every COMMIT waits until the standby has
// flushed it, and a failover promotes only that standby. The hazards are
// the moments when the primary holds a commit the standby does not: an
// answer that confirms it would be lost by a failover then.

// pairEnv is oncecall on the primary of a synchronous pair.
type pairEnv struct {
	dashaEnv
	pair *pgtest.Pair
}

func setupPair(t *testing.T, url func(*pgtest.Pair) string, cfg ...func(*app.Config)) pairEnv {
	t.Helper()
	pair := pgtest.SyncPair(t)
	e := apptest.StartOn(t, pair.URL("oncecall"), append([]func(*app.Config){func(c *app.Config) {
		c.DatabaseURL, c.ReconcileDisabled = url(pair), true
	}}, cfg...)...)
	tenant, key, err := e.Store.CreateTenant(t.Context(), "acme", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	d := dashaEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
	pair.WaitStandby(t)
	return pairEnv{dashaEnv: d, pair: pair}
}

func primaryURL(p *pgtest.Pair) string { return p.URL("oncecall") }

// standbyBookings is how many appointments of the slot the standby has.
func (c pairEnv) standbyBookings(t *testing.T) int {
	t.Helper()
	return c.pair.StandbyCount(t, "oncecall", "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot)
}

// primaryBookings is how many appointments of the slot the primary has.
func (c pairEnv) primaryBookings(t *testing.T) int {
	t.Helper()
	return c.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot)
}

// assertNotConfirmed fails when r confirms a booking the standby does not
// have: a failover now would lose what the caller was told is done.
func (c pairEnv) assertNotConfirmed(t *testing.T, what string, r apptest.Response) {
	t.Helper()
	confirmed := r.Status == http.StatusCreated
	if r.Status == http.StatusOK && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		confirmed = strings.Contains(string(r.Body), `"outcome":"confirmed"`)
	}
	if confirmed {
		t.Fatalf("%s confirmed a booking the standby does not have (standby appointments = %d, primary = %d): %d replayed=%v %s",
			what, c.standbyBookings(t), c.primaryBookings(t), r.Status, r.Replayed(), r.Body)
	}
	if r.Status >= 500 && r.Status != http.StatusServiceUnavailable {
		t.Fatalf("%s: %d %s", what, r.Status, r.Body)
	}
}

// untilDefinitive repeats send until it answers something other than 409
// or 503 (in progress, unknown), as a client retrying with the same key.
func untilDefinitive(t *testing.T, send func() apptest.Response) apptest.Response {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := send()
		if r.Status != http.StatusConflict && r.Status != http.StatusServiceUnavailable &&
			!strings.Contains(string(r.Body), `"outcome":"pending"`) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("no definitive answer within a minute: last %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond) // a client's retry delay, not synchronisation
	}
}

// assertBookedOnce checks that the booking exists once on the primary and,
// once it caught up, on the standby.
func (c pairEnv) assertBookedOnce(t *testing.T) {
	t.Helper()
	c.pair.WaitStandby(t)
	if p, s := c.primaryBookings(t), c.standbyBookings(t); p != 1 || s != 1 {
		t.Fatalf("appointments: primary %d, standby %d; want 1 and 1", p, s)
	}
}

// A REST client gives up while its booking's COMMIT waits for the standby.
// The COMMIT must not be cancelled with it: a cancelled wait leaves the
// booking committed on the primary only, and the retry would read it and
// confirm. Until the standby has it, the retry is answered "in progress" or
// "unknown"; afterwards it replays the one booking.
func TestFailoverClientGivesUpDuringSyncCommit(t *testing.T) {
	c := setupPair(t, primaryURL)
	body := map[string]any{"customer_id": c.customer, "slot_id": c.slot}
	resume := c.pair.StallReceiver(t)

	ctx, giveUp := context.WithCancel(t.Context())
	go func() {
		c.pair.WaitCommitWaits(t, "oncecall")
		giveUp()
	}()
	if r, err := c.RequestCtx(ctx, http.MethodPost, "/v1/appointments", c.key, body, "Idempotency-Key", "gave-up"); err == nil {
		t.Fatalf("the booking answered while its COMMIT waited for the standby: %d %s", r.Status, r.Body)
	}
	retry := c.Post("/v1/appointments", c.key, "gave-up", body)
	c.assertNotConfirmed(t, "the retry after the client gave up", retry)

	resume()
	final := untilDefinitive(t, func() apptest.Response { return c.Post("/v1/appointments", c.key, "gave-up", body) })
	if final.Status != http.StatusCreated || !final.Replayed() {
		t.Fatalf("the retry once the standby caught up: %d replayed=%v %s", final.Status, final.Replayed(), final.Body)
	}
	c.assertBookedOnce(t)
}

// The same for a Dasha tool call whose budget ends while its COMMIT waits:
// the first answer is not a confirmation, nor is Dasha's retry until the
// standby has the booking.
func TestFailoverDashaBudgetEndsDuringSyncCommit(t *testing.T) {
	c := setupPair(t, primaryURL, func(cfg *app.Config) { cfg.DashaBudget, cfg.DashaWait = 2*time.Second, time.Second })
	args := c.bookArgs(c.slot)
	resume := c.pair.StallReceiver(t)

	first := c.call("book_appointment", "call_budget_sync", args)
	c.assertNotConfirmed(t, "the tool call whose budget ended", first)
	retry := c.call("book_appointment", "call_budget_sync", args)
	c.assertNotConfirmed(t, "Dasha's retry", retry)

	resume()
	final := untilDefinitive(t, func() apptest.Response { return c.call("book_appointment", "call_budget_sync", args) })
	if a := decodeAnswer(t, final); a.Outcome != "confirmed" {
		t.Fatalf("Dasha's retry once the standby caught up: %s", final.Body)
	}
	c.assertBookedOnce(t)
}

// Someone cancels the wait for the standby from outside (pg_cancel_backend,
// as an operator or a failover manager might) while the client still waits.
// PostgreSQL ends the COMMIT successfully with only a WARNING: the booking
// is on the primary and not on the standby. The answer is "unknown", and so
// is every retry until the standby has it.
func TestFailoverCancelledSyncWaitIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		body func(c pairEnv) map[string]any
	}{
		{"one statement", func(c pairEnv) map[string]any { return map[string]any{"customer_id": c.customer, "slot_id": c.slot} }},
		{"transaction", func(c pairEnv) map[string]any {
			return map[string]any{"customer_id": c.customer, "slot_id": c.slot, "notify": "sms"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setupPair(t, primaryURL)
			body := tc.body(c)
			resume := c.pair.StallReceiver(t)

			answered := make(chan apptest.Response, 1)
			go func() {
				r, _ := c.RequestCtx(t.Context(), http.MethodPost, "/v1/appointments", c.key, body, "Idempotency-Key", "cancelled-wait")
				answered <- r
			}()
			pid := c.pair.WaitCommitWaits(t, "oncecall")
			if _, err := c.Store.Pool().Exec(t.Context(), "SELECT pg_cancel_backend($1)", pid); err != nil {
				t.Fatal(err)
			}
			r := <-answered
			c.assertNotConfirmed(t, "the booking whose wait for the standby was cancelled", r)
			assertOutcomeUnknown(t, assertUnavailable(t, r))
			if p, s := c.primaryBookings(t), c.standbyBookings(t); p != 1 || s != 0 {
				t.Fatalf("after the cancelled wait: primary %d, standby %d appointments; want 1 and 0", p, s)
			}

			retry := c.Post("/v1/appointments", c.key, "cancelled-wait", body)
			c.assertNotConfirmed(t, "the retry", retry)
			assertOutcomeUnknown(t, assertUnavailable(t, retry))
			status := c.Get("/v1/actions/"+c.actionID(t, "cancelled-wait"), c.key)
			if status.Status != http.StatusServiceUnavailable {
				t.Fatalf("the action's status while the standby lacks it: %d %s", status.Status, status.Body)
			}

			resume()
			final := untilDefinitive(t, func() apptest.Response { return c.Post("/v1/appointments", c.key, "cancelled-wait", body) })
			if final.Status != http.StatusCreated || !final.Replayed() {
				t.Fatalf("the retry once the standby caught up: %d replayed=%v %s", final.Status, final.Replayed(), final.Body)
			}
			c.assertBookedOnce(t)
		})
	}
}

// actionID is the id of the action stored under key, read on the primary.
func (c pairEnv) actionID(t *testing.T, key string) string {
	t.Helper()
	var id string
	if err := c.Store.Pool().QueryRow(t.Context(), "SELECT id::text FROM actions WHERE idempotency_key = $1", key).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// A connection that fails before anything was sent stores nothing, and the
// answer says so: the primary is down and the standby refuses writes
// (target_session_attrs=read-write on a multi-host URL, standby first).
// The same oncecall serves again once a primary is back, without a restart.
func TestFailoverConnectFailureSaysNothingStored(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(*pgtest.Pair) string
	}{
		{"refused", primaryURL},
		{"read-only and refused", func(p *pgtest.Pair) string { return p.MultiHostURL("oncecall") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setupPair(t, tc.url)
			body := map[string]any{"customer_id": c.customer, "slot_id": c.slot}
			if err := c.pair.Primary.Stop(); err != nil {
				t.Fatal(err)
			}
			// The pool's connections to the stopped primary are gone; the
			// next request dials: the standby answers read-only, the
			// primary refuses.
			c.Store.Pool().Reset()
			for _, send := range []func() apptest.Response{
				func() apptest.Response { return c.Post("/v1/appointments", c.key, "no-primary", body) },
				func() apptest.Response { return c.call("book_appointment", "call_no_primary", c.bookArgs(c.slot)) },
			} {
				r := send()
				if detail := assertUnavailable(t, r); !strings.Contains(detail, "nothing was stored") {
					t.Errorf("a failed connect does not say nothing was stored: %q", detail)
				}
			}
			if err := c.pair.Primary.Restart(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := c.Post("/v1/appointments", c.key, "no-primary", body)
			if r.Status != http.StatusCreated || r.Replayed() {
				t.Fatalf("the first write once the primary is back: %d replayed=%v %s", r.Status, r.Replayed(), r.Body)
			}
			c.assertBookedOnce(t)
		})
	}
}

// A primary that turns read-only under oncecall (as a demoted one does
// before it restarts as a standby) answers every write "cannot execute in
// a read-only transaction". That is 503 "nothing was stored" (the statement
// failed, nothing committed), never 500, and the connection is dropped;
// once the server takes writes again the same replicas serve the retry.
func TestFailoverReadOnlyServerIsUnavailable(t *testing.T) {
	c := setupPair(t, primaryURL)
	body := map[string]any{"customer_id": c.customer, "slot_id": c.slot}
	readOnly := func(on bool) {
		t.Helper()
		set := "ALTER SYSTEM SET default_transaction_read_only = on"
		if !on {
			set = "ALTER SYSTEM RESET default_transaction_read_only"
		}
		for _, q := range []string{set, "SELECT pg_reload_conf()"} {
			// Not t.Context(): it runs at cleanup too.
			if _, err := c.Store.Pool().Exec(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		// Each server process reloads its settings when the postmaster's
		// signal reaches it: wait until every pooled connection has.
		want := map[bool]string{true: "on", false: "off"}[on]
		deadline := time.Now().Add(10 * time.Second)
		for {
			settled := true
			for _, conn := range c.Store.Pool().AcquireAllIdle(context.Background()) {
				var got string
				err := conn.QueryRow(context.Background(), "SHOW default_transaction_read_only").Scan(&got)
				conn.Release()
				if err != nil || got != want {
					settled = false
				}
			}
			if settled {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pool's connections did not see default_transaction_read_only = %s", want)
			}

		}
	}
	readOnly(true)
	t.Cleanup(func() { readOnly(false) })
	r := c.Post("/v1/appointments", c.key, "read-only", body)
	if detail := assertUnavailable(t, r); !strings.Contains(detail, "nothing was stored") {
		t.Errorf("a write refused as read-only does not say nothing was stored: %q", detail)
	}
	if n := c.primaryBookings(t); n != 0 {
		t.Fatalf("a refused write stored %d appointments", n)
	}
	readOnly(false)
	final := untilDefinitive(t, func() apptest.Response { return c.Post("/v1/appointments", c.key, "read-only", body) })
	if final.Status != http.StatusCreated || final.Replayed() {
		t.Fatalf("the write once the server takes writes again: %d replayed=%v %s", final.Status, final.Replayed(), final.Body)
	}
	c.assertBookedOnce(t)
}

// A points change whose wait for the synchronous standby was cancelled is
// on the primary only. A call that restates it (the reason reworded) must
// not hear it confirmed from that row until the standby has it: a failover
// now would lose what the caller was told is done.
func TestFailoverRestatedPointsAreNotConfirmedBeforeTheStandbyHasThem(t *testing.T) {
	c := setupPair(t, primaryURL)
	changes := func(on string) int {
		const q = "SELECT count(*) FROM points_ledger WHERE customer_id = $1"
		if on == "standby" {
			return c.pair.StandbyCount(t, "oncecall", q, c.customer)
		}
		return c.Count(q, c.customer)
	}
	notConfirmed := func(what string, r apptest.Response) {
		t.Helper()
		if strings.Contains(string(r.Body), `"outcome":"confirmed"`) || r.Status == http.StatusOK && r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s confirmed a points change the standby does not have (standby changes = %d, primary = %d): %d %s",
				what, changes("standby"), changes("primary"), r.Status, r.Body)
		}
	}
	c.pair.WaitStandby(t)
	resume := c.pair.StallReceiver(t)

	answered := make(chan apptest.Response, 1)
	go func() {
		r, _ := c.RequestCtx(t.Context(), http.MethodPost, "/v1/dasha/tools/add_loyalty_points", c.key,
			payload("add_loyalty_points", "call_points", map[string]any{"customer_id": c.customer, "delta": 50, "reason": "a visit"}))
		answered <- r
	}()
	pid := c.pair.WaitCommitWaits(t, "oncecall")
	if _, err := c.Store.Pool().Exec(t.Context(), "SELECT pg_cancel_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	notConfirmed("the points change whose wait for the standby was cancelled", <-answered)
	if p, s := changes("primary"), changes("standby"); p != 1 || s != 0 {
		t.Fatalf("after the cancelled wait: primary %d, standby %d changes; want 1 and 0", p, s)
	}

	restated := map[string]any{"customer_id": c.customer, "delta": 50, "reason": "the visit today"}
	notConfirmed("the points change restating the reason", c.call("add_loyalty_points", "call_points", restated))

	resume()
	final := untilDefinitive(t, func() apptest.Response { return c.call("add_loyalty_points", "call_points", restated) })
	if a := decodeAnswer(t, final); a.Outcome != "confirmed" {
		t.Fatalf("the restated change once the standby caught up: %s", final.Body)
	}
	c.pair.WaitStandby(t)
	if p, s := changes("primary"), changes("standby"); p != 1 || s != 1 {
		t.Fatalf("points changes: primary %d, standby %d; want 1 and 1", p, s)
	}
}
