package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

const testOrg = "org_123"

type dashaEnv struct {
	*apptest.Env
	key      string
	tenant   uuid.UUID
	customer uuid.UUID
	slot     uuid.UUID
}

// setupDasha starts oncecall with a tenant bound to the Dasha org testOrg.
func setupDasha(t *testing.T, cfg ...func(*app.Config)) dashaEnv {
	t.Helper()
	e := apptest.Start(t, cfg...)
	tenant, key, err := e.Store.CreateTenant(t.Context(), "acme", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	return dashaEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
}

// payload is a ToolWebHookPayload in the documented shape.
func payload(tool, callID string, args any) map[string]any {
	return map[string]any{
		"type": "ToolWebHookPayload", "status": "Running", "callId": callID, "agentId": "agent_xyz789",
		"orgId": testOrg, "toolName": tool, "arguments": args,
		"callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
	}
}

// call posts a tool call to the tool's own URL.
func (d dashaEnv) call(tool, callID string, args any, headers ...string) apptest.Response {
	return d.Post("/v1/dasha/tools/"+tool, d.key, "", payload(tool, callID, args), headers...)
}

func (d dashaEnv) bookArgs(slot uuid.UUID) map[string]any {
	return map[string]any{"customer_id": d.customer, "slot_id": slot}
}

// answer is the body of a business answer.
type answer struct {
	Outcome  string          `json:"outcome"`
	ActionID string          `json:"action_id"`
	Reason   string          `json:"reason"`
	Say      string          `json:"say"`
	Details  json.RawMessage `json:"details"`
}

func decodeAnswer(t *testing.T, r apptest.Response) answer {
	t.Helper()
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("want a 200 JSON answer, got %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var a answer
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("answer: %v: %s", err, r.Body)
	}
	if a.Say == "" || a.Outcome == "" || a.Details == nil {
		t.Fatalf("answer without outcome, say or details: %s", r.Body)
	}
	return a
}

// accessLines returns the access-log lines of Dasha tool calls.
func accessLines(t *testing.T, e *apptest.Env) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(e.Logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["message"] == "request" && strings.HasPrefix(fmt.Sprint(m["route"]), "/v1/dasha/tools") {
			out = append(out, m)
		}
	}
	return out
}

// assertPendingWording fails when a pending say reads like a confirmation.
func assertPendingWording(t *testing.T, a answer) {
	t.Helper()
	say := strings.ToLower(a.Say)
	if !strings.Contains(say, "not confirmed") {
		t.Errorf("pending say does not say NOT confirmed: %q", a.Say)
	}
	for _, p := range []string{"is booked", "is confirmed", "has been", "successfully", "done", "went through"} {
		if strings.Contains(say, p) {
			t.Errorf("pending say contains %q: %q", p, a.Say)
		}
	}
}

