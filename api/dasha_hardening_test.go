package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// TestDashaArgumentsMayBeAJSONString: arguments carried as a string holding
// the object are the same request as the object form, in either order of
// arrival; a string that does not hold an object is invalid_arguments and
// claims nothing.
func TestDashaArgumentsMayBeAJSONString(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	d.Contract.AllowUndocumentedInput() // openapi.yaml describes the object form only
	encode := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// String first, then the object: one booking.
	slot := d.Slot(d.tenant, 2)
	asText := `{ "slot_id": "` + strings.ToUpper(slot.String()) + `", "customer_id": "` + d.customer.String() + `" }`
	first := decodeAnswer(t, d.call("book_appointment", "call_str", asText))
	if first.Outcome != "confirmed" {
		t.Fatalf("string arguments: %+v", first)
	}
	again := decodeAnswer(t, d.call("book_appointment", "call_str", d.bookArgs(slot)))
	if again.ActionID != first.ActionID || again.Outcome != "confirmed" {
		t.Fatalf("object retry of a string call: %+v, want action %s", again, first.ActionID)
	}
	// Object first, then the string, with action_id inside it.
	other := d.Slot(d.tenant, 3)
	obj := decodeAnswer(t, d.call("book_appointment", "call_obj", d.bookArgs(other)))
	args := d.bookArgs(other)
	args["action_id"] = obj.ActionID
	retry := decodeAnswer(t, d.call("book_appointment", "call_obj", encode(args)))
	if retry.ActionID != obj.ActionID {
		t.Fatalf("string retry of an object call: %+v, want action %s", retry, obj.ActionID)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", d.tenant); n != 2 {
		t.Fatalf("actions = %d, want 2", n)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", d.tenant); n != 2 {
		t.Fatalf("appointments = %d, want 2", n)
	}
	// The fingerprint of both forms is the same: send_message, whose key is
	// derived from identity fields, maps both forms to one action.
	sms := map[string]any{"to": "+442079460116", "channel": "sms", "template": "generic", "variables": map[string]any{"body": "Hi"}}
	s1 := decodeAnswer(t, d.call("send_message", "call_fp", sms))
	s2 := decodeAnswer(t, d.call("send_message", "call_fp", encode(sms)))
	if s1.Outcome != "confirmed" || s2.ActionID != s1.ActionID || s2.Reason == "conflicting_request" {
		t.Fatalf("send_message in both forms: %+v then %+v", s1, s2)
	}

	for _, bad := range []string{"hello", "[1, 2]", `"nested"`, "null", "", `{"slot_id": "a", "slot_id": "b"}`, `{"slot_id": "a"} trailing`} {
		a := decodeAnswer(t, d.call("book_appointment", "call_bad", bad))
		var details map[string]string
		_ = json.Unmarshal(a.Details, &details)
		if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || details["field"] != "arguments" || a.ActionID != "" {
			t.Errorf("arguments %q: %+v", bad, a)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", d.tenant); n != 3 {
		t.Fatalf("invalid calls claimed actions: %d, want 3", n)
	}
}

// TestDashaScopedKeyCallsOnlyTheDashaWebhooks: a key of scope dasha gets 403
// problem+json everywhere but the Dasha webhooks, and nothing is done.
func TestDashaScopedKeyCallsOnlyTheDashaWebhooks(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	dashaKey, err := d.Store.AddScopedAPIKey(t.Context(), d.tenant, oncecall.ScopeDasha)
	if err != nil {
		t.Fatal(err)
	}
	book := map[string]any{"customer_id": d.customer, "slot_id": d.slot}
	refused := []apptest.Response{
		d.Post("/v1/appointments", dashaKey, "scoped-1", book),
		d.Get("/v1/slots", dashaKey),
		d.Get("/v1/actions/"+d.slot.String(), dashaKey),
		d.Get("/v1/message-templates", dashaKey),
		d.Post("/v1/message-templates", dashaKey, "scoped-2", tableReady),
		d.Request(http.MethodPatch, "/v1/customers/"+d.customer.String(), dashaKey, map[string]any{"name": "X"}, "Idempotency-Key", "scoped-3"),
	}
	for i, r := range refused {
		if r.Status != http.StatusForbidden || r.JSON(t)["code"] != "FORBIDDEN" || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("request %d with a dasha key: %d %s", i, r.Status, r.Body)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("refused requests claimed %d actions", n)
	}
	// The Dasha webhooks take it.
	r := d.Post("/v1/dasha/tools/book_appointment", dashaKey, "", payload("book_appointment", "call_scope", book))
	if a := decodeAnswer(t, r); a.Outcome != "confirmed" {
		t.Fatalf("tool call with a dasha key: %+v", a)
	}
	r = d.Post("/v1/dasha/tools", dashaKey, "", payload("check_action_status", "call_scope", map[string]any{"action_id": decodeAnswer(t, r).ActionID}))
	if a := decodeAnswer(t, r); a.Outcome != "confirmed" {
		t.Fatalf("routed tool call with a dasha key: %+v", a)
	}
	ev := d.Post("/v1/dasha/events", dashaKey, "", map[string]any{"type": "CompletedWebHookPayload", "callId": "call_scope", "orgId": testOrg})
	if ev.Status != http.StatusOK {
		t.Fatalf("events with a dasha key: %d %s", ev.Status, ev.Body)
	}
	// The tenant's full key still calls everything.
	if r := d.Get("/v1/slots", d.key); r.Status != http.StatusOK {
		t.Fatalf("full key: %d", r.Status)
	}
	if n := d.Count("SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND scope = 'dasha'", d.tenant); n != 1 {
		t.Fatalf("dasha keys = %d", n)
	}
}

// TestDashaBudgetIsSeparateAndAnswers503: the REST limit answers 429 and
// leaves the Dasha routes alone; the Dasha budget answers 503 with
// Retry-After (never 429) and leaves REST alone. Refused calls claim nothing.
func TestDashaBudgetIsSeparateAndAnswers503(t *testing.T) {
	t.Parallel()
	// A token every 100s: no bucket refills while the test runs.
	d := setupDasha(t, func(c *app.Config) {
		c.RateLimit, c.RateBurst = 0.01, 1
		c.DashaRateLimit, c.DashaRateBurst = 0.01, 2
	})
	if r := d.Get("/v1/slots", d.key); r.Status != http.StatusOK {
		t.Fatalf("first REST request: %d", r.Status)
	}
	if r := d.Get("/v1/slots", d.key); r.Status != http.StatusTooManyRequests {
		t.Fatalf("REST over its limit: %d, want 429", r.Status)
	}
	// REST is exhausted; the Dasha budget is untouched.
	first := decodeAnswer(t, d.call("book_appointment", "call_budget", d.bookArgs(d.slot)))
	if first.Outcome != "confirmed" {
		t.Fatalf("first tool call: %+v", first)
	}
	if a := decodeAnswer(t, d.call("check_action_status", "call_budget", map[string]any{"action_id": first.ActionID})); a.Outcome != "confirmed" {
		t.Fatalf("second tool call: %+v", a)
	}
	other := d.Slot(d.tenant, 4)
	over := d.call("book_appointment", "call_budget", d.bookArgs(other))
	p := over.JSON(t)
	retry, err := strconv.Atoi(over.Header.Get("Retry-After"))
	if over.Status != http.StatusServiceUnavailable || p["code"] != "SERVICE_UNAVAILABLE" || err != nil || retry < 90 || retry > 100 {
		t.Fatalf("Dasha over its budget: %d %s Retry-After %q, want 503 and about 100s", over.Status, over.Body, over.Header.Get("Retry-After"))
	}
	if ev := d.Post("/v1/dasha/events", d.key, "", map[string]any{"type": "CompletedWebHookPayload", "callId": "call_budget", "orgId": testOrg}); ev.Status != http.StatusServiceUnavailable {
		t.Fatalf("events over the Dasha budget: %d", ev.Status)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", other); n != 0 {
		t.Fatalf("a refused tool call booked")
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
	// And the REST limit is still its own.
	if r := d.Get("/v1/slots", d.key); r.Status != http.StatusTooManyRequests {
		t.Fatalf("REST after Dasha calls: %d, want 429", r.Status)
	}
}

// remoteDasha is a Dasha tenant whose messaging is served by the simulator,
// with re-checks far apart (an hour) and the reconciler driven by the test.
func remoteDasha(t *testing.T) (dashaEnv, *simtest.Sim) {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	d := setupDasha(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Messaging: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: 24 * time.Hour, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true
		c.Steps = step.Config{Backoff: time.Hour, MaxBackoff: time.Hour}
	})
	return d, sim
}

// TestDashaCallEventNudgesItsUnfinishedActions: a call's Completed event
// makes the open steps of the actions it claimed due now, so one reconciler
// pass settles them; other calls, other tenants, unknown payload types and
// a foreign orgId change nothing.
func TestDashaCallEventNudgesItsUnfinishedActions(t *testing.T) {
	t.Parallel()
	d, sim := remoteDasha(t)
	sim.Fault(provider.Messaging, "drop_response", 1)
	sms := map[string]any{"to": "+442079460117", "channel": "sms", "template": "generic", "variables": map[string]any{"body": "Hi"}}
	a := decodeAnswer(t, d.call("send_message", "call_ev", sms))
	if a.Outcome != "pending" {
		t.Fatalf("lost answer: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE id = $1 AND call_id = 'call_ev' AND state = 'unknown'", a.ActionID); n != 1 {
		t.Fatalf("the action does not carry its call id")
	}
	due := func() int {
		return d.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state IN ('pending', 'unknown') AND next_check_at <= now()", a.ActionID)
	}
	if due() != 0 {
		t.Fatalf("the step is due before any event")
	}
	event := func(body map[string]any) apptest.Response {
		base := map[string]any{"status": "Completed", "agentId": "agent_xyz789", "orgId": testOrg,
			"callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{}, "durationSeconds": 42}
		for k, v := range body {
			base[k] = v
		}
		return d.Post("/v1/dasha/events", d.key, "", base)
	}
	nudged := func(r apptest.Response) float64 {
		t.Helper()
		if r.Status != http.StatusOK {
			t.Fatalf("event: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["nudged_actions"].(float64)
	}
	if n := nudged(event(map[string]any{"type": "CallDeadLineWebHookPayload", "callId": "call_ev"})); n != 0 || due() != 0 {
		t.Fatalf("an unknown payload type nudged %v", n)
	}
	if n := nudged(event(map[string]any{"type": "CompletedWebHookPayload", "callId": "call_other"})); n != 0 || due() != 0 {
		t.Fatalf("another call's event nudged %v", n)
	}
	if r := event(map[string]any{"type": "CompletedWebHookPayload", "callId": "call_ev", "orgId": "org_other"}); r.Status != http.StatusForbidden || due() != 0 {
		t.Fatalf("a foreign orgId: %d", r.Status)
	}
	_, otherKey := d.Tenant("other")
	if r := d.Post("/v1/dasha/events", otherKey, "", map[string]any{"type": "CompletedWebHookPayload", "callId": "call_ev"}); nudged(r) != 0 || due() != 0 {
		t.Fatalf("another tenant's event nudged")
	}
	if n := nudged(event(map[string]any{"type": "FailedWebHookPayload", "status": "Failed", "callId": "call_ev"})); n != 1 || due() != 1 {
		t.Fatalf("the call's event nudged %v, due %d", n, due())
	}
	if n := d.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'nudged' AND detail->>'by' = 'dasha_call_failed'", a.ActionID); n != 1 {
		t.Fatalf("nudged events = %d", n)
	}
	if _, err := d.Main.Reconciler().RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := decodeAnswer(t, d.call("check_action_status", "call_ev", map[string]any{"action_id": a.ActionID})); s.Outcome != "confirmed" {
		t.Fatalf("after one reconciler pass: %+v", s)
	}
	if n := len(sim.Ledger(provider.Messaging)); n != 1 {
		t.Fatalf("provider writes = %d, want 1", n)
	}
	// A finished action is not nudged again.
	if n := nudged(event(map[string]any{"type": "CompletedWebHookPayload", "callId": "call_ev"})); n != 0 {
		t.Fatalf("a completed action nudged: %v", n)
	}
	if r := d.Post("/v1/dasha/events", d.key, "", "not json"); r.Status != http.StatusBadRequest {
		t.Fatalf("malformed event: %d", r.Status)
	}
}

// TestRemoteSendKeepsTheTextItWasClaimedWith: with a remote messaging
// provider, the step's payload carries the text rendered from the template
// version of the claim. A recovery after the template changed sends that
// text, never the new version's.
func TestRemoteSendKeepsTheTextItWasClaimedWith(t *testing.T) {
	t.Parallel()
	d, sim := remoteDasha(t)
	if r := d.Post("/v1/message-templates", d.key, "tpl", tableReady); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	sim.Fault(provider.Messaging, "drop_response", 1)
	send := map[string]any{"to": "+442079460118", "channel": "sms", "template": "table_ready", "variables": map[string]string{"name": "Ana", "place": "Luigi's"}}
	r := d.Post("/v1/messages", d.key, "remote-send", send)
	if r.Status != http.StatusAccepted {
		t.Fatalf("lost answer: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["action_id"].(string)
	update := d.Request(http.MethodPut, "/v1/message-templates/table_ready", d.key,
		map[string]any{"body": "NEW TEXT for {{.name}}", "variables": map[string]any{"required": []string{"name"}, "optional": []string{"place"}}},
		"Idempotency-Key", "tpl-v2")
	if update.Status != http.StatusOK {
		t.Fatalf("update: %d %s", update.Status, update.Body)
	}
	if _, err := d.Store.Pool().Exec(t.Context(), "UPDATE action_steps SET next_check_at = now() WHERE action_id = $1", id); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Main.Reconciler().RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := d.Get("/v1/actions/"+id, d.key).JSON(t); a["outcome"] != "confirmed" {
		t.Fatalf("after recovery: %v", a)
	}
	ledger := sim.Ledger(provider.Messaging)
	if len(ledger) != 1 {
		t.Fatalf("provider writes = %d, want 1", len(ledger))
	}
	var payload struct {
		Template        string `json:"template"`
		TemplateVersion int    `json:"template_version"`
		Body            string `json:"body"`
	}
	if err := json.Unmarshal(ledger[0].Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Template != "table_ready" || payload.TemplateVersion != 1 || payload.Body != "Hello Ana, your table at Luigi's is ready." {
		t.Fatalf("the provider got %s", ledger[0].Payload)
	}
	// A new send renders version 2.
	send["variables"] = map[string]string{"name": "Bo"}
	if r := d.Post("/v1/messages", d.key, "remote-send-2", send); r.Status != http.StatusCreated {
		t.Fatalf("second send: %d %s", r.Status, r.Body)
	}
	ledger = sim.Ledger(provider.Messaging)
	if len(ledger) != 2 || !strings.Contains(string(ledger[1].Payload), `"body":"NEW TEXT for Bo"`) || !strings.Contains(string(ledger[1].Payload), `"template_version":2`) {
		t.Fatalf("the second write: %s", ledger[len(ledger)-1].Payload)
	}
}
