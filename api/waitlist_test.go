package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// catalogOf creates a location, a service and a practitioner performing it
// for the tenant of key, and returns the service's and the practitioner's
// ids.
func catalogOf(t *testing.T, e *apptest.Env, key string) (service, practitioner string) {
	t.Helper()
	place, _ := created(t, e, "/v1/locations", key, "wl-location", map[string]any{"name": "Riverside", "timezone": "UTC"})
	service, _ = created(t, e, "/v1/services", key, "wl-service", map[string]any{"name": "Cleaning", "duration_minutes": 30})
	practitioner, _ = created(t, e, "/v1/practitioners", key, "wl-practitioner",
		map[string]any{"name": "Dr. Ortiz", "location_ids": []string{place}, "service_ids": []string{service}})
	return service, practitioner
}

// A waitlist entry joined over REST is one row with its fields; a retry
// with the key replays the answer and writes nothing more.
func TestWaitlistJoinOverRESTIsOneRow(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	service, practitioner := catalogOf(t, e.Env, e.key)
	ana := e.customer("+442079460001", "")
	body := map[string]any{"customer_id": ana, "service_id": service, "practitioner_id": practitioner, "before": "2030-07-05", "note": " Mornings suit best. "}
	first := e.Post("/v1/waitlist", e.key, "wl-1", body)
	if first.Status != http.StatusCreated || first.Replayed() {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	res := resultOf(t, first)
	if res["status"] != "active" || res["customer_id"] != ana.String() || res["service_id"] != service ||
		res["practitioner_id"] != practitioner || res["before"] != "2030-07-05" || res["note"] != "Mornings suit best." {
		t.Fatalf("result: %v", res)
	}
	again := e.Post("/v1/waitlist", e.key, "wl-1", body)
	if again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("retry: %d replayed=%v %s", again.Status, again.Replayed(), again.Body)
	}
	if n := e.Count(`SELECT count(*) FROM waitlist_entries WHERE tenant_id = $1 AND customer_id = $2 AND service_id = $3
		AND practitioner_id = $4 AND before_date = '2030-07-05' AND note = 'Mornings suit best.' AND status = 'active'
		AND call_id IS NULL AND amended_at IS NULL`, e.tenant, ana, service, practitioner); n != 1 {
		t.Fatalf("waitlist rows = %d, want 1", n)
	}
	if n := e.Count("SELECT count(*) FROM waitlist_entries"); n != 1 {
		t.Fatalf("all waitlist rows = %d, want 1", n)
	}
	// Outside a call each key is its own entry, a practitioner alone will do.
	bob := e.customer("", "")
	byPractitioner := e.Post("/v1/waitlist", e.key, "wl-2", map[string]any{"customer_id": bob, "practitioner_id": practitioner})
	if byPractitioner.Status != http.StatusCreated {
		t.Fatalf("by practitioner: %d %s", byPractitioner.Status, byPractitioner.Body)
	}
	if res := resultOf(t, byPractitioner); res["service_id"] != nil || res["before"] != nil {
		t.Fatalf("by practitioner: %v", res)
	}
	if n := e.Count("SELECT count(*) FROM waitlist_entries WHERE customer_id = $1 AND service_id IS NULL AND before_date IS NULL AND practitioner_id = $2", bob, practitioner); n != 1 {
		t.Fatalf("waitlist rows by practitioner = %d, want 1", n)
	}
}