func TestDashaRetryOfTheDocumentedPayloadBooksOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	// The documented example, with ids of this tenant, plus fields Dasha
	// may add: they are tolerated.
	body := fmt.Sprintf(`{ "type": "ToolWebHookPayload", "status": "Running",
  "callId": "call_abc123", "agentId": "agent_xyz789", "orgId": "org_123",
  "toolName": "book_appointment",
  "arguments": { "customer_id": "%s", "slot_id": "%s" },
  "callAdditionalData": {}, "agentAdditionalData": {},
  "serverJobId": "job_1", "sip": {"fromUser": "x", "diversion": []}, "endpoint": "+15550100",
  "someFutureField": {"nested": [1, 2]} }`, d.customer, d.slot)

	first := d.Post("/v1/dasha/tools/book_appointment", d.key, "", body)
	second := d.Post("/v1/dasha/tools/book_appointment", d.key, "", body)
	a := decodeAnswer(t, first)
	if a.Outcome != "confirmed" || a.Reason != "" || !strings.Contains(string(a.Details), d.slot.String()) {
		t.Fatalf("first delivery: %s", first.Body)
	}
	if !bytes.Equal(first.Body, second.Body) {
		t.Fatalf("the retry answered differently:\n%s\n%s", first.Body, second.Body)
	}
	if first.Replayed() || !second.Replayed() {
		t.Errorf("Idempotent-Replayed: first %v, second %v", first.Replayed(), second.Replayed())
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", d.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
	// The derived key is a hash: no customer data in it.
	if n := d.Count("SELECT count(*) FROM actions WHERE idempotency_key LIKE 'derived:%' AND idempotency_key NOT LIKE '%' || $1 || '%'", d.customer.String()); n != 1 {
		t.Fatalf("the action's key is not a derived hash")
	}

	lines := accessLines(t, d.Env)
	if len(lines) != 2 {
		t.Fatalf("access lines = %d, want 2: %v", len(lines), lines)
	}
	for i, l := range lines {
		if l["call_id"] != "call_abc123" || l["action_id"] != a.ActionID || l["outcome"] != "confirmed" ||
			l["operation"] != "appointment.book" || l["key_hash"] == nil || l["status"] != float64(200) {
			t.Errorf("access line %d: %v", i, l)
		}
	}
	if lines[0]["replayed"] != nil || lines[1]["replayed"] != true {
		t.Errorf("replayed: first %v, second %v; want absent, true", lines[0]["replayed"], lines[1]["replayed"])
	}
	if logs := d.Logs.String(); strings.Contains(logs, d.customer.String()) || strings.Contains(logs, d.slot.String()) {
		t.Errorf("the logs contain argument values")
	}

	// Dasha documents no Content-Type: another one is not refused.
	if r := d.Post("/v1/dasha/tools/book_appointment", d.key, "", body, "Content-Type", "text/plain"); !bytes.Equal(r.Body, first.Body) {
		t.Fatalf("text/plain delivery: %d %s", r.Status, r.Body)
	}

	// The same payload to the routing URL maps to the same action.
	routed := d.Post("/v1/dasha/tools", d.key, "", body)
	if !bytes.Equal(routed.Body, first.Body) || !routed.Replayed() {
		t.Fatalf("POST /v1/dasha/tools: %d %s", routed.Status, routed.Body)
	}
}

func TestDashaOverlappingDeliveriesExecuteOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t, func(c *app.Config) {
		c.Core.ClaimWait = 100 * time.Millisecond
		c.DashaWait = 2 * time.Second
		c.DBTimeouts.Lock = time.Minute // the first delivery waits on the held lock for the whole test
	})
	ctx := t.Context()
	// Hold the slot's row lock: the booking's foreign-key check waits on it,
	// so the first delivery stays inside its transaction, claim uncommitted.
	lock, err := d.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	if _, err := lock.Exec(ctx, "SELECT id FROM slots WHERE id = $1 FOR UPDATE", d.slot); err != nil {
		t.Fatal(err)
	}
	args := d.bookArgs(d.slot)
	var wg sync.WaitGroup
	var first, third apptest.Response
	wg.Go(func() { first = d.call("book_appointment", "call_1", args) })
	waitForLockWaiters(t, d.Env, 1)

	// A retry while the first attempt runs waits (bounded) and answers
	// pending: not a 4xx, which would make the model use its fallback.
	second := d.call("book_appointment", "call_1", args)
	pending := decodeAnswer(t, second)
	if pending.Outcome != "pending" {
		t.Fatalf("retry during a slow first attempt: %s", second.Body)
	}
	assertPendingWording(t, pending)

	// A retry that is still waiting when the first attempt finishes gets
	// its result.
	wg.Go(func() { third = d.call("book_appointment", "call_1", args) })
	waitForLockWaiters(t, d.Env, 2)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	a1, a3 := decodeAnswer(t, first), decodeAnswer(t, third)
	if a1.Outcome != "confirmed" || a3.Outcome != "confirmed" || a1.ActionID != a3.ActionID || !bytes.Equal(first.Body, third.Body) {
		t.Fatalf("first %s\nthird %s", first.Body, third.Body)
	}
	if first.Replayed() || !third.Replayed() {
		t.Errorf("replayed: first %v, third %v", first.Replayed(), third.Replayed())
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", d.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want 1", n)
	}
	// The pending answer's advice (call again with the same arguments)
	// now gets the result.
	if again := d.call("book_appointment", "call_1", args); !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("call after pending: %s", again.Body)
	}
}

