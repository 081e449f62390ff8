package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/netcut"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// cutEnv is oncecall whose pool reaches PostgreSQL through a netcut proxy,
// with a direct pool to look at what was stored.
type cutEnv struct {
	dashaEnv
	proxy  *netcut.Proxy
	direct *pgxpool.Pool
}

// setupCut starts oncecall behind a proxy. The reconciler is off, so the
// only COMMITs the proxy sees are those of the requests under test.
func setupCut(t *testing.T, cfg ...func(*app.Config)) cutEnv {
	t.Helper()
	url := pgtest.NewDB(t)
	proxy := netcut.Start(t, url)
	direct, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	e := apptest.StartOn(t, url, append([]func(*app.Config){func(c *app.Config) {
		// No background traffic (the reconciler's passes, River's polls for
		// jobs) through the proxy: an armed cut must meet the request's own.
		c.DatabaseURL, c.ReconcileDisabled, c.Jobs.Disabled = proxy.URL, true, true
	}}, cfg...)...)
	// A stalled connection holds a request, and the request a pool
	// connection, until the proxy lets go: cut before oncecall stops.
	t.Cleanup(proxy.CutAll)
	tenant, key, err := e.Store.CreateTenant(t.Context(), "acme", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	d := dashaEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
	return cutEnv{dashaEnv: d, proxy: proxy, direct: direct}
}

// txBooking is a booking in a transaction that ends with an explicit
// COMMIT (a booking that also queues its confirmation message: its
// statement, then the message, then COMMIT); a plain booking travels in one
// round trip, claim to completion (see the one-round-trip tests below).
func (c cutEnv) txBooking() map[string]any {
	return map[string]any{"customer_id": c.customer, "slot_id": c.slot, "notify": "sms"}
}

// waitCut fails the test unless the armed proxy has cut.
func waitCut(t *testing.T, fired <-chan struct{}) {
	t.Helper()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy never saw a COMMIT")
	}
}

