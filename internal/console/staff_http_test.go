package console_test

import (
	"encoding/csv"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
)

// A viewer reads but is refused a resolution (403, nothing changes); a
// resolver of one tenant sees and resolves only that tenant's actions
// (another tenant's is "no such action" for them, and stays as it was);
// their resolution names them, on the action and in the audit trail and
// its CSV export.
func TestRolesAndTenantScope(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Riverside Clinic", time.Hour)
	other, otherKey := s.e.Tenant("Harbour Dental")
	mine := s.stuckBooking(t, "scope-1", 1)
	otherCustomer, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: other.ID, Name: "Olga Other", Phone: "+15550100999"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := s.stuckFor(t, other.ID, otherKey, "scope-2", 2, otherCustomer.ID)
	s.person(t, "Vic Viewer", "vic@example.com", oncecall.RoleViewer, uuid.Nil)
	ana := s.person(t, "Ana Ruiz", "ana@example.com", oncecall.RoleResolver, s.tenant.ID)

	vic := s.signIn(t, "vic@example.com")
	if a := send(t, vic, http.MethodGet, s.e.URL+"/console/actions/"+mine.String(), nil); a.status != http.StatusOK || strings.Contains(a.body, `id="resolve"`) {
		t.Fatalf("a viewer's action page: %d, resolve form shown: %v", a.status, strings.Contains(a.body, `id="resolve"`))
	}
	for _, path := range []string{"/resolve", "/retry", "/note"} {
		a := send(t, vic, http.MethodPost, s.e.URL+"/console/actions/"+mine.String()+path,
			url.Values{"outcome": {"rejected"}, "note": {"no"}, "text": {"a note"}})
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "does not allow") {
			t.Fatalf("a viewer posting %s: %d", path, a.status)
		}
	}
	if a := send(t, vic, http.MethodGet, s.e.URL+"/console/bulk?do=resolve", nil); a.status != http.StatusForbidden {
		t.Fatalf("a viewer's bulk dry run: %d", a.status)
	}
	if a := send(t, vic, http.MethodGet, s.e.URL+"/console/staff", nil); a.status != http.StatusForbidden {
		t.Fatalf("a viewer's staff page: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind IN ('resolved_by_operator', 'operator_note', 'retried_by_operator')`, mine); n != 0 {
		t.Fatal("a viewer changed the action")
	}

	c := s.signIn(t, "ana@example.com")
	q := send(t, c, http.MethodGet, s.e.URL+"/console/", nil)
	if q.status != http.StatusOK || !strings.Contains(q.body, mine.String()) || strings.Contains(q.body, theirs.String()) || strings.Contains(q.body, "Harbour Dental") {
		t.Fatalf("a tenant's queue: %d, theirs listed %v", q.status, strings.Contains(q.body, theirs.String()))
	}
	if a := send(t, c, http.MethodGet, s.e.URL+"/console/?tenant="+other.ID.String(), nil); a.status != http.StatusBadRequest {
		t.Fatalf("another tenant's queue: %d", a.status)
	}
	if a := send(t, c, http.MethodGet, s.e.URL+"/console/actions/"+theirs.String(), nil); a.status != http.StatusNotFound || strings.Contains(a.body, "Olga") {
		t.Fatalf("another tenant's action: %d", a.status)
	}
	for _, path := range []string{"/resolve", "/retry", "/note"} {
		a := send(t, c, http.MethodPost, s.e.URL+"/console/actions/"+theirs.String()+path,
			url.Values{"outcome": {"rejected"}, "note": {"forged"}, "text": {"forged"}})
		if a.status != http.StatusNotFound {
			t.Fatalf("posting %s to another tenant's action: %d", path, a.status)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, theirs); n != 1 {
		t.Fatal("another tenant's action changed")
	}
	if a := send(t, c, http.MethodGet, s.e.URL+"/console/search?q=%2B15550100999", nil); strings.Contains(a.body, theirs.String()) || strings.Contains(a.body, "Olga") {
		t.Fatal("a search found another tenant's customer")
	}

	a := send(t, c, http.MethodPost, s.e.URL+"/console/actions/"+mine.String()+"/resolve",
		url.Values{"outcome": {"rejected"}, "note": {"no booking in the calendar"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("resolve: %d %s", a.status, a.body)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_id = $2
		AND operator_name = 'Ana Ruiz' AND via = 'password' AND tenant_id = $3`, mine, ana, s.tenant.ID); n != 1 {
		t.Fatal("the resolution is not audited under the signed-in person")
	}
	if n := s.e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator' AND detail->>'by' = 'Ana Ruiz'`, mine); n != 1 {
		t.Fatal("the timeline does not name the signed-in person")
	}
	page := send(t, c, http.MethodGet, s.e.URL+"/console/actions/"+mine.String(), nil)
	if !regexp.MustCompile(`(?s)id="action-audit".*Ana Ruiz.*resolved an action`).MatchString(page.body) {
		t.Fatalf("the action's page does not say who resolved it:\n%s", page.body)
	}
	// Its caller heard "not confirmed": calling them back is a task.
	if tasks := send(t, c, http.MethodGet, s.e.URL+"/console/tasks", nil); !strings.Contains(tasks.body, "Booking: they were told someone would follow up; now not done (rejected): tell them") ||
		!strings.Contains(tasks.body, mine.String()) {
		t.Fatal("the resolved booking's caller is not a follow-up call")
	}
	audit := send(t, c, http.MethodGet, s.e.URL+"/console/audit?kind=resolved", nil)
	if audit.status != http.StatusOK || !strings.Contains(audit.body, "Ana Ruiz") {
		t.Fatalf("the audit page: %d", audit.status)
	}
	export := send(t, c, http.MethodGet, s.e.URL+"/console/audit.csv?person=Ana+Ruiz", nil)
	records, err := csv.NewReader(strings.NewReader(export.body)).ReadAll()
	if err != nil || export.status != http.StatusOK || !strings.HasPrefix(export.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %v %v", export.status, export.header, err)
	}
	found := false
	for _, r := range records[1:] {
		if r[1] == "Ana Ruiz" && r[4] == mine.String() && r[5] == "resolved an action" && strings.Contains(r[6], "no booking in the calendar") {
			found = true
		}
		if r[3] == "Harbour Dental" {
			t.Fatalf("the export of a tenant's person lists another tenant: %v", r)
		}
	}
	if !found {
		t.Fatalf("the export does not list Ana's resolution:\n%s", export.body)
	}
}

// Bulk resolve: the filters select a tenant's stuck bookings; the dry run
// counts them and changes nothing; the run resolves exactly those, each on
// its own with its own audit entry, never an action claimed after the
// count nor another tenant's; the provider's ledger is untouched.
func TestBulkResolveOfAFilteredSet(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Bulk Clinic", time.Millisecond)
	other, otherKey := s.e.Tenant("Other Clinic")
	var mine []uuid.UUID
	for i := range 3 {
		mine = append(mine, s.stuckBooking(t, fmt.Sprintf("bulk-%d", i), i+1))
	}
	theirs := s.stuckFor(t, other.ID, otherKey, "bulk-other", 9, s.e.Customer(other.ID))
	s.reconcile(t)
	s.person(t, "Bo Bulk", "bo@example.com", oncecall.RoleResolver, uuid.Nil)
	c := s.signIn(t, "bo@example.com")
	filter := url.Values{"tenant": {s.tenant.ID.String()}, "state": {"needs_operator"}}

	dry := send(t, c, http.MethodGet, s.e.URL+"/console/bulk?do=resolve&"+filter.Encode(), nil)
	count := regexp.MustCompile(`id="bulk-count">(\d+)<`).FindStringSubmatch(dry.body)
	asOf := regexp.MustCompile(`name="as_of" value="([^"]+)"`).FindStringSubmatch(dry.body)
	if dry.status != http.StatusOK || count == nil || count[1] != "3" || asOf == nil {
		t.Fatalf("dry run: %d %v\n%s", dry.status, count, dry.body)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE tenant_id = $1 AND state = 'unknown' AND needs_operator`, s.tenant.ID); n != 3 {
		t.Fatal("the dry run changed something")
	}
	// Claimed after the count: not part of the run.
	late := s.stuckBooking(t, "bulk-late", 7)
	if _, err := s.e.Store.Pool().Exec(t.Context(), `UPDATE actions SET needs_operator = true WHERE id = $1`, late); err != nil {
		t.Fatal(err)
	}

	form := url.Values{"do": {"resolve"}, "as_of": {asOf[1]}, "count": {"3"}, "reason": {"TEST_BOOKING"}}
	for k, v := range filter {
		form[k] = v
	}
	if a := send(t, c, http.MethodPost, s.e.URL+"/console/bulk", form); a.status != http.StatusBadRequest || !strings.Contains(a.body, "note is required") {
		t.Fatalf("bulk resolve without a note: %d", a.status)
	}
	form.Set("note", "test bookings from the launch rehearsal")
	a := send(t, c, http.MethodPost, s.e.URL+"/console/bulk", form)
	if acted := regexp.MustCompile(`id="bulk-acted">(\d+)<`).FindStringSubmatch(a.body); a.status != http.StatusOK || acted == nil || acted[1] != "3" {
		t.Fatalf("bulk resolve: %d %v\n%s", a.status, acted, a.body)
	}
	for _, id := range mine {
		if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND outcome = 'rejected' AND reason = 'TEST_BOOKING' AND NOT needs_operator`, id); n != 1 {
			t.Fatalf("%s was not resolved", id)
		}
		if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_name = 'Bo Bulk'
			AND detail->>'bulk' <> ''`, id); n != 1 {
			t.Fatalf("%s's resolution is not its own audit entry", id)
		}
	}
	for _, id := range []uuid.UUID{late, theirs} {
		if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, id); n != 1 {
			t.Fatalf("%s, outside the count, was resolved", id)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'bulk_resolved' AND operator_name = 'Bo Bulk' AND detail->>'acted' = '3'`); n != 1 {
		t.Fatal("the bulk run is not in the audit trail")
	}
	if n := len(s.sim.Ledger(provider.Calendar)); n != 5 {
		t.Fatalf("the calendar holds %d writes, want the 5 bookings sent", n)
	}
	// The same form again: every action is settled, nothing happens twice.
	a = send(t, c, http.MethodPost, s.e.URL+"/console/bulk", form)
	if acted := regexp.MustCompile(`id="bulk-acted">(\d+)<`).FindStringSubmatch(a.body); acted == nil || acted[1] != "0" {
		t.Fatalf("the run repeated: %v", acted)
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'resolved'`); n != 3 {
		t.Fatalf("%d resolutions audited, want 3", n)
	}
}

// A caller left waiting for a person, and a caller who asked to be called
// back, are tasks saying who calls whom; marking one done records the
// signed-in person, and it leaves the list.
func TestFollowUpCalls(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Task Clinic", time.Millisecond)
	maria, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: s.tenant.ID, Name: "Maria Lopez", Phone: "+15550100321"})
	if err != nil {
		t.Fatal(err)
	}
	waiting := s.stuckBookingFor(t, "task-book", 1, maria.ID)
	s.reconcile(t)
	day := time.Now().Add(48 * time.Hour).Format("2006-01-02")
	r := s.e.Post("/v1/callbacks", s.key, "task-callback", map[string]any{
		"phone": "+15550100654", "window_start": day + "T14:00", "window_end": day + "T16:00", "reason": "question about the bill",
	})
	if r.Status != http.StatusCreated {
		t.Fatalf("callback: %d %s", r.Status, r.Body)
	}
	callback := r.JSON(t)["result"].(map[string]any)["id"].(string)
	s.person(t, "Tess Task", "tess@example.com", oncecall.RoleResolver, uuid.Nil)
	c := s.signIn(t, "tess@example.com")
	page := send(t, c, http.MethodGet, s.e.URL+"/console/tasks", nil)
	page.body = html.UnescapeString(page.body) // html/template writes + as &#43;
	// A tenant of no one country (UTC) shows numbers in international format.
	for _, want := range []string{"calls Maria Lopez", "+1 555-010-0321", "calls +1 555-010-0654", "question about the bill", "between 14:00 and 16:00"} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("the tasks page has no %q:\n%s", want, page.body)
		}
	}
	for kind, id := range map[string]string{"action": waiting.String(), "callback": callback} {
		a := send(t, c, http.MethodPost, s.e.URL+"/console/tasks/"+kind+"/"+id+"/done", url.Values{"note": {"called, left a message"}})
		if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/tasks?done=1" {
			t.Fatalf("done %s: %d %v", kind, a.status, a.header)
		}
		if n := s.e.Count(`SELECT count(*) FROM follow_ups_done WHERE subject_id = $1 AND operator_name = 'Tess Task' AND note = 'called, left a message'`,
			uuid.MustParse(id)); n != 1 {
			t.Fatalf("the %s task is not done by Tess", kind)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE kind = 'follow_up_done' AND operator_name = 'Tess Task'`); n != 2 {
		t.Fatalf("%d follow-ups audited, want 2", n)
	}
	page = send(t, c, http.MethodGet, s.e.URL+"/console/tasks", nil)
	page.body = html.UnescapeString(page.body)
	open, _, _ := strings.Cut(page.body, `id="tasks-done"`)
	if strings.Contains(open, "calls Maria Lopez") || strings.Contains(open, "+15550100654") {
		t.Fatal("done tasks are still open")
	}
	if a := send(t, c, http.MethodPost, s.e.URL+"/console/tasks/callback/"+uuid.NewString()+"/done", url.Values{"note": {"x"}}); a.status != http.StatusNotFound {
		t.Fatalf("a missing task: %d", a.status)
	}
}

// Wrong passwords are slowed per account: the sixth in a row is 429 with
// Retry-After, and then even the right one is not checked.
func TestPasswordSignInIsThrottled(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Throttle Clinic", time.Hour)
	s.person(t, "Gus Guard", "gus@example.com", oncecall.RoleViewer, uuid.Nil)
	for i := range 5 {
		a := send(t, noRedirect(), http.MethodPost, s.e.URL+"/console/signin", url.Values{"email": {"gus@example.com"}, "password": {"guess number " + fmt.Sprint(i)}})
		if a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" {
			t.Fatalf("wrong password %d: %d", i+1, a.status)
		}
	}
	a := send(t, noRedirect(), http.MethodPost, s.e.URL+"/console/signin", url.Values{"email": {"gus@example.com"}, "password": {strongPassword}})
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" || a.header.Get("Set-Cookie") != "" {
		t.Fatalf("the right password after five wrong ones: %d %v", a.status, a.header)
	}
}