// Input that cannot be a waitlist entry is a 400 naming the field; the
// tenant's data that does not exist is a 422 naming the code; none leaves
// a row.
func TestBadWaitlistJoinsWriteNothing(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	e.Contract.AllowUndocumentedInput()
	service, practitioner := catalogOf(t, e.Env, e.key)
	ana := e.customer("", "")
	for i, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"customer_id": ana}, "service_id"},
		{map[string]any{"customer_id": ana, "service_id": "", "practitioner_id": "  "}, "service_id"},
		{map[string]any{"customer_id": ana, "service_id": "cleaning"}, "service_id"},
		{map[string]any{"customer_id": ana, "practitioner_id": practitioner + "0"}, "practitioner_id"},
		{map[string]any{"customer_id": "ana", "service_id": service}, "customer_id"},
		{map[string]any{"service_id": service}, "customer_id"},
		{map[string]any{"customer_id": ana, "service_id": service, "before": "5 July"}, "before"},
		{map[string]any{"customer_id": ana, "service_id": service, "before": "2030-02-30"}, "before"},
		{map[string]any{"customer_id": ana, "service_id": service, "before": "2020-07-05"}, "before"},
		{map[string]any{"customer_id": ana, "service_id": service, "note": strings.Repeat("a", 501)}, "note"},
		{map[string]any{"customer_id": ana, "service_id": service, "urgent": true}, "urgent"},
	} {
		r := e.Post("/v1/waitlist", e.key, uuid.NewString(), c.body)
		if p := r.JSON(t); r.Status != http.StatusBadRequest || p["field"] != c.field {
			t.Errorf("case %d: %d %s, want 400 naming %s", i, r.Status, r.Body, c.field)
		}
	}
	wantRejection(t, e.Post("/v1/waitlist", e.key, "wl-ghost-customer", map[string]any{"customer_id": uuid.New(), "service_id": service}), "CUSTOMER_NOT_FOUND")
	wantRejection(t, e.Post("/v1/waitlist", e.key, "wl-ghost-service", map[string]any{"customer_id": ana, "service_id": uuid.New()}), "SERVICE_NOT_FOUND")
	wantRejection(t, e.Post("/v1/waitlist", e.key, "wl-ghost-practitioner",
		map[string]any{"customer_id": ana, "service_id": service, "practitioner_id": uuid.New()}), "PRACTITIONER_NOT_FOUND")
	// Another tenant's service is no service of this one.
	_, otherKey := e.Tenant("other")
	otherService, _ := catalogOf(t, e.Env, otherKey)
	wantRejection(t, e.Post("/v1/waitlist", e.key, "wl-other-service", map[string]any{"customer_id": ana, "service_id": otherService}), "SERVICE_NOT_FOUND")
	if n := e.Count("SELECT count(*) FROM waitlist_entries"); n != 0 {
		t.Fatalf("waitlist rows = %d, want 0", n)
	}
}

// Within one call a second join of the same customer amends the call's
// entry; the first answer then stands changed. Another call is another
// entry.
func TestDashaWaitlistIsOnePerCallAndCustomer(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	service, practitioner := catalogOf(t, d.Env, d.key)
	firstArgs := map[string]any{"customer_id": d.customer, "service_id": service}
	first := decodeAnswer(t, d.call("join_waitlist", "call-1", firstArgs))
	if first.Outcome != "confirmed" || !strings.Contains(first.Say, "waitlist") {
		t.Fatalf("join: %+v", first)
	}
	// The agent's exact retry is the same action.
	if again := decodeAnswer(t, d.call("join_waitlist", "call-1", firstArgs)); again.ActionID != first.ActionID || detailID(t, again) != detailID(t, first) {
		t.Fatalf("a retried join is not a replay: %+v (first %+v)", again, first)
	}
	second := decodeAnswer(t, d.call("join_waitlist", "call-1", map[string]any{
		"customer_id": d.customer, "practitioner_id": practitioner, "before": "2030-07-05", "note": "Any afternoon",
	}))
	if second.Outcome != "confirmed" || detailID(t, second) != detailID(t, first) || second.ActionID == first.ActionID {
		t.Fatalf("second join in the call: %+v (first %s)", second, first.Details)
	}
	if n := d.Count("SELECT count(*) FROM waitlist_entries WHERE customer_id = $1", d.customer); n != 1 {
		t.Fatalf("waitlist rows after a second join in the call = %d, want 1", n)
	}
	if n := d.Count(`SELECT count(*) FROM waitlist_entries WHERE customer_id = $1 AND service_id IS NULL AND practitioner_id = $2
		AND before_date = '2030-07-05' AND note = 'Any afternoon' AND call_platform = 'dasha' AND call_id = 'call-1'
		AND amended_at IS NOT NULL`, d.customer, practitioner); n != 1 {
		t.Fatal("the call's entry does not hold the later request")
	}
	resp := d.call("check_action_status", "call-1", map[string]any{"action_id": first.ActionID})
	var status struct {
		answer
		Current string `json:"current"`
	}
	if err := json.Unmarshal(resp.Body, &status); err != nil {
		t.Fatal(err)
	}
	if status.Current != "changed" {
		t.Fatalf("check_action_status of the amended first join: current %q, want changed: %s", status.Current, resp.Body)
	}
	// The same request in another call is another entry.
	if a := decodeAnswer(t, d.call("join_waitlist", "call-2", firstArgs)); a.Outcome != "confirmed" || detailID(t, a) == detailID(t, first) {
		t.Fatalf("another call: %+v", a)
	}
	if n := d.Count("SELECT count(*) FROM waitlist_entries WHERE customer_id = $1", d.customer); n != 2 {
		t.Fatalf("waitlist rows after another call = %d, want 2", n)
	}
	bad := decodeAnswer(t, d.call("join_waitlist", "call-1", map[string]any{"customer_id": d.customer}))
	if bad.Outcome != "rejected" || bad.Reason != "invalid_arguments" || !strings.Contains(bad.Say, "service_id") {
		t.Fatalf("no service and no practitioner: %+v", bad)
	}
	ghost := decodeAnswer(t, d.call("join_waitlist", "call-1", map[string]any{"customer_id": d.customer, "practitioner_id": uuid.NewString()}))
	if ghost.Outcome != "rejected" || ghost.Reason != "practitioner_not_found" || strings.Contains(ghost.Say, "is on the waitlist") {
		t.Fatalf("unknown practitioner: %+v", ghost)
	}
}