// count runs a count query on the direct pool, past the proxy.
func (c cutEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := c.direct.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// assertUnavailable checks a 503 problem with Retry-After and returns its
// detail.
func assertUnavailable(t *testing.T, r apptest.Response) string {
	t.Helper()
	p := r.JSON(t)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || p["code"] != "SERVICE_UNAVAILABLE" {
		t.Fatalf("want 503 SERVICE_UNAVAILABLE with Retry-After, got %d %q: %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	detail, _ := p["detail"].(string)
	return detail
}

// assertOutcomeUnknown fails unless detail says the outcome is unknown and
// to retry with the same key, and never that nothing was stored.
func assertOutcomeUnknown(t *testing.T, detail string) {
	t.Helper()
	d := strings.ToLower(detail)
	if !strings.Contains(d, "outcome is unknown") || !strings.Contains(d, "same idempotency-key") || !strings.Contains(d, "same tool call") {
		t.Errorf("a lost COMMIT answer does not say the outcome is unknown and how to retry: %q", detail)
	}
	if strings.Contains(d, "nothing was stored") || strings.Contains(d, "nothing was done") {
		t.Errorf("a lost COMMIT answer claims nothing was stored: %q", detail)
	}
}

// The connection breaks after the booking's COMMIT reached PostgreSQL: the
// booking is stored, but oncecall cannot know. It answers 503 saying the
// outcome is unknown, and the retry with the same key replays the booking.
func TestRESTCommitCutAfterIsUnknownAndReplays(t *testing.T) {
	t.Parallel()
	c := setupCut(t)
	body := c.txBooking()
	fired := c.proxy.Arm(netcut.After)
	r := c.Post("/v1/appointments", c.key, "cut-after", body)
	waitCut(t, fired)
	assertOutcomeUnknown(t, assertUnavailable(t, r))
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("the cut COMMIT should have stored the booking: appointments = %d", n)
	}

	retry := c.Post("/v1/appointments", c.key, "cut-after", body)
	if retry.Status != http.StatusCreated || !retry.Replayed() {
		t.Fatalf("retry after an unknown outcome: %d replayed=%v %s", retry.Status, retry.Replayed(), retry.Body)
	}
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
}

// The connection breaks after oncecall sent the COMMIT but before it reached
// PostgreSQL: nothing was stored, yet oncecall cannot tell this from the
// case above, so it answers the same. The retry runs the booking, once.
func TestRESTCommitCutBeforeIsUnknownAndRunsOnce(t *testing.T) {
	t.Parallel()
	c := setupCut(t)
	body := c.txBooking()
	fired := c.proxy.Arm(netcut.Before)
	r := c.Post("/v1/appointments", c.key, "cut-before", body)
	waitCut(t, fired)
	assertOutcomeUnknown(t, assertUnavailable(t, r))
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("a COMMIT cut before the server stored %d actions", n)
	}
	retry := c.Post("/v1/appointments", c.key, "cut-before", body)
	if retry.Status != http.StatusCreated || retry.Replayed() {
		t.Fatalf("retry after nothing was stored: %d replayed=%v %s", retry.Status, retry.Replayed(), retry.Body)
	}
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
}

// isClaim matches the claim's INSERT.
func isClaim(sql string) bool { return strings.Contains(sql, "INSERT INTO actions") }

// isOneStatement matches an operation's one statement.
func isOneStatement(sql string) bool { return strings.Contains(sql, "oncecall_key_free(") }

// The connection breaks while the claim is sent, before any COMMIT: nothing
// can have been stored, and the answer says so.
func TestRESTClaimCutSaysNothingStored(t *testing.T) {
	t.Parallel()
	c := setupCut(t)
	body := c.txBooking()
	for _, mode := range []netcut.Mode{netcut.Before, netcut.After} {
		fired := c.proxy.ArmAt(mode, isClaim)
		r := c.Post("/v1/appointments", c.key, "cut-claim", body)
		waitCut(t, fired)
		if detail := assertUnavailable(t, r); !strings.Contains(detail, "nothing was stored") {
			t.Errorf("cut %s the claim: the answer does not say nothing was stored: %q", mode, detail)
		}
		if n := c.count(t, "SELECT count(*) FROM actions"); n != 0 {
			t.Fatalf("cut %s the claim: %d actions stored", mode, n)
		}
	}
	retry := c.Post("/v1/appointments", c.key, "cut-claim", body)
	if retry.Status != http.StatusCreated || retry.Replayed() {
		t.Fatalf("retry after nothing was stored: %d replayed=%v %s", retry.Status, retry.Replayed(), retry.Body)
	}
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// The same over the Dasha route: Dasha retries a 503 with the same call,
// which then answers with the stored booking.
func TestDashaCommitCutAfterIsUnknownAndReplays(t *testing.T) {
	t.Parallel()
	c := setupCut(t)
	args := c.txBooking()
	fired := c.proxy.Arm(netcut.After)
	r := c.call("book_appointment", "call_cut", args)
	waitCut(t, fired)
	assertOutcomeUnknown(t, assertUnavailable(t, r))

	retry := c.call("book_appointment", "call_cut", args)
	a := decodeAnswer(t, retry)
	if a.Outcome != "confirmed" || !retry.Replayed() {
		t.Fatalf("Dasha's retry after an unknown outcome: replayed=%v %s", retry.Replayed(), retry.Body)
	}
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
}

func TestDashaClaimCutSaysNothingStored(t *testing.T) {
	t.Parallel()
	c := setupCut(t)
	args := c.txBooking()
	fired := c.proxy.ArmAt(netcut.After, isClaim)
	r := c.call("book_appointment", "call_cut", args)
	waitCut(t, fired)
	if detail := assertUnavailable(t, r); !strings.Contains(detail, "nothing was stored") {
		t.Errorf("a failure before COMMIT does not say nothing was stored: %q", detail)
	}
	if n := c.count(t, "SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("a cut before COMMIT stored %d actions", n)
	}
	retry := c.call("book_appointment", "call_cut", args)
	if a := decodeAnswer(t, retry); a.Outcome != "confirmed" || retry.Replayed() {
		t.Fatalf("Dasha's retry after nothing was stored: replayed=%v %s", retry.Replayed(), retry.Body)
	}
	if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

// A plain booking is claimed, written and completed in one statement, its
// own transaction, which commits when it ends: once the statement is on its
// way, a broken connection leaves the outcome unknown whether it reached
// PostgreSQL (After: stored) or not (Before: nothing stored). Either way the
// answer says so, and the retry with the same key gives the one booking.
func TestOneRoundTripCutIsUnknownAndRetriesOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   netcut.Mode
		stored int
	}{{netcut.Before, 0}, {netcut.After, 1}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			c := setupCut(t)
			body := map[string]any{"customer_id": c.customer, "slot_id": c.slot}
			fired := c.proxy.ArmAt(tc.mode, isOneStatement)
			r := c.Post("/v1/appointments", c.key, "one-trip", body)
			waitCut(t, fired)
			assertOutcomeUnknown(t, assertUnavailable(t, r))
			if n := c.count(t, "SELECT count(*) FROM actions"); n != tc.stored {
				t.Fatalf("cut %s the statement: %d actions stored, want %d", tc.mode, n, tc.stored)
			}
			retry := c.Post("/v1/appointments", c.key, "one-trip", body)
			if retry.Status != http.StatusCreated || retry.Replayed() != (tc.stored == 1) {
				t.Fatalf("retry: %d replayed=%v %s", retry.Status, retry.Replayed(), retry.Body)
			}
			if n := c.count(t, "SELECT count(*) FROM appointments WHERE slot_id = $1", c.slot); n != 1 {
				t.Fatalf("appointments = %d, want 1", n)
			}
			if n := c.count(t, "SELECT count(*) FROM actions"); n != 1 {
				t.Fatalf("actions = %d, want 1", n)
			}
		})
	}
}