// Every new page escapes what people and callers typed (a tenant's,
// customer's and person's name, a note), the CSV export keeps a
// spreadsheet from reading a cell as a formula, and every new form refuses
// a post another origin makes the browser send, changing nothing.
func TestNewPagesEscapeAndNewFormsRefuseCrossOrigin(t *testing.T) {
	t.Parallel()
	const evil = `<img src=x onerror=alert(1)>`
	s := startStack(t, `<script>alert("tenant")</script>`, time.Millisecond)
	cust, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: s.tenant.ID, Name: evil, Phone: "+15550100888"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.stuckBookingFor(t, "xss-1", 1, cust.ID)
	s.reconcile(t)
	admin := s.person(t, `Ad<b>min</b>`, "admin@example.com", oncecall.RoleAdmin, uuid.Nil)
	c := s.signIn(t, "admin@example.com")
	if a := send(t, c, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/note", url.Values{"text": {`=HYPERLINK("http://evil.example") <script>alert(2)</script>`}}); a.status != http.StatusSeeOther {
		t.Fatalf("note: %d", a.status)
	}
	for _, path := range []string{"/console/", "/console/actions/" + id.String(), "/console/search?q=%2B15550100888", "/console/tasks",
		"/console/audit", "/console/staff", "/console/bulk?do=retry", "/console/search?q=" + url.QueryEscape(evil)} {
		a := send(t, c, http.MethodGet, s.e.URL+path, nil)
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, a.status)
		}
		for _, raw := range []string{"<script>alert", "<img src=x", "<b>min"} {
			if strings.Contains(a.body, raw) {
				t.Fatalf("GET %s shows %q unescaped", path, raw)
			}
		}
	}
	export := send(t, c, http.MethodGet, s.e.URL+"/console/audit.csv", nil)
	records, err := csv.NewReader(strings.NewReader(export.body)).ReadAll()
	if err != nil || len(records) < 3 {
		t.Fatalf("export: %v %d records", err, len(records))
	}
	for _, r := range records {
		for _, cell := range r {
			if cell != "" && strings.ContainsRune("=+-@", rune(cell[0])) {
				t.Fatalf("a CSV cell a spreadsheet reads as a formula: %q", cell)
			}
		}
	}

	before := s.e.Count(`SELECT count(*) FROM operator_audit`)
	forms := map[string]url.Values{
		"/console/actions/" + id.String() + "/retry":     {},
		"/console/actions/" + id.String() + "/note":      {"text": {"forged"}},
		"/console/tasks/action/" + id.String() + "/done": {"note": {"forged"}},
		"/console/bulk": {"do": {"resolve"}, "as_of": {time.Now().Format(time.RFC3339Nano)}, "count": {"9"}, "note": {"forged"}},
		"/console/staff/" + admin.String() + "/end-sessions": {},
		"/console/staff/" + admin.String() + "/disable":      {},
		"/console/signout": {},
		"/console/welcome": {"t": {"x"}, "password": {strongPassword}, "again": {strongPassword}},
		"/console/signin":  {"email": {"admin@example.com"}, "password": {strongPassword}},
	}
	for path, form := range forms {
		for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
			a := send(t, c, http.MethodPost, s.e.URL+path, form, h...)
			if a.status != http.StatusForbidden || !strings.Contains(a.body, "Cross-origin request refused") {
				t.Fatalf("cross-origin POST %s (%v): %d", path, h, a.status)
			}
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit`); n != before {
		t.Fatalf("cross-origin posts were audited: %d entries, %d before", n, before)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown' AND needs_operator`, id); n != 1 {
		t.Fatal("a cross-origin post changed the action")
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_sessions WHERE revoked_at IS NULL`); n != 1 {
		t.Fatal("a cross-origin post ended a session")
	}
}