// A cancelled entry is cancelled once: the agent's retry replays the
// answer, and a second cancellation under another key changes nothing.
func TestWaitlistCancelIsOneEffect(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	service, _ := catalogOf(t, d.Env, d.key)
	joined := decodeAnswer(t, d.call("join_waitlist", "call-1", map[string]any{"customer_id": d.customer, "service_id": service}))
	id := detailID(t, joined)
	cancel := func() answer {
		return decodeAnswer(t, d.call("cancel_waitlist_entry", "call-1", map[string]any{"entry_id": id}))
	}
	first := cancel()
	if first.Outcome != "confirmed" || answerDetails(t, first)["status"] != "cancelled" {
		t.Fatalf("cancel: %+v", first)
	}
	var before string
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT cancelled_at::text FROM waitlist_entries WHERE id = $1 AND status = 'cancelled'", id).Scan(&before); err != nil {
		t.Fatalf("the entry is not cancelled: %v", err)
	}
	if again := cancel(); again.Outcome != "confirmed" || again.ActionID != first.ActionID {
		t.Fatalf("a retried cancel is not a replay: %+v", again)
	}
	rest := d.Post("/v1/waitlist/"+id+"/cancel", d.key, "cancel-once", nil)
	wantRejection(t, rest, "WAITLIST_ENTRY_NOT_ACTIVE")
	if replay := d.Post("/v1/waitlist/"+id+"/cancel", d.key, "cancel-once", nil); !replay.Replayed() || !bytes.Equal(replay.Body, rest.Body) {
		t.Fatalf("a retried REST cancel is not a replay: %d %s", replay.Status, replay.Body)
	}
	var after string
	if err := d.Store.Pool().QueryRow(t.Context(), "SELECT cancelled_at::text FROM waitlist_entries WHERE id = $1 AND status = 'cancelled'", id).Scan(&after); err != nil || after != before {
		t.Fatalf("a second cancel changed the entry: %v %s / %s", err, after, before)
	}
	if n := d.Count("SELECT count(*) FROM actions WHERE operation = 'waitlist.cancel' AND outcome = 'confirmed'"); n != 1 {
		t.Fatalf("confirmed cancellations = %d, want 1", n)
	}
	wantRejection(t, d.Post("/v1/waitlist/"+uuid.NewString()+"/cancel", d.key, "cancel-ghost", nil), "WAITLIST_ENTRY_NOT_FOUND")
	// A REST cancel of an active entry, replayed under its key.
	other := d.Post("/v1/waitlist", d.key, "wl-rest", map[string]any{"customer_id": d.customer, "service_id": service})
	otherID := resultOf(t, other)["id"].(string)
	c1 := d.Post("/v1/waitlist/"+otherID+"/cancel", d.key, "cancel-rest", nil)
	if c1.Status != http.StatusOK || resultOf(t, c1)["status"] != "cancelled" {
		t.Fatalf("cancel over REST: %d %s", c1.Status, c1.Body)
	}
	if c2 := d.Post("/v1/waitlist/"+otherID+"/cancel", d.key, "cancel-rest", nil); c2.Status != http.StatusOK || !c2.Replayed() || !bytes.Equal(c2.Body, c1.Body) {
		t.Fatalf("retried cancel over REST: %d replayed=%v %s", c2.Status, c2.Replayed(), c2.Body)
	}
	if n := d.Count("SELECT count(*) FROM waitlist_entries WHERE status = 'cancelled' AND cancelled_at IS NOT NULL"); n != 2 {
		t.Fatalf("cancelled entries = %d, want 2", n)
	}
	// A later join of the same call puts the caller back on the call's
	// entry: the cancellation no longer stands.
	back := decodeAnswer(t, d.call("join_waitlist", "call-1", map[string]any{"customer_id": d.customer, "service_id": service, "note": "After all"}))
	if back.Outcome != "confirmed" || detailID(t, back) != id {
		t.Fatalf("join again in the call: %+v", back)
	}
	if n := d.Count("SELECT count(*) FROM waitlist_entries WHERE id = $1 AND status = 'active' AND cancelled_at IS NULL AND note = 'After all'", id); n != 1 {
		t.Fatal("the call's entry is not active again")
	}
	resp := d.call("check_action_status", "call-1", map[string]any{"action_id": first.ActionID})
	var status struct {
		answer
		Current string `json:"current"`
	}
	if err := json.Unmarshal(resp.Body, &status); err != nil {
		t.Fatal(err)
	}
	if status.Current == "" || strings.Contains(status.Say, "You may tell the caller they will not be offered") {
		t.Fatalf("check_action_status of the cancellation after the caller joined again: %s", resp.Body)
	}
}

