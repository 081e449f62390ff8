package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/db"
)

// What the caller heard: each answer given on a call about an action is
// kept with it (platform, call, tool, outcome, say, in order) and shown on
// its page beside what is true now; once a person settles it, the page
// and the follow-up call say what changed since the caller was told.
func TestWhatTheCallerHeard(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Riverside Clinic", time.Millisecond)
	maria, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: s.tenant.ID, Name: "Maria Lopez", Phone: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.clinicBooking(t, maria.ID, 1) // a Vapi call; the calendar's answer is lost
	// The caller asks again on the same call: still not confirmed.
	body := fmt.Sprintf(`{"message":{"type":"tool-calls","call":{"id":"vapi-call-1"},"toolCallList":[{"id":"t2","function":`+
		`{"name":"check_action_status","arguments":{"action_id":"%s"}}}]}}`, id)
	if r := s.e.Post("/v1/vapi/webhook", s.key, "", body); r.Status != http.StatusOK {
		t.Fatalf("status check: %d %s", r.Status, r.Body)
	}
	if n := s.e.Count(`SELECT count(*) FROM action_answers WHERE action_id = $1 AND tenant_id = $2 AND platform = 'vapi'
		AND call_id = 'vapi-call-1' AND outcome = 'pending' AND say LIKE '%NOT confirmed%'`, id, s.tenant.ID); n != 2 {
		t.Fatalf("%d pending answers kept for the call, want 2 (the booking and the status check)", n)
	}
	if n := s.e.Count(`SELECT count(*) FROM action_answers WHERE action_id = $1 AND tool = 'check_action_status'
		AND id > (SELECT min(id) FROM action_answers WHERE action_id = $1 AND tool = 'book_appointment')`, id); n != 1 {
		t.Fatal("the answers are not kept in the order they were given")
	}
	s.reconcile(t)
	ops := s.signedInClient(t, "Ana")
	page := send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+id.String(), nil).body
	if !strings.Contains(page, `id="heard"`) || strings.Count(page, "NOT confirmed") < 2 || !strings.Contains(page, "check_action_status") ||
		!strings.Contains(page, "vapi-call-1") || !strings.Contains(page, `id="now">not known yet`) {
		t.Fatalf("the page does not list what the caller heard beside what is known now:\n%s", page)
	}

	ref := s.ledgerRef(t, s.providerKey(t, id))
	a := send(t, ops, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
		url.Values{"outcome": {"confirmed"}, "provider_ref": {ref}, "note": {"found in the calendar"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("resolve: %d", a.status)
	}
	page = send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+id.String(), nil).body
	if !strings.Contains(page, `id="told-last">not confirmed yet`) || !strings.Contains(page, `id="now">confirmed`) ||
		!strings.Contains(page, "it is confirmed now: tell them") {
		t.Fatalf("after the resolution the page does not say what changed since the caller was told:\n%s", page)
	}
	tasks := send(t, ops, http.MethodGet, s.e.URL+"/console/tasks", nil).body
	if !strings.Contains(tasks, "they were told not confirmed yet (Vapi,") || !strings.Contains(tasks, "now confirmed: tell them") {
		t.Fatalf("the follow-up call does not name what changed since the caller was told:\n%s", tasks)
	}
}