// waitForLockWaiters waits until n backends of the environment's database
// wait on a lock.
func waitForLockWaiters(t *testing.T, e *apptest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.Count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait on a lock, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not synchronising on time
	}
}

func TestDashaSameBookingFromTwoCallsBooksOnce(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	r1 := d.call("book_appointment", "call_A", d.bookArgs(d.slot))
	r2 := d.call("book_appointment", "call_B", map[string]any{"slot_id": strings.ToUpper(d.slot.String()), "customer_id": d.customer})
	a1, a2 := decodeAnswer(t, r1), decodeAnswer(t, r2)
	if a1.Outcome != "confirmed" || a2.Outcome != "confirmed" || a1.ActionID != a2.ActionID {
		t.Fatalf("two calls: %s\n%s", r1.Body, r2.Body)
	}
	if !r2.Replayed() {
		t.Error("the second call's answer is not a replay")
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", d.slot); n != 1 {
		t.Fatalf("appointments = %d, want 1", n)
	}
}

func TestDashaForeignOrgIsForbidden(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	for _, org := range []any{"org_other", "", nil} {
		p := payload("book_appointment", "call_1", d.bookArgs(d.slot))
		p["orgId"] = org
		r := d.Post("/v1/dasha/tools/book_appointment", d.key, "", p)
		if r.Status != http.StatusForbidden || r.JSON(t)["code"] != "FORBIDDEN" || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("orgId %v: %d %s", org, r.Status, r.Body)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("a foreign org claimed %d actions", n)
	}
	// A tenant bound to no org accepts any orgId.
	free, key := d.Tenant("unbound")
	p := payload("book_appointment", "call_1", map[string]any{"customer_id": d.Customer(free.ID), "slot_id": d.Slot(free.ID, 2)})
	p["orgId"] = "org_anything"
	if a := decodeAnswer(t, d.Post("/v1/dasha/tools/book_appointment", key, "", p)); a.Outcome != "confirmed" {
		t.Fatalf("unbound tenant: %+v", a)
	}
}