// GET /v1/waitlist lists the tenant's entries only, newest first, by
// status, a page at a time.
func TestWaitlistListingIsTheTenants(t *testing.T) {
	t.Parallel()
	e := setupRecords(t)
	service, practitioner := catalogOf(t, e.Env, e.key)
	var ids []string
	for i, body := range []map[string]any{
		{"customer_id": e.customer("", ""), "service_id": service},
		{"customer_id": e.customer("", ""), "practitioner_id": practitioner},
		{"customer_id": e.customer("", ""), "service_id": service, "practitioner_id": practitioner, "note": "Late mornings"},
	} {
		r := e.Post("/v1/waitlist", e.key, "wl-list-"+string(rune('a'+i)), body)
		if r.Status != http.StatusCreated {
			t.Fatalf("join %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, resultOf(t, r)["id"].(string))
	}
	if r := e.Post("/v1/waitlist/"+ids[1]+"/cancel", e.key, "wl-list-cancel", nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	// Another tenant's entry.
	other, otherKey := e.Tenant("other")
	otherService, _ := catalogOf(t, e.Env, otherKey)
	otherCustomer := e.Customer(other.ID)
	if r := e.Post("/v1/waitlist", otherKey, "wl-other", map[string]any{"customer_id": otherCustomer, "service_id": otherService}); r.Status != http.StatusCreated {
		t.Fatalf("other tenant's join: %d %s", r.Status, r.Body)
	}
	type page struct {
		Entries []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"entries"`
		HasMore bool `json:"has_more"`
	}
	list := func(query string) page {
		t.Helper()
		r := e.Get("/v1/waitlist"+query, e.key)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/waitlist%s: %d %s", query, r.Status, r.Body)
		}
		var p page
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	idsOf := func(p page) []string {
		var out []string
		for _, en := range p.Entries {
			out = append(out, en.ID)
		}
		return out
	}
	all := list("")
	if got, want := strings.Join(idsOf(all), ","), strings.Join([]string{ids[2], ids[1], ids[0]}, ","); got != want || all.HasMore {
		t.Fatalf("all: %s (more %v), want %s newest first", got, all.HasMore, want)
	}
	if active := list("?status=active"); strings.Join(idsOf(active), ",") != ids[2]+","+ids[0] {
		t.Fatalf("active: %v", idsOf(active))
	}
	if cancelled := list("?status=cancelled"); len(cancelled.Entries) != 1 || cancelled.Entries[0].ID != ids[1] || cancelled.Entries[0].Status != "cancelled" {
		t.Fatalf("cancelled: %+v", cancelled)
	}
	first := list("?limit=2")
	if strings.Join(idsOf(first), ",") != ids[2]+","+ids[1] || !first.HasMore {
		t.Fatalf("first page: %v more=%v", idsOf(first), first.HasMore)
	}
	if rest := list("?limit=2&after=" + ids[1]); strings.Join(idsOf(rest), ",") != ids[0] || rest.HasMore {
		t.Fatalf("second page: %v more=%v", idsOf(rest), rest.HasMore)
	}
	// The other tenant sees its own entry alone.
	if r := e.Get("/v1/waitlist", otherKey); r.Status != http.StatusOK || strings.Count(string(r.Body), `"id"`) != 1 ||
		strings.Contains(string(r.Body), ids[0]) || strings.Contains(string(r.Body), ids[1]) || strings.Contains(string(r.Body), ids[2]) {
		t.Fatalf("the other tenant's listing: %d %s", r.Status, r.Body)
	}
	e.Contract.AllowUndocumentedInput()
	for query, field := range map[string]string{
		"?status=waiting": "status", "?limit=0": "limit", "?limit=101": "limit", "?after=last": "after", "?customer_id=" + ids[0]: "customer_id",
	} {
		badInput(t, e.Get("/v1/waitlist"+query, e.key), field)
	}
}
