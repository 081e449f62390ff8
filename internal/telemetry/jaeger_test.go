package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/jaegertest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// The fixture patient of the whole call: none of these may reach a span.
const (
	patientName  = "Zebulon Quartermaine"
	patientPhone = "+14155550187"
	patientEmail = "zebulon.q@patients.example"
)

// TestTraceOfACall books through a Vapi call against a real `oncecall
// serve` exporting to a real Jaeger: the calendar provider takes longer
// than the call's budget and then loses its answer, so the call hears
// pending and the reconciler settles the booking later. Jaeger's query
// API must hold the call's trace (continuing the platform's traceparent:
// server span, execute_tool with its attributes and the pending event,
// the claim's database spans, the step's send and its provider request)
// and the reconciler's own trace, linked to the execute_tool span that
// left the action unsettled; and no span of the whole call may carry the
// patient's name, phone or e-mail.
func TestTraceOfACall(t *testing.T) {
	t.Parallel()
	jaeger := jaegertest.Start(t)
	sim := simtest.Start(t, providersim.Config{})
	// Past the call's 1s budget, then the answer is lost: the step is
	// unknown until the reconciler re-sends it with its key.
	sim.Fault(provider.Calendar, "delay=2s", 1)
	sim.Fault(provider.Calendar, "drop_response", 1)

	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, key, err := store.CreateTenant(t.Context(), "traced clinic", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(72 * time.Hour).Truncate(time.Hour)
	slot, err := store.CreateSlot(t.Context(), db.NewSlot{TenantID: tenant.ID, StartsAt: start, EndsAt: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	service := "oncecall-test-" + uuid.NewString()[:8]
	srv := startServer(t,
		"DATABASE_URL="+url, "ONCECALL_PROVIDER_CALENDAR_URL="+sim.URL,
		"ONCECALL_DASHA_BUDGET=1s", "ONCECALL_DASHA_WAIT=500ms",
		"ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_STEP_BACKOFF=100ms",
		"ONCECALL_RATE_LIMIT=0", "ONCECALL_PRUNE_INTERVAL=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+jaeger.OTLP, "OTEL_SERVICE_NAME="+service, "OTEL_BSP_SCHEDULE_DELAY=100",
	)

	// The whole call: the caller is looked up by their number, created,
	// booked (with the platform's traceparent), and asks again later.
	call := "call-" + uuid.NewString()
	srv.vapiTool(t, key, call, patientPhone, "find_customer", map[string]any{})
	created := srv.vapiTool(t, key, call, patientPhone, "create_customer",
		map[string]any{"name": patientName, "phone": patientPhone, "email": patientEmail})
	if created["outcome"] != "confirmed" {
		t.Fatalf("create_customer: %v", created)
	}
	details, _ := created["details"].(map[string]any)
	customer := fmt.Sprint(details["id"])
	if _, err := uuid.Parse(customer); err != nil {
		customer = fmt.Sprint(details["customer_id"])
	}
	if _, err := uuid.Parse(customer); err != nil {
		t.Fatalf("create_customer's details name no customer id: %v", created)
	}
	traceID, parentID := strings.ReplaceAll(uuid.NewString(), "-", ""), "00f067aa0ba902b7"
	booked := srv.vapiTool(t, key, call, patientPhone, "book_appointment",
		map[string]any{"customer_id": customer, "slot_id": slot.ID.String()},
		"traceparent", "00-"+traceID+"-"+parentID+"-01")
	if booked["outcome"] != "pending" {
		t.Fatalf("book_appointment with a provider slower than the budget: %v, want pending", booked)
	}
	action := fmt.Sprint(booked["action_id"])
	waitFor(t, "the reconciler to settle the booking", 60*time.Second, func() bool {
		var outcome *string
		err := pool.QueryRow(context.Background(), "SELECT outcome FROM actions WHERE id = $1", action).Scan(&outcome)
		return err == nil && outcome != nil && *outcome == "confirmed"
	})
	if n := len(sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("the provider's ledger holds %d bookings, want 1", n)
	}
	if ans := srv.vapiTool(t, key, call, patientPhone, "check_action_status", map[string]any{"action_id": action}); ans["outcome"] != "confirmed" {
		t.Fatalf("check_action_status after the reconciler: %v", ans)
	}

	var call1 jaegertest.Trace
	waitFor(t, "jaeger to hold the booking's trace", 30*time.Second, func() bool {
		call1, _, err = jaeger.Trace(traceID)
		return err == nil && find(call1, "execute_tool book_appointment") != nil
	})
	tool := checkCallTrace(t, call1, action)
	var settled jaegertest.Trace
	waitFor(t, "jaeger to hold the reconciler's trace", 30*time.Second, func() bool {
		traces, _, err := jaeger.Traces(service, 100)
		for _, tr := range traces {
			if s := find(tr, "reconcile appointment.book"); err == nil && s != nil {
				settled = tr
				return true
			}
		}
		return false
	})
	checkReconcileTrace(t, settled, call1.TraceID, tool.SpanID, action)
	screenshot(t, jaeger.Query+"/trace/"+traceID, "jaeger-trace")

	t.Run("no patient data in any span", func(t *testing.T) {
		// Every span of the service, the whole call's, as Jaeger's API
		// gives them (names, attributes, events, resources).
		waitFor(t, "jaeger to hold every trace of the call", 30*time.Second, func() bool {
			traces, _, err := jaeger.Traces(service, 1000)
			return err == nil && len(traces) >= 5
		})
		traces, raw, err := jaeger.Traces(service, 1000)
		if err != nil {
			t.Fatal(err)
		}
		spans := 0
		for _, tr := range traces {
			spans += len(tr.Spans)
		}
		digits := strings.TrimPrefix(patientPhone, "+")
		if hit := has(strings.ToLower(string(raw)), strings.ToLower(patientName), "zebulon", "quartermaine",
			digits, digits[1:], strings.ToLower(patientEmail)); hit != "" {
			t.Fatalf("%d exported spans of %d traces carry the patient's %q", spans, len(traces), hit)
		}
		t.Logf("0 hits of the patient's name, phone or e-mail in %d spans of %d traces", spans, len(traces))
	})
}

// find returns the trace's first span named name.
func find(tr jaegertest.Trace, name string) *jaegertest.Span {
	for i := range tr.Spans {
		if tr.Spans[i].OperationName == name {
			return &tr.Spans[i]
		}
	}
	return nil
}

// children are the spans whose parent is id.
func children(tr jaegertest.Trace, id string) []jaegertest.Span {
	var out []jaegertest.Span
	for _, s := range tr.Spans {
		if s.Parent() == id {
			out = append(out, s)
		}
	}
	return out
}

// tags checks the span's attributes.
func tags(t *testing.T, s *jaegertest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Tag(k); !ok || got != v {
			t.Errorf("span %s: %s = %q (set: %v), want %q", s.OperationName, k, got, ok, v)
		}
	}
}

// checkCallTrace checks the booking request's trace and returns its
// execute_tool span.
func checkCallTrace(t *testing.T, tr jaegertest.Trace, action string) *jaegertest.Span {
	t.Helper()
	server := find(tr, "POST /v1/vapi/webhook")
	if server == nil {
		t.Fatalf("no server span in the call's trace: %s", names(tr))
	}
	tags(t, server, map[string]string{"span.kind": "server", "http.route": "/v1/vapi/webhook", "http.request.method": "POST", "http.response.status_code": "200"})
	if server.Parent() != "00f067aa0ba902b7" {
		t.Errorf("the server span's parent is %q, want the platform's traceparent span", server.Parent())
	}
	tool := find(tr, "execute_tool book_appointment")
	if tool == nil || tool.Parent() != server.SpanID {
		t.Fatalf("execute_tool book_appointment is not the server span's child: %s", names(tr))
	}
	tags(t, tool, map[string]string{
		"span.kind": "internal", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_appointment",
		"gen_ai.tool.call.id": "tc-book_appointment", "oncecall.action_id": action, "oncecall.outcome": "pending",
		"oncecall.replay": "false", "oncecall.operation": "appointment.book", "oncecall.platform": "vapi",
	})
	if _, ok := tool.Tag("gen_ai.conversation.id"); !ok {
		t.Errorf("execute_tool has no gen_ai.conversation.id")
	}
	if !event(tool, "oncecall.answer.pending") {
		t.Errorf("execute_tool has no oncecall.answer.pending event: the budget turned the answer into pending")
	}
	var db, send *jaegertest.Span
	for _, c := range children(tr, tool.SpanID) {
		if v, _ := c.Tag("db.system.name"); v == "postgresql" && db == nil {
			db = &c
		}
		if strings.HasPrefix(c.OperationName, "send ") {
			send = &c
		}
	}
	if db == nil {
		t.Errorf("no database span under execute_tool: %s", names(tr))
	}
	if send == nil {
		t.Fatalf("no step send under execute_tool: %s", names(tr))
	}
	tags(t, send, map[string]string{"http.request.resend_count": "0"})
	client := children(tr, send.SpanID)
	if len(client) != 1 {
		t.Fatalf("the send has %d provider requests, want 1: %s", len(client), names(tr))
	}
	tags(t, &client[0], map[string]string{"span.kind": "client", "http.request.method": "POST"})
	return tool
}

// checkReconcileTrace checks the reconciler's trace: its root is linked
// to the request's execute_tool span, and it re-sent the step.
func checkReconcileTrace(t *testing.T, tr jaegertest.Trace, callTrace, toolSpan, action string) {
	t.Helper()
	root := find(tr, "reconcile appointment.book")
	linked := false
	for _, r := range root.References {
		linked = linked || (r.RefType == "FOLLOWS_FROM" && r.TraceID == callTrace && r.SpanID == toolSpan)
	}
	if !linked {
		t.Errorf("the reconciler's span links %+v, want the call's execute_tool span %s/%s", root.References, callTrace, toolSpan)
	}
	tags(t, root, map[string]string{"oncecall.action_id": action, "oncecall.outcome": "confirmed", "oncecall.result": "completed"})
	sends := 0
	for _, c := range children(tr, root.SpanID) {
		if strings.HasPrefix(c.OperationName, "send ") || strings.HasPrefix(c.OperationName, "lookup ") {
			sends++
			if strings.HasPrefix(c.OperationName, "send ") {
				tags(t, &c, map[string]string{"http.request.resend_count": "1"})
			}
		}
	}
	if sends == 0 {
		t.Errorf("the reconciler neither re-sent nor looked up the step: %s", names(tr))
	}
}

func event(s *jaegertest.Span, name string) bool {
	for _, l := range s.Logs {
		for _, f := range l.Fields {
			if f.Key == "event" && f.Value == name {
				return true
			}
		}
	}
	return false
}

func names(tr jaegertest.Trace) string {
	var b strings.Builder
	for _, s := range tr.Spans {
		fmt.Fprintf(&b, "\n  %s %s (parent %s)", s.SpanID, s.OperationName, s.Parent())
	}
	return b.String()
}