func TestDashaBadPayloadsClaimNothing(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	good := d.bookArgs(d.slot)
	with := func(k string, v any) map[string]any {
		p := payload("book_appointment", "call_1", good)
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
		return p
	}
	problems := []struct {
		name   string
		path   string
		body   any
		status int
		code   string
		field  string
	}{
		{"malformed JSON", "/v1/dasha/tools/book_appointment", `{"type":"ToolWebHookPayload",`, 400, "INVALID_JSON", ""},
		{"not an object", "/v1/dasha/tools/book_appointment", `["ToolWebHookPayload"]`, 400, "INVALID_JSON", ""},
		{"invalid UTF-8", "/v1/dasha/tools/book_appointment", "{\"type\":\"ToolWebHookPayload\",\"callId\":\"\xff\"}", 400, "INVALID_JSON", ""},
		{"duplicate key", "/v1/dasha/tools/book_appointment", `{"type":"ToolWebHookPayload","toolName":"book_appointment","toolName":"cancel_appointment"}`, 400, "INVALID_JSON", ""},
		{"wrong type", "/v1/dasha/tools/book_appointment", with("type", "StartWebHookPayload"), 400, "INVALID_INPUT", "type"},
		{"missing type", "/v1/dasha/tools/book_appointment", with("type", nil), 400, "INVALID_INPUT", "type"},
		{"callId not a string", "/v1/dasha/tools/book_appointment", with("callId", 42), 400, "INVALID_INPUT", "callId"},
		{"tool mismatch", "/v1/dasha/tools/cancel_appointment", with("toolName", "book_appointment"), 400, "INVALID_INPUT", "toolName"},
		{"no tool name", "/v1/dasha/tools", with("toolName", nil), 400, "INVALID_INPUT", "toolName"},
		{"unknown tool", "/v1/dasha/tools/launch_rocket", with("toolName", "launch_rocket"), 404, "NOT_FOUND", ""},
	}
	for _, c := range problems {
		r := d.Post(c.path, d.key, "", c.body)
		p := r.JSON(t)
		if r.Status != c.status || p["code"] != c.code || r.Header.Get("Content-Type") != "application/problem+json" ||
			(c.field != "" && p["field"] != c.field) {
			t.Errorf("%s: %d %s, want %d %s field %q", c.name, r.Status, r.Body, c.status, c.code, c.field)
		}
	}
	if r := d.Post("/v1/dasha/tools/book_appointment", d.key, "", `{"type":"ToolWebHookPayload"`+strings.Repeat(" ", 70<<10)+`}`); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized payload: %d %s", r.Status, r.Body)
	}
	if r := d.Post("/v1/dasha/tools/book_appointment", "", "", payload("book_appointment", "c", good)); r.Status != http.StatusUnauthorized {
		t.Errorf("no API key: %d", r.Status)
	}

	// Arguments that are not an object are outside openapi.yaml on purpose:
	// the server still answers them 200 invalid_arguments.
	d.Contract.AllowUndocumentedInput()
	invalid := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing arguments", with("arguments", nil), "customer_id"},
		{"null arguments", with("arguments", json.RawMessage("null")), "customer_id"},
		{"arguments not an object", with("arguments", "customer 42, slot 7"), "arguments"},
		{"wrong-typed argument", with("arguments", map[string]any{"customer_id": 42, "slot_id": d.slot}), "customer_id"},
		{"missing argument", with("arguments", map[string]any{"customer_id": d.customer}), "slot_id"},
		{"unknown argument", with("arguments", map[string]any{"customer_id": d.customer, "slot_id": d.slot, "when": "now"}), "when"},
		{"not an id", with("arguments", map[string]any{"customer_id": "Bob", "slot_id": d.slot}), "customer_id"},
		{"action_id not a string", with("arguments", map[string]any{"customer_id": d.customer, "slot_id": d.slot, "action_id": 7}), "action_id"},
		{"action_id not ASCII", with("arguments", map[string]any{"customer_id": d.customer, "slot_id": d.slot, "action_id": "ключ"}), "action_id"},
	}
	for _, c := range invalid {
		r := d.Post("/v1/dasha/tools/book_appointment", d.key, "", c.body)
		a := decodeAnswer(t, r)
		var details map[string]string
		_ = json.Unmarshal(a.Details, &details)
		if a.Outcome != "rejected" || a.Reason != "invalid_arguments" || a.ActionID != "" || details["field"] != c.field ||
			!strings.Contains(a.Say, c.field) {
			t.Errorf("%s: %s, want invalid_arguments naming %s", c.name, r.Body, c.field)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Fatalf("bad payloads claimed %d actions", n)
	}
	// Nothing was used up: the corrected call books.
	if a := decodeAnswer(t, d.call("book_appointment", "call_1", good)); a.Outcome != "confirmed" {
		t.Fatalf("corrected call: %+v", a)
	}
}

