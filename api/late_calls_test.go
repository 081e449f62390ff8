package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// lateLocal lets late results go to the tests' fake control URLs.
func lateLocal(c *app.Config) {
	c.LateResultURL = func(u *url.URL) bool { return u.Hostname() == "127.0.0.1" }
}

// waitFor polls cond until it holds, failing after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}

// contentOf is the text of an add-message posted to a control URL.
func contentOf(m map[string]any) string {
	msg, _ := m["message"].(map[string]any)
	s, _ := msg["content"].(string)
	return s
}

// A booking is one action across calls: three Vapi calls ask for the same
// customer and slot while the calendar is slow, and each hears pending.
// The one that ended before the booking settled is told nothing; the two
// still live each get the settled answer once, on their own control URL,
// naming the tool and the action.
func TestLateResultsReachEveryWaitingCall(t *testing.T) {
	t.Parallel()
	_, providers := slowCalendar(t, "4s")
	d := setupDasha(t, lateLocal, func(c *app.Config) {
		c.Providers = providers
		c.ReconcileDisabled = true
		c.DashaBudget, c.DashaWait = 2*time.Second, 500*time.Millisecond
	})
	controls := map[string]*controlServer{}
	ids := map[string]string{}
	for _, call := range []string{"wait-a", "wait-b", "wait-ended"} {
		controls[call] = newControlServer(t, http.StatusOK)
		body := vapiWithControl(call, controls[call].URL, d.customer.String(), d.slot.String(), 1)
		_, a := vapiResults(t, within(t, d.Env, 6*time.Second, http.MethodPost, "/v1/vapi/webhook", d.key, body))
		if a[0].Outcome != "pending" {
			t.Fatalf("call %s: want pending, got %+v", call, a[0])
		}
		ids[call] = a[0].ActionID
	}
	if ids["wait-a"] != ids["wait-b"] || ids["wait-a"] != ids["wait-ended"] {
		t.Fatalf("one booking, one action: %v", ids)
	}
	end := map[string]any{"message": map[string]any{"type": "end-of-call-report", "call": map[string]any{"id": "wait-ended"}}}
	if r := d.Post("/v1/vapi/webhook", d.key, "", end); r.Status != http.StatusOK {
		t.Fatalf("end-of-call-report: %d %s", r.Status, r.Body)
	}
	id := ids["wait-a"]
	for _, call := range []string{"wait-a", "wait-b"} {
		waitFor(t, "the late result reaches "+call, func() bool { return len(controls[call].got()) > 0 })
	}
	waitFor(t, "every delivery job has finished", func() bool {
		return d.Count("SELECT count(*) FROM river_job WHERE args->>'action_id' = $1 AND state <> 'completed'", id) == 0
	})
	for _, call := range []string{"wait-a", "wait-b"} {
		got := controls[call].got()
		if len(got) != 1 {
			t.Fatalf("call %s got %d add-messages, want 1: %v", call, len(got), got)
		}
		if c := contentOf(got[0]); !strings.Contains(c, id) || !strings.Contains(c, "book_appointment") || !strings.Contains(c, `"outcome":"confirmed"`) {
			t.Fatalf("call %s: the add-message: %s", call, c)
		}
	}
	if got := controls["wait-ended"].got(); len(got) != 0 {
		t.Fatalf("the ended call got %d add-messages: %v", len(got), got)
	}
	if n := d.Count("SELECT count(*) FROM river_job WHERE args->>'call_id' = 'wait-ended'"); n != 0 {
		t.Fatalf("%d delivery jobs for the ended call", n)
	}
}

// A booking made in an ElevenLabs conversation is asked about on Vapi with
// check_action_status while it is pending: the Vapi call's late result
// names the booking, in the words of the tool that made it, not the status
// tool.
func TestLateResultOfTheStatusToolNamesTheTool(t *testing.T) {
	t.Parallel()
	_, providers := slowCalendar(t, "4s")
	d := setupDasha(t, lateLocal, func(c *app.Config) {
		c.Providers = providers
		c.ReconcileDisabled = true
		c.DashaBudget, c.DashaWait = 2*time.Second, 500*time.Millisecond
	})
	body := voicePayload(t, "elevenlabs_tool.json", d.bookFill("conv_status", d.customer, d.slot))
	booked := decodeAnswer(t, within(t, d.Env, 6*time.Second, http.MethodPost, "/v1/elevenlabs/tools/book_appointment", d.key, body))
	if booked.Outcome != "pending" {
		t.Fatalf("the ElevenLabs booking: want pending, got %+v", booked)
	}
	control := newControlServer(t, http.StatusOK)
	status := map[string]any{"message": map[string]any{
		"type": "tool-calls",
		"toolCallList": []map[string]any{{"id": "tc-status", "type": "function", "function": map[string]any{
			"name": "check_action_status", "arguments": map[string]any{"action_id": booked.ActionID}}}},
		"call": map[string]any{"id": "vapi-asks", "monitor": map[string]any{"controlUrl": control.URL}},
	}}
	_, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", status))
	if a[0].Outcome != "pending" || a[0].ActionID != booked.ActionID {
		t.Fatalf("check_action_status: %+v", a[0])
	}
	waitFor(t, "the late result reaches the Vapi call", func() bool { return len(control.got()) > 0 })
	c := contentOf(control.got()[0])
	if !strings.Contains(c, "the book_appointment request") || strings.Contains(c, "check_action_status request") {
		t.Fatalf("the add-message names the wrong tool: %s", c)
	}
}

