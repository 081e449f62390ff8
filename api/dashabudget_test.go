package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// dashaLimit is Dasha's documented webhook limit: an answer later than
// this is no answer.
const dashaLimit = 10 * time.Second

// slowCalendar returns a simulated remote calendar whose next write takes
// delay, and the provider that reaches it with a timeout longer than that,
// so the write's dispatch is not cut short by oncecall.
func slowCalendar(t *testing.T, delay string) (*simtest.Sim, provider.Set) {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	sim.Fault(provider.Calendar, providersim.FaultDelay+"="+delay, 1)
	return sim, provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL, Timeout: time.Minute,
		Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
	})}
}

// A remote calendar takes longer to answer than the tool call's budget
// (2s against a configured 1s; by default 8s, under Dasha's 10s limit). The
// tool call still answers within Dasha's limit, pending, while the dispatch
// goes on and records the calendar's answer: the ledger holds one write,
// and the agent's check_action_status then hears confirmed.
func TestDashaAnswersPendingWithinItsBudgetWhileTheProviderIsSlow(t *testing.T) {
	t.Parallel()
	sim, providers := slowCalendar(t, "2s")
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = providers
		c.DashaBudget, c.DashaWait = time.Second, 500*time.Millisecond
		c.ReconcileDisabled = true // the request's own dispatch records the result
	})
	start := time.Now()
	r := within(t, d.Env, dashaLimit, http.MethodPost, "/v1/dasha/tools/book_appointment", d.key,
		payload("book_appointment", "call_slow", d.bookArgs(d.slot)))
	took := time.Since(start)
	a := decodeAnswer(t, r)
	if a.Outcome != "pending" || a.ActionID == "" {
		t.Fatalf("a slow provider after %v: %s", took, r.Body)
	}
	assertPendingWording(t, a)
	if took >= dashaLimit {
		t.Fatalf("answered after %v", took)
	}

	deadline := time.Now().Add(45 * time.Second)
	for {
		status := decodeAnswer(t, d.call("check_action_status", "call_slow", map[string]any{"action_id": a.ActionID}))
		if status.Outcome == "confirmed" {
			break
		}
		if status.Outcome != "pending" || time.Now().After(deadline) {
			t.Fatalf("check_action_status: %+v", status)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition
	}
	if l := sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("calendar ledger holds %d writes, want 1: %+v", len(l), l)
	}
	retry := d.call("book_appointment", "call_slow", d.bookArgs(d.slot))
	if again := decodeAnswer(t, retry); again.Outcome != "confirmed" || again.ActionID != a.ActionID || !retry.Replayed() {
		t.Fatalf("the same tool call after the write: %s", retry.Body)
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
}

// A graceful stop waits for a dispatch that outlived its request: the
// provider's answer is recorded before the server lets go of the pool.
func TestShutdownWaitsForADispatchThatOutlivedItsRequest(t *testing.T) {
	t.Parallel()
	sim, providers := slowCalendar(t, "3s")
	url := pgtest.NewDB(t)
	m, err := app.Start(t.Context(), app.Config{
		Addr: "127.0.0.1:0", DatabaseURL: url, Log: zerolog.Nop(),
		Providers: providers, ReconcileDisabled: true, DashaBudget: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.Serve(ctx) }()

	tenant, key, err := m.Store().CreateTenant(t.Context(), "acme", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	customer, err := m.Store().CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant.ID, Name: "Test Customer"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	slot, err := m.Store().CreateSlot(t.Context(), db.NewSlot{TenantID: tenant.ID, StartsAt: start, EndsAt: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(payload("book_appointment", "call_stop", map[string]any{"customer_id": customer.ID, "slot_id": slot.ID}))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+m.Addr()+"/v1/dasha/tools/book_appointment", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answerBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	a := decodeAnswer(t, apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: answerBody})
	if a.Outcome != "pending" {
		t.Fatalf("within a 1s budget, a 3s write: %s", answerBody)
	}

	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	got, err := m.Store().ActionByID(t.Context(), tenant.ID, uuid.MustParse(a.ActionID))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != oncecall.Completed || got.Outcome != oncecall.Confirmed {
		t.Fatalf("after a graceful stop the action is %s/%s: its dispatch was abandoned", got.State, got.Outcome)
	}
	if l := sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("calendar ledger holds %d writes, want 1", len(l))
	}
}