func TestDashaActionIDNamesTheAction(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := decodeAnswer(t, d.call("book_appointment", "call_1", d.bookArgs(d.slot)))
	if booked.Outcome != "confirmed" {
		t.Fatalf("book: %+v", booked)
	}

	// A re-plan that passes the action_id it got maps to the same action.
	args := d.bookArgs(d.slot)
	args["action_id"] = booked.ActionID
	if again := decodeAnswer(t, d.call("book_appointment", "call_2", args)); again.ActionID != booked.ActionID || again.Outcome != "confirmed" {
		t.Fatalf("retry with action_id: %+v", again)
	}

	// The same action_id with other details is a conflict; nothing happens.
	other := d.Slot(d.tenant, 2)
	args = d.bookArgs(other)
	args["action_id"] = booked.ActionID
	conflict := decodeAnswer(t, d.call("book_appointment", "call_2", args))
	if conflict.Outcome != "rejected" || conflict.Reason != "conflicting_request" ||
		!strings.Contains(string(conflict.Details), booked.ActionID) || !strings.Contains(conflict.Say, "Confirm the details with the caller") {
		t.Fatalf("changed details under one action_id: %+v", conflict)
	}
	if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", other); n != 0 {
		t.Fatal("the conflicting request booked")
	}

	// After a rejection, new details with the rejected action's id are a new
	// request (the rejection did nothing).
	rival := d.Customer(d.tenant)
	taken := decodeAnswer(t, d.call("book_appointment", "call_3", map[string]any{"customer_id": rival, "slot_id": d.slot}))
	if taken.Outcome != "rejected" || taken.Reason != "slot_unavailable" {
		t.Fatalf("taken slot: %+v", taken)
	}
	replan := decodeAnswer(t, d.call("book_appointment", "call_3", map[string]any{"customer_id": rival, "slot_id": other, "action_id": taken.ActionID}))
	if replan.Outcome != "confirmed" || replan.ActionID == taken.ActionID {
		t.Fatalf("re-plan after a rejection: %+v", replan)
	}

	// Another tool's action id is not a retry of it: the cancel gets its own action.
	var appt struct{ ID string }
	if err := json.Unmarshal(booked.Details, &appt); err != nil {
		t.Fatal(err)
	}
	cancel := decodeAnswer(t, d.call("cancel_appointment", "call_4", map[string]any{"appointment_id": appt.ID, "action_id": booked.ActionID}))
	if cancel.Outcome != "confirmed" || cancel.ActionID == booked.ActionID {
		t.Fatalf("cancel with the booking's action_id: %+v", cancel)
	}

	// An action_id that names no action is refused (TestMadeUpActionIDIsNotShared);
	// the header is the key itself.
	free := d.Slot(d.tenant, 3)
	byKey := decodeAnswer(t, d.call("book_appointment", "call_5", map[string]any{"customer_id": rival, "slot_id": free, "action_id": "agent-chosen-1"}))
	if byKey.Reason != "invalid_arguments" || d.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'agent-chosen-1'") != 0 {
		t.Fatalf("a made-up action_id: %+v", byKey)
	}
	free2 := d.Slot(d.tenant, 4)
	byHeader := decodeAnswer(t, d.call("book_appointment", "call_6", map[string]any{"customer_id": rival, "slot_id": free2}, "Idempotency-Key", "hdr-1"))
	if byHeader.Outcome != "confirmed" || d.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'hdr-1'") != 1 {
		t.Fatalf("Idempotency-Key header: %+v", byHeader)
	}
	if r := d.call("book_appointment", "call_6", map[string]any{"customer_id": rival, "slot_id": free2}, "Idempotency-Key", "kéy"); r.Status != http.StatusBadRequest {
		t.Fatalf("invalid Idempotency-Key header: %d %s", r.Status, r.Body)
	}
}

func TestDashaCheckActionStatus(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	booked := d.call("book_appointment", "call_1", d.bookArgs(d.slot))
	a := decodeAnswer(t, booked)
	status := d.call("check_action_status", "call_1", map[string]any{"action_id": a.ActionID})
	if !bytes.Equal(status.Body, booked.Body) {
		t.Fatalf("status of a confirmed booking differs from its answer:\n%s\n%s", status.Body, booked.Body)
	}
	unknown := decodeAnswer(t, d.call("check_action_status", "call_1", map[string]any{"action_id": uuid.NewString()}))
	if unknown.Outcome != "rejected" || unknown.Reason != "unknown_action" {
		t.Fatalf("unknown id: %+v", unknown)
	}
	// Another tenant's action is unknown too.
	_, otherKey := d.Tenant("other")
	r := d.Post("/v1/dasha/tools/check_action_status", otherKey, "", payload("check_action_status", "c", map[string]any{"action_id": a.ActionID}))
	if got := decodeAnswer(t, r); got.Reason != "unknown_action" {
		t.Fatalf("cross-tenant status: %s", r.Body)
	}
	bad := decodeAnswer(t, d.call("check_action_status", "call_1", map[string]any{"action_id": "yesterday's booking"}))
	if bad.Reason != "invalid_arguments" {
		t.Fatalf("bad id: %+v", bad)
	}
	// A running action is pending.
	if _, err := d.Store.Pool().Exec(t.Context(), "UPDATE actions SET state = 'unknown', outcome = NULL WHERE id = $1", a.ActionID); err != nil {
		t.Fatal(err)
	}
	pending := decodeAnswer(t, d.call("check_action_status", "call_1", map[string]any{"action_id": a.ActionID}))
	if pending.Outcome != "pending" || pending.ActionID != a.ActionID {
		t.Fatalf("unknown state: %+v", pending)
	}
	assertPendingWording(t, pending)
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("status checks claimed actions: %d", n)
	}
}