// A thousand Vapi calls each hear pending (a messaging provider that drops
// its answers, the reconciler off): the server holds no goroutine per
// pending answer while they wait.
func TestPendingAnswersHoldNoGoroutineEach(t *testing.T) {
	t.Parallel()
	const calls = 1000
	sim := simtest.Start(t, providersim.Config{})
	sim.Fault(provider.Messaging, providersim.FaultDropResponse, 2*calls)
	providers := provider.Set{provider.Messaging: provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL, Timeout: 5 * time.Second,
		Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
	})}
	d := setupDasha(t, lateLocal, func(c *app.Config) {
		c.Providers = providers
		c.ReconcileDisabled = true
	})
	control := newControlServer(t, http.StatusOK)
	send := func(i int) map[string]any {
		call := fmt.Sprintf("many-%04d", i)
		return map[string]any{"message": map[string]any{
			"type": "tool-calls",
			"toolCallList": []map[string]any{{"id": "tc-" + call, "type": "function", "function": map[string]any{
				"name": "send_message", "arguments": map[string]any{
					"to": "+442079460116", "channel": "sms", "template": "generic", "variables": map[string]any{"body": "Hi"}}}}},
			"call": map[string]any{"id": call, "monitor": map[string]any{"controlUrl": control.URL}},
		}}
	}
	// Warm up (connections, caches) before counting.
	if _, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", send(calls))); a[0].Outcome != "pending" {
		t.Fatalf("want pending: %+v", a[0])
	}
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if _, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", send(i))); a[0].Outcome != "pending" {
					t.Errorf("call %d: want pending: %+v", i, a[0])
				}
			}
		})
	}
	for i := range calls {
		work <- i
	}
	close(work)
	wg.Wait()
	after := runtime.NumGoroutine()
	t.Logf("goroutines: %d before %d pending answers, %d after", before, calls, after)
	if n := d.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND state <> 'completed'", d.tenant); n < calls {
		t.Fatalf("%d actions pending, want %d", n, calls)
	}
	if after-before > 100 {
		t.Fatalf("%d goroutines more after %d pending answers (%d before): one per pending answer", after-before, calls, before)
	}
}

// ElevenLabs runs a write tool in the background (execution_mode async)
// and takes its answer when it comes: on the async route a booking that
// would answer pending at the budget (the calendar is slower) is answered
// once it settles, confirmed, with one booking; the synchronous route
// still answers pending within the budget.
func TestElevenLabsAsyncToolAnswersTheSettledResult(t *testing.T) {
	t.Parallel()
	sim, providers := slowCalendar(t, "4s")
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = providers
		c.DashaBudget, c.DashaWait = 2*time.Second, 500*time.Millisecond
	})
	body := voicePayload(t, "elevenlabs_tool.json", d.bookFill("conv_async", d.customer, d.slot))
	start := time.Now()
	a := decodeAnswer(t, within(t, d.Env, 50*time.Second, http.MethodPost, "/v1/elevenlabs/async/tools/book_appointment", d.key, body))
	took := time.Since(start)
	if a.Outcome != "confirmed" || a.ActionID == "" || took < 3*time.Second {
		t.Fatalf("the async booking after %v: %+v", took, a)
	}
	if l := sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("the calendar holds %d bookings, want 1", len(l))
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND state = 'completed' AND outcome = 'confirmed'", d.tenant); n != 1 {
		t.Fatalf("%d confirmed actions, want 1", n)
	}
}

