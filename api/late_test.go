package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

// controlServer is a fake Vapi control URL: it records every message
// posted to it and answers status.
type controlServer struct {
	*httptest.Server
	mu       sync.Mutex
	messages []map[string]any
	status   int
}

func newControlServer(t *testing.T, status int) *controlServer {
	t.Helper()
	c := &controlServer{status: status}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Method != http.MethodPost {
			t.Errorf("control URL: %s %v", r.Method, err)
		}
		c.mu.Lock()
		c.messages = append(c.messages, m)
		c.mu.Unlock()
		w.WriteHeader(c.status)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *controlServer) got() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.messages...)
}

// vapiWithControl is a Vapi tool-calls message booking slot for customer
// in call, whose call object carries the control URL, with n tool calls.
func vapiWithControl(call, control, customer, slot string, n int) map[string]any {
	var list []map[string]any
	for i := range n {
		list = append(list, map[string]any{"id": "tc-" + call + "-" + string(rune('a'+i)), "type": "function",
			"function": map[string]any{"name": "book_appointment", "arguments": map[string]any{"customer_id": customer, "slot_id": slot}}})
	}
	return map[string]any{"message": map[string]any{
		"type": "tool-calls", "toolCallList": list,
		"call": map[string]any{"id": call, "monitor": map[string]any{"listenUrl": "wss://example.invalid/listen", "controlUrl": control}},
	}}
}

// A Vapi booking answered pending (a calendar slower than the budget) has
// its settled answer added to the call's conversation through the call's
// control URL (Live Call Control): exactly one add-message per settled
// action, holding its action id, recorded in its timeline; none once the
// call has ended; and a control URL that fails changes nothing of the
// call's answers.
func TestVapiLateResultsThroughTheControlURL(t *testing.T) {
	t.Parallel()
	local := func(c *app.Config) {
		c.LateResultURL = func(u *url.URL) bool { return u.Hostname() == "127.0.0.1" }
	}
	start := func(t *testing.T) (dashaEnv, *simtest.Sim) {
		t.Helper()
		sim, providers := slowCalendar(t, "4s")
		return setupDasha(t, local, func(c *app.Config) {
			c.Providers = providers
			c.ReconcileDisabled = true
			c.DashaBudget = 2 * time.Second
		}), sim
	}
	pending := func(t *testing.T, d dashaEnv, body any) string {
		t.Helper()
		_, answers := vapiResults(t, within(t, d.Env, 6*time.Second, http.MethodPost, "/v1/vapi/webhook", d.key, body))
		if answers[0].Outcome != "pending" || answers[0].ActionID == "" {
			t.Fatalf("want a pending answer: %+v", answers)
		}
		return answers[0].ActionID
	}
	// eventually waits for a condition, failing after 90s (a failing
	// control URL is tried 5 times, 1 to 8 s apart, each retry made
	// available by River's scheduler within 5s).
	eventually := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition
		}
	}
	events := func(d dashaEnv, id, kind, reason string) int {
		return d.Count("SELECT count(*) FROM action_events WHERE action_id = $1::uuid AND kind = $2 AND ($3 = '' OR detail->>'reason' = $3)", id, kind, reason)
	}

	t.Run("delivered once", func(t *testing.T) {
		t.Parallel()
		d, sim := start(t)
		control := newControlServer(t, http.StatusOK)
		body := vapiWithControl("late-1", control.URL+"/control", d.customer.String(), d.slot.String(), 2)
		id := pending(t, d, body)
		eventually(t, "the late result is recorded", func() bool { return events(d, id, "late_result_delivered", "") == 1 })
		got := control.got()
		if len(got) != 1 {
			t.Fatalf("%d add-messages, want 1: %v", len(got), got)
		}
		m := got[0]
		msg, _ := m["message"].(map[string]any)
		content, _ := msg["content"].(string)
		if m["type"] != "add-message" || msg["role"] != "system" || !strings.Contains(content, id) || !strings.Contains(content, `"outcome":"confirmed"`) {
			t.Fatalf("the add-message: %v", m)
		}
		// The model asks again (a replay, confirmed now): nothing more.
		_, again := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", body))
		if again[0].Outcome != "confirmed" || again[0].ActionID != id {
			t.Fatalf("the replay: %+v", again)
		}
		if n := len(control.got()); n != 1 {
			t.Fatalf("%d add-messages after the replay, want 1", n)
		}
		if l := sim.Ledger(provider.Calendar); len(l) != 1 {
			t.Fatalf("the calendar holds %d bookings, want 1", len(l))
		}
	})

	t.Run("none after the call ended", func(t *testing.T) {
		t.Parallel()
		d, _ := start(t)
		control := newControlServer(t, http.StatusOK)
		id := pending(t, d, vapiWithControl("late-2", control.URL, d.customer.String(), d.slot.String(), 1))
		end := map[string]any{"message": map[string]any{"type": "end-of-call-report", "call": map[string]any{"id": "late-2"}}}
		if r := d.Post("/v1/vapi/webhook", d.key, "", end); r.Status != http.StatusOK {
			t.Fatalf("end-of-call-report: %d %s", r.Status, r.Body)
		}
		eventually(t, "the booking settles", func() bool {
			return d.Count("SELECT count(*) FROM actions WHERE id = $1::uuid AND state = 'completed' AND outcome = 'confirmed'", id) == 1
		})
		// The settlement queued nothing for the ended call: its
		// subscription says so, and no delivery job exists.
		if n := d.Count("SELECT count(*) FROM late_results WHERE action_id = $1::uuid AND call_ended_at IS NOT NULL AND delivered_at IS NULL", id); n != 1 {
			t.Fatalf("%d ended, undelivered subscriptions, want 1", n)
		}
		if n := d.Count("SELECT count(*) FROM river_job WHERE args->>'action_id' = $1", id); n != 0 {
			t.Fatalf("%d delivery jobs for the ended call", n)
		}
		if got := control.got(); len(got) != 0 {
			t.Fatalf("%d add-messages after the call ended: %v", len(got), got)
		}
	})

	t.Run("a failing control URL changes no answer", func(t *testing.T) {
		t.Parallel()
		d, _ := start(t)
		control := newControlServer(t, http.StatusInternalServerError)
		id := pending(t, d, vapiWithControl("late-3", control.URL, d.customer.String(), d.slot.String(), 1))
		eventually(t, "the failed delivery is recorded", func() bool { return events(d, id, "late_result_not_delivered", "control_url_failed") == 1 })
		if n := len(control.got()); n < 2 {
			t.Fatalf("the failing control URL was tried %d times, want retries", n)
		}
		_, a := vapiResults(t, d.Post("/v1/vapi/webhook", d.key, "", vapiWithControl("late-3", control.URL, d.customer.String(), d.slot.String(), 1)))
		if a[0].Outcome != "confirmed" || a[0].ActionID != id {
			t.Fatalf("the call's answer after the failed delivery: %+v", a)
		}
		if n := events(d, id, "late_result_delivered", ""); n != 0 {
			t.Fatalf("a failed delivery recorded as delivered %d times", n)
		}
	})
}