func TestDashaFindAvailableSlots(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	later := d.Slot(d.tenant, 5)
	if a := decodeAnswer(t, d.call("book_appointment", "c", d.bookArgs(d.slot))); a.Outcome != "confirmed" {
		t.Fatal(a)
	}
	type slots struct {
		Slots []struct {
			ID string `json:"id"`
		} `json:"slots"`
	}
	find := func(args map[string]any) (answer, slots) {
		a := decodeAnswer(t, d.call("find_available_slots", "c", args))
		var s slots
		if err := json.Unmarshal(a.Details, &s); err != nil {
			t.Fatal(err)
		}
		return a, s
	}
	a, s := find(map[string]any{})
	if a.Outcome != "confirmed" || a.ActionID != "" || len(s.Slots) != 1 || s.Slots[0].ID != later.String() {
		t.Fatalf("free slots: %+v", a)
	}
	d.Slot(d.tenant, 7)
	if _, s := find(map[string]any{"limit": 1}); len(s.Slots) != 1 {
		t.Fatalf("limit 1: %d slots", len(s.Slots))
	}
	from := time.Now().Add(7 * time.Hour).UTC().Format(time.RFC3339)
	if _, s := find(map[string]any{"from": from}); len(s.Slots) != 1 || s.Slots[0].ID == later.String() {
		t.Fatalf("from %s: %+v", from, s)
	}
	if _, s := find(map[string]any{"from": "2999-01-01T00:00:00Z"}); len(s.Slots) != 0 {
		t.Fatalf("far future: %+v", s)
	}
	for _, bad := range []map[string]any{{"limit": 0}, {"limit": 21}, {"limit": "5"}, {"from": "tomorrow"}} {
		if a := decodeAnswer(t, d.call("find_available_slots", "c", bad)); a.Reason != "invalid_arguments" {
			t.Errorf("%v: %+v", bad, a)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d, want only the booking", n)
	}
}

func TestDashaUnavailableDatabaseIs503(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	// Warm the API key cache, so the request reaches the idempotency core.
	if a := decodeAnswer(t, d.call("find_available_slots", "c", map[string]any{})); a.Outcome != "confirmed" {
		t.Fatal(a)
	}
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.WithoutCancel(t.Context()))
	var name string
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	for _, q := range []string{
		"ALTER DATABASE " + ident + " ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'",
	} {
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	r := d.call("book_appointment", "call_1", d.bookArgs(d.slot))
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || r.JSON(t)["code"] != "SERVICE_UNAVAILABLE" {
		t.Errorf("database down: %d %s", r.Status, r.Body)
	}
	if _, err := admin.Exec(t.Context(), "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	// Dasha's retries after the outage book, once. (The pool may hand out a
	// connection that died in the outage once more: that is another 503.)
	retry := d.call("book_appointment", "call_1", d.bookArgs(d.slot))
	for i := 0; i < 3 && retry.Status == http.StatusServiceUnavailable; i++ {
		retry = d.call("book_appointment", "call_1", d.bookArgs(d.slot))
	}
	if a := decodeAnswer(t, retry); a.Outcome != "confirmed" {
		t.Fatalf("retry after the outage: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
		t.Fatalf("actions = %d", n)
	}
}