// A late result goes only to a call that heard pending for the action, of
// the action's tenant. A call told rejected (its slot was taken) subscribes
// to nothing; another tenant's call asking check_action_status about the
// action hears that it names no action of its tenant, and subscribes to
// nothing either, as the store refuses a subscription across tenants.
// When the action settles, only the call that heard pending gets it.
func TestLateResultsOnlyForPendingAnswersOfTheTenant(t *testing.T) {
	t.Parallel()
	_, providers := slowCalendar(t, "4s")
	d := setupDasha(t, lateLocal, func(c *app.Config) {
		c.Providers = providers
		c.ReconcileDisabled = true
		c.DashaBudget, c.DashaWait = 2*time.Second, 500*time.Millisecond
	})
	vapi := func(call, control, tool string, args map[string]any) answer {
		t.Helper()
		body := map[string]any{"message": map[string]any{
			"type":         "tool-calls",
			"toolCallList": []map[string]any{{"id": "tc-" + call, "type": "function", "function": map[string]any{"name": tool, "arguments": args}}},
			"call":         map[string]any{"id": call, "monitor": map[string]any{"controlUrl": control}},
		}}
		_, a := vapiResults(t, within(t, d.Env, 6*time.Second, http.MethodPost, "/v1/vapi/webhook", d.key, body))
		return a[0]
	}
	pending, rejected := newControlServer(t, http.StatusOK), newControlServer(t, http.StatusOK)
	booked := vapi("told-pending", pending.URL, "book_appointment", d.bookArgs(d.slot))
	if booked.Outcome != "pending" {
		t.Fatalf("the slow booking: %+v", booked)
	}
	// Another customer takes a second slot (the calendar answers at once
	// now); the call asking for it after is told rejected.
	other, taken := d.Customer(d.tenant), d.Slot(d.tenant, 2)
	if a := decodeAnswer(t, d.call("book_appointment", "first-comer", map[string]any{"customer_id": other, "slot_id": taken})); a.Outcome != "confirmed" {
		t.Fatalf("the first comer's booking: %+v", a)
	}
	if a := vapi("told-rejected", rejected.URL, "book_appointment", d.bookArgs(taken)); a.Outcome != "rejected" {
		t.Fatalf("the taken slot: %+v", a)
	}
	// Another tenant's Vapi call asks about the pending action.
	_, otherKey := d.Tenant("other")
	foreign := newControlServer(t, http.StatusOK)
	body := map[string]any{"message": map[string]any{
		"type": "tool-calls",
		"toolCallList": []map[string]any{{"id": "tc-foreign", "type": "function", "function": map[string]any{
			"name": "check_action_status", "arguments": map[string]any{"action_id": booked.ActionID}}}},
		"call": map[string]any{"id": "foreign-call", "monitor": map[string]any{"controlUrl": foreign.URL}},
	}}
	if _, a := vapiResults(t, d.Post("/v1/vapi/webhook", otherKey, "", body)); a[0].Outcome == "pending" || a[0].Outcome == "confirmed" {
		t.Fatalf("another tenant's status check of the action: %+v", a[0])
	}
	// The store itself subscribes no call to another tenant's action.
	otherTenant, err := d.Store.TenantByAPIKey(t.Context(), otherKey)
	if err != nil {
		t.Fatal(err)
	}
	action, err := uuid.Parse(booked.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := d.Store.SubscribeLate(t.Context(), db.LateSubscriber{
		TenantID: otherTenant.ID, ActionID: action, CallPlatform: "vapi", CallID: "foreign-call", Tool: "book_appointment", ControlURL: foreign.URL,
	})
	if err != nil || fresh {
		t.Fatalf("a subscription across tenants: fresh %v, %v", fresh, err)
	}

	waitFor(t, "the pending call gets its late result", func() bool { return len(pending.got()) > 0 })
	waitFor(t, "every delivery job has finished", func() bool {
		return d.Count("SELECT count(*) FROM river_job WHERE state <> 'completed'") == 0
	})
	if n := d.Count("SELECT count(*) FROM late_results WHERE call_id <> 'told-pending'"); n != 0 {
		t.Fatalf("%d subscriptions of calls that did not hear pending for the action", n)
	}
	if n := d.Count("SELECT count(*) FROM river_job"); n != 1 {
		t.Fatalf("%d delivery jobs, want 1", n)
	}
	if got := len(pending.got()); got != 1 {
		t.Fatalf("the pending call got %d late results, want 1", got)
	}
	if r, f := rejected.got(), foreign.got(); len(r) != 0 || len(f) != 0 {
		t.Fatalf("late results to the call told rejected (%d) or another tenant's call (%d)", len(r), len(f))
	}
}
