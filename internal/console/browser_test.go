package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// chromium finds Debian's chromium. Outside CI a machine without it skips
// the browser tests with the reason; in CI (CI=true) that is a failure:
// .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the console's browser test needs chromium on PATH or at /usr/bin/chromium (Debian: apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipped outside CI")
	return ""
}

// browser starts a headless chromium with a fresh profile; the returned
// context is a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 1000),
	)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	return tab
}

// shooter writes a PNG of the page when ONCECALL_SCREENSHOTS names a
// folder (make screenshots); otherwise it does nothing.
func shooter(t *testing.T, tab context.Context) func(name string) {
	dir := os.Getenv("ONCECALL_SCREENSHOTS")
	return func(name string) {
		t.Helper()
		if dir == "" {
			return
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		html, _ := chromedp.Run(tab, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// clinicBooking books Maria Lopez with Dr. Patel at Riverside (London)
// while the simulator drops the calendar's answer, as a Vapi call's tool
// call would: the page then has a person, a time, a place and a platform.
func (s *stack) clinicBooking(t *testing.T, customer uuid.UUID, n int) uuid.UUID {
	t.Helper()
	loc := s.e.Post("/v1/locations", s.key, fmt.Sprintf("loc-%d", n), map[string]any{
		"name": fmt.Sprintf("Riverside %d", n), "timezone": "Europe/London", "address": "12 High Street, Leeds"})
	if loc.Status != http.StatusCreated {
		t.Fatalf("location: %d %s", loc.Status, loc.Body)
	}
	locID := loc.JSON(t)["result"].(map[string]any)["id"]
	pr := s.e.Post("/v1/practitioners", s.key, fmt.Sprintf("pr-%d", n), map[string]any{"name": fmt.Sprintf("Dr. Patel %d", n), "location_ids": []any{locID}})
	if pr.Status != http.StatusCreated {
		t.Fatalf("practitioner: %d %s", pr.Status, pr.Body)
	}
	start := time.Now().UTC().Truncate(time.Hour).Add(time.Duration(48+n) * time.Hour)
	sl := s.e.Post("/v1/slots", s.key, fmt.Sprintf("slot-%d", n), map[string]any{
		"starts_at": start.Format(time.RFC3339), "ends_at": start.Add(30 * time.Minute).Format(time.RFC3339),
		"location_id": locID, "practitioner_id": pr.JSON(t)["result"].(map[string]any)["id"]})
	if sl.Status != http.StatusCreated {
		t.Fatalf("slot: %d %s", sl.Status, sl.Body)
	}
	s.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	body := fmt.Sprintf(`{"message":{"type":"tool-calls","call":{"id":"vapi-call-%d"},"toolCallList":[{"id":"t1","function":`+
		`{"name":"book_appointment","arguments":{"customer_id":"%s","slot_id":"%s","service":"Cleaning"}}}]}}`,
		n, customer, sl.JSON(t)["result"].(map[string]any)["id"])
	if r := s.e.Post("/v1/vapi/webhook", s.key, "", body); r.Status != http.StatusOK {
		t.Fatalf("vapi tool call: %d %s", r.Status, r.Body)
	}
	var id uuid.UUID
	if err := s.e.Store.Pool().QueryRow(t.Context(), `SELECT id FROM actions WHERE call_id = $1`, fmt.Sprintf("vapi-call-%d", n)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// sessionCookie is the browser's console cookie, as a Cookie header.
func sessionCookie(t *testing.T, tab context.Context, base string) string {
	t.Helper()
	var res network.GetCookiesResult
	if err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		return tg.Call(ctx, "Network.getCookies", network.GetCookiesParams{URLs: []string{base}}, &res)
	})); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "oncecall_console" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatal("the browser has no session cookie")
	return ""
}

// submitForm makes the page post a form of its own origin (what a person
// would do with the page's own controls, were they shown to them).
func submitForm(action string, fields map[string]string) chromedp.Action[chromedp.Void] {
	js := `(function(){var f=document.createElement("form");f.method="post";f.action=` + strconv.Quote(action) + `;`
	for k, v := range fields {
		js += `var i=document.createElement("input");i.name=` + strconv.Quote(k) + `;i.value=` + strconv.Quote(v) + `;f.appendChild(i);`
	}
	js += `document.body.appendChild(f);f.submit();})()`
	return chromedp.Evaluate[chromedp.Void](js)
}

func signInAs(t *testing.T, tab context.Context, base, email string) {
	t.Helper()
	do(t, tab, "sign in as "+email, chromedp.Navigate(base+"signin"), chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.SendKeys(chromedp.ID("email"), email), chromedp.SendKeys(chromedp.ID("password"), strongPassword),
		chromedp.Click(chromedp.CSS(`#signin button`)), chromedp.WaitVisible(chromedp.ID("who")))
}

func signOut(t *testing.T, tab context.Context, base string) {
	t.Helper()
	do(t, tab, "sign out", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signout")),
		chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
}

// TestConsoleInABrowser drives the console in chromium as the front desk
// would: a wrong password is refused and guessing is slowed; a resolver
// signs in; the queue names the customer and picks up a second booking
// without reloading; the action's page says who (a link to call), what was
// asked (the local time, practitioner, place), what the caller is told,
// what is unknown and where to look, and sums the evidence up; confirming
// without a reference is refused; while someone holds the action the
// console says so; a resolution settles it and names the person, on the
// page and in the audit trail; search finds the customer's operations by
// her phone; a filtered set is resolved in bulk after its dry-run count;
// a follow-up call is marked done; a cross-site post is refused; signing
// out ends the session, so a copy of its cookie is refused; a viewer is
// refused a resolution; a person of one tenant is refused another's
// action; a break-glass session says so; a person signs in through the
// clinic's identity provider.
func TestConsoleInABrowser(t *testing.T) {
	tab := browser(t)
	shoot := shooter(t, tab)
	p := startIDP(t)
	addr := freeAddr(t)
	// The calendar forgets keys at once, so the reconciler cannot prove
	// what became of a booking and sends it to a person.
	s := startStackWith(t, "Riverside Clinic", time.Millisecond, withOIDC(p, addr))
	zone := "Europe/London"
	if _, _, err := s.e.Store.UpdateTenantClock(t.Context(), s.tenant.ID, db.ClockChange{Timezone: &zone}); err != nil {
		t.Fatal(err)
	}
	maria, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: s.tenant.ID, Name: "Maria Lopez", Phone: "+447700900123", Email: "maria@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	first := s.clinicBooking(t, maria.ID, 1)
	s.reconcile(t)
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state = 'unknown'`, first); n != 1 {
		t.Fatal("the reconciler did not send the booking to a person")
	}
	other, otherKey := s.e.Tenant("Harbour Dental")
	theirs := s.stuckFor(t, other.ID, otherKey, "browser-other", 5, s.e.Customer(other.ID))
	s.person(t, "Ana Ruiz", "ana@example.com", oncecall.RoleResolver, s.tenant.ID)
	s.person(t, "Vic Viewer", "vic@example.com", oncecall.RoleViewer, uuid.Nil)
	s.person(t, "Nia Nurse", "nia@clinic.example", oncecall.RoleAdmin, uuid.Nil)
	base := s.e.URL + "/console/"

	// Signed out, the console sends the browser to sign in.
	do(t, tab, "open the console", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signin")))
	shoot("signin")
	do(t, tab, "sign in with a wrong password",
		chromedp.SendKeys(chromedp.ID("email"), "ana@example.com"), chromedp.SendKeys(chromedp.ID("password"), "not her password"),
		chromedp.Click(chromedp.CSS(`#signin button`)), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "Wrong e-mail address or password") {
		t.Fatalf("wrong password: %q", msg)
	}
	signInAs(t, tab, base, "ana@example.com")
	if who := text(t, tab, "#who"); who != "Ana Ruiz" {
		t.Fatalf("signed in as %q", who)
	}
	row := func(id uuid.UUID) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`tr[data-action="%s"]`, id)) }
	do(t, tab, "the stuck booking in the queue", chromedp.WaitVisible(row(first)))
	if r := text(t, tab, fmt.Sprintf(`tr[data-action="%s"]`, first)); !strings.Contains(r, "Maria Lopez") || !strings.Contains(r, "Booking") || !strings.Contains(r, "Vapi") {
		t.Fatalf("the queue's row: %q", r)
	}
	if q := text(t, tab, "#queue"); strings.Contains(q, theirs.String()) || strings.Contains(q, "Harbour") {
		t.Fatal("a person of one tenant sees another's action in the queue")
	}

	// The queue refreshes itself: a second stuck booking appears without
	// a reload (the marker set in the page survives).
	do(t, tab, "mark the page", chromedp.Evaluate[chromedp.Void](`window.consoleMarker = 42`))
	second := s.stuckBookingFor(t, "console-book-2", 2, maria.ID)
	do(t, tab, "the queue picks up the second booking", chromedp.WaitVisible(row(second)))
	if m, err := chromedp.Run(tab, chromedp.Evaluate[int](`window.consoleMarker || 0`)); err != nil || m != 42 {
		t.Fatalf("the queue reloaded the page to refresh: marker %d %v", m, err)
	}
	shoot("queue")

	// The action in words.
	pkey := s.providerKey(t, first)
	do(t, tab, "open the first booking",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/console/actions/%s"]`, first))), chromedp.WaitVisible(chromedp.ID("resolve")))
	if who := text(t, tab, "#person"); !strings.Contains(who, "Maria Lopez") || !strings.Contains(who, "07700 900123") {
		t.Fatalf("who: %q", who)
	}
	if href, err := chromedp.Run(tab, chromedp.JavascriptAttribute[string](chromedp.ID("call"), "href")); err != nil || href != "tel:+447700900123" {
		t.Fatalf("the link to call her: %q %v", href, err)
	}
	asked := text(t, tab, "#asked")
	for _, want := range []string{"Dr. Patel 1", "Riverside 1", "12 High Street", "Europe/London", "Cleaning"} {
		if !strings.Contains(asked, want) {
			t.Fatalf("what was asked has no %q:\n%s", want, asked)
		}
	}
	if strings.Contains(asked, "UTC") {
		t.Fatalf("what was asked shows a UTC time:\n%s", asked)
	}
	if p := text(t, tab, "#platform"); p != "Vapi" {
		t.Fatalf("platform %q", p)
	}
	if say := text(t, tab, "#say"); !strings.Contains(say, "NOT confirmed") {
		t.Fatalf("what the caller is told: %q", say)
	}
	if look := text(t, tab, "#look"); !strings.Contains(look, pkey) || !strings.Contains(look, "Maria Lopez") || !strings.Contains(look, "Dr. Patel 1") {
		t.Fatalf("where to look: %q", look)
	}
	if steps := text(t, tab, "#steps"); !strings.Contains(steps, pkey) || !strings.Contains(steps, "outcome not known") {
		t.Fatalf("steps without the provider key %s or the unknown state:\n%s", pkey, steps)
	}
	if ev := text(t, tab, "#evidence"); !strings.Contains(ev, "went to a person") {
		t.Fatalf("the evidence in words:\n%s", ev)
	}
	for _, sel := range []string{"main > .subtitle", "#steps", "#evidence"} {
		if strings.Contains(text(t, tab, sel), "UTC") {
			t.Fatalf("%s shows a UTC time where the tenant's clock is London's:\n%s", sel, text(t, tab, sel))
		}
	}
	shoot("action")
	// At 1280 px nothing on the page scrolls sideways, nor the steps table in its box.
	do(t, tab, "a 1280 px wide window", chromedp.EmulateViewport(1280, 1000))
	if wide, err := chromedp.Run(tab, chromedp.Evaluate[bool](`[document.documentElement, ...document.querySelectorAll(".scroll")].some(e => e.scrollWidth > e.clientWidth + 1)`)); err != nil || wide {
		t.Fatalf("the action's page scrolls sideways at 1280 px (%v)", err)
	}
	do(t, tab, "the window as it was", chromedp.EmulateViewport(1360, 1000))
	do(t, tab, "open the timeline", chromedp.Click(chromedp.CSS(`#more summary`)), chromedp.WaitVisible(chromedp.ID("timeline")))
	if tl := text(t, tab, "#timeline"); !strings.Contains(tl, "claimed") || !strings.Contains(tl, "sent:ambiguous") {
		t.Fatalf("timeline:\n%s", tl)
	}

	// Confirming without the provider's reference is refused; nothing changes.
	do(t, tab, "confirm without a reference",
		chromedp.Click(chromedp.ID("confirmed")), chromedp.SendKeys(chromedp.ID("note"), "found in the calendar admin"),
		chromedp.Click(chromedp.ID("resolve-submit")), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "provider_ref") {
		t.Fatalf("confirm without a reference: %q", msg)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown' AND needs_operator`, first); n != 1 {
		t.Fatal("a refused resolution changed the action")
	}

	// While someone holds the action, the console says so and changes nothing.
	ref := s.ledgerRef(t, pkey)
	held, err := s.e.Store.TakeLease(t.Context(), first, uuid.New(), time.Minute)
	if err != nil || !held {
		t.Fatalf("hold the action: %v %v", held, err)
	}
	do(t, tab, "resolve a held action",
		chromedp.Navigate(base+"actions/"+first.String()), chromedp.WaitVisible(chromedp.ID("held")),
		chromedp.Click(chromedp.ID("confirmed")), chromedp.SendKeys(chromedp.ID("provider_ref"), ref),
		chromedp.SendKeys(chromedp.ID("note"), "found in the calendar admin"),
		chromedp.Click(chromedp.ID("resolve-submit")), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "Someone is working on it") || !strings.Contains(msg, "Look again") {
		t.Fatalf("held action: %q", msg)
	}
	shoot("in-flight")
	if _, err := s.e.Store.Pool().Exec(t.Context(), `UPDATE actions SET lease_owner = NULL, lease_until = NULL WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}

	// Confirm with the provider's reference from the simulator's ledger.
	do(t, tab, "confirm with the provider's reference",
		chromedp.Navigate(base+"actions/"+first.String()), chromedp.WaitVisible(chromedp.ID("resolve")),
		chromedp.Click(chromedp.ID("confirmed")), chromedp.SendKeys(chromedp.ID("provider_ref"), ref),
		chromedp.SendKeys(chromedp.ID("note"), "booking found in the calendar admin"),
		chromedp.Click(chromedp.ID("resolve-submit")), chromedp.WaitVisible(chromedp.ID("notice")))
	if msg := text(t, tab, "#outcome"); msg != "confirmed" {
		t.Fatalf("outcome on the page after resolving: %q", msg)
	}
	if a := text(t, tab, "#action-audit"); !strings.Contains(a, "Ana Ruiz") || !strings.Contains(a, "resolved an action") {
		t.Fatalf("the action's page does not name who resolved it:\n%s", a)
	}
	shoot("resolved")
	// The appointment's id is the booking action's; the provider's
	// reference is its event.
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed' AND outcome = 'confirmed'
		AND resource_id = $1::text AND NOT needs_operator`, first); n != 1 {
		t.Fatal("the action is not confirmed with the appointment's id")
	}
	if n := s.e.Count(`SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active' AND event_id = $2`, first, ref); n != 1 {
		t.Fatal("the appointment is not recorded with the provider's reference")
	}
	if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_name = 'Ana Ruiz'`, first); n != 1 {
		t.Fatal("the resolution is not in the audit trail under the signed-in person")
	}

	// Search by her phone, as a person types it: her operations.
	do(t, tab, "search by phone",
		chromedp.Navigate(base+"search"), chromedp.WaitVisible(chromedp.ID("search")),
		chromedp.SendKeys(chromedp.ID("q"), "+44 7700 900123"), chromedp.Click(chromedp.CSS(`#search button`)),
		chromedp.WaitVisible(chromedp.ID("by-customer")))
	if r := text(t, tab, "#by-customer"); !strings.Contains(r, "Maria Lopez") {
		t.Fatalf("her operations: %q", r)
	}
	do(t, tab, "both bookings of hers", chromedp.WaitVisible(row(first)), chromedp.WaitVisible(row(second)))
	shoot("search")
	do(t, tab, "search by key hash",
		chromedp.Navigate(base+"search?q="+idem.KeyHash("console-book-2")), chromedp.WaitVisible(row(second)))

	// Bulk: the filtered set (this tenant, waiting for a person) after its
	// dry-run count.
	third := s.stuckBooking(t, "console-book-3", 3)
	s.reconcile(t)
	do(t, tab, "dry run of a bulk resolve",
		chromedp.Navigate(base+"?state=needs_operator"), chromedp.WaitVisible(chromedp.ID("bulk-resolve")),
		chromedp.Click(chromedp.ID("bulk-resolve")), chromedp.WaitVisible(chromedp.ID("bulk-count")))
	if n := text(t, tab, "#bulk-count"); n != "2" {
		t.Fatalf("dry-run count %q, want 2 (the second and third bookings)", n)
	}
	shoot("bulk")
	do(t, tab, "bulk resolve", chromedp.SendKeys(chromedp.ID("bulk-note"), "test bookings: no such appointments"),
		chromedp.Click(chromedp.ID("bulk-submit")), chromedp.WaitVisible(chromedp.ID("bulk-done")))
	if n := text(t, tab, "#bulk-acted"); n != "2" {
		t.Fatalf("bulk resolved %q, want 2", n)
	}
	for _, id := range []uuid.UUID{second, third} {
		if n := s.e.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_name = 'Ana Ruiz' AND detail->>'bulk' <> ''`, id); n != 1 {
			t.Fatalf("%s was not resolved in bulk under Ana's name", id)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, theirs); n != 1 {
		t.Fatal("the bulk run touched another tenant's action")
	}

	// A follow-up call: the caller of the second booking was told a
	// person would follow up.
	r := s.e.Post("/v1/callbacks", s.key, "browser-callback", map[string]any{"customer_id": maria.ID,
		"window_start": time.Now().Add(24*time.Hour).Format("2006-01-02") + "T10:00", "window_end": time.Now().Add(24*time.Hour).Format("2006-01-02") + "T12:00",
		"reason": "the new date of her cleaning"})
	if r.Status != http.StatusCreated {
		t.Fatalf("callback: %d %s", r.Status, r.Body)
	}
	callback := r.JSON(t)["result"].(map[string]any)["id"].(string)
	do(t, tab, "the follow-up calls", chromedp.Navigate(base+"tasks"), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-task="%s"]`, callback))))
	if task := text(t, tab, fmt.Sprintf(`tr[data-task="%s"]`, callback)); !strings.Contains(task, "calls Maria Lopez") || !strings.Contains(task, "10:00") {
		t.Fatalf("the callback task: %q", task)
	}
	shoot("tasks")
	do(t, tab, "mark the call done",
		chromedp.SendKeys(chromedp.CSS(fmt.Sprintf(`tr[data-task="%s"] input[name=note]`, callback)), "called her, she chose Friday"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-task="%s"] button`, callback))), chromedp.WaitVisible(chromedp.ID("notice")))
	if done := text(t, tab, "#tasks-done"); !strings.Contains(done, "Ana Ruiz") || !strings.Contains(done, "called her, she chose Friday") {
		t.Fatalf("done calls: %q", done)
	}

	// The audit page names her.
	do(t, tab, "the audit trail", chromedp.Navigate(base+"audit"), chromedp.WaitVisible(chromedp.ID("audit")))
	if a := text(t, tab, "#audit"); !strings.Contains(a, "Ana Ruiz") || !strings.Contains(a, "resolved an action") || !strings.Contains(a, "marked a follow-up call done") {
		t.Fatalf("the audit page:\n%s", a)
	}
	shoot("audit")

	// Another tenant's action is no such action for her.
	do(t, tab, "another tenant's action", chromedp.Navigate(base+"actions/"+theirs.String()), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "No such action") {
		t.Fatalf("another tenant's action: %q", msg)
	}
	do(t, tab, "post to another tenant's action", submitForm("/console/actions/"+theirs.String()+"/resolve",
		map[string]string{"outcome": "rejected", "note": "not mine"}), chromedp.WaitVisible(chromedp.ID("error")))
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, theirs); n != 1 {
		t.Fatal("a person of another tenant resolved the action")
	}

	// A page of another origin posts a rejection with her session:
	// refused, and the action stays as it is.
	evil := crossSiteForm(t, s.e.URL+"/console/actions/"+theirs.String()+"/resolve")
	do(t, tab, "cross-site post", chromedp.Navigate(evil), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "Cross-origin request refused") {
		t.Fatalf("cross-site post: %q", msg)
	}

	// Sign out: the session ends, and a copy of its cookie is refused.
	copied := sessionCookie(t, tab, base)
	signOut(t, tab, base)
	do(t, tab, "the queue after signing out", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signin")))
	if a := send(t, noRedirect(), http.MethodGet, base, nil, "Cookie", copied); a.status != http.StatusSeeOther {
		t.Fatalf("the copied cookie after signing out: %d", a.status)
	}

	// A viewer reads but is refused a resolution.
	signInAs(t, tab, base, "vic@example.com")
	do(t, tab, "a viewer's action page", chromedp.Navigate(base+"actions/"+theirs.String()), chromedp.WaitVisible(chromedp.ID("title")))
	if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#resolve").length`)); err != nil || n != 0 {
		t.Fatalf("a viewer is shown the resolve form: %d %v", n, err)
	}
	do(t, tab, "a viewer posts a resolution", submitForm("/console/actions/"+theirs.String()+"/resolve",
		map[string]string{"outcome": "rejected", "note": "viewer"}), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "does not allow") {
		t.Fatalf("a viewer's resolution: %q", msg)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, theirs); n != 1 {
		t.Fatal("a viewer resolved the action")
	}
	signOut(t, tab, base)

	// Guessing a password is slowed.
	for i := range 6 {
		do(t, tab, "a wrong password", chromedp.Navigate(base+"signin"), chromedp.WaitVisible(chromedp.ID("signin")),
			chromedp.SendKeys(chromedp.ID("email"), "vic@example.com"), chromedp.SendKeys(chromedp.ID("password"), fmt.Sprintf("guess %d of many", i)),
			chromedp.Click(chromedp.CSS(`#signin button`)), chromedp.WaitVisible(chromedp.ID("error")))
	}
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "Too many wrong sign-ins") {
		t.Fatalf("the sixth wrong password: %q", msg)
	}

	// Break-glass: the banner says so.
	do(t, tab, "break-glass sign-in", chromedp.Navigate(base+"signin"), chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.Click(chromedp.CSS(`.breakglass-form summary`)), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("name"), "Dee"), chromedp.SendKeys(chromedp.ID("token"), operatorToken),
		chromedp.Click(chromedp.CSS(`#breakglass-signin button`)), chromedp.WaitVisible(chromedp.ID("breakglass")))
	if who := text(t, tab, "#who"); who != "Dee (break-glass)" {
		t.Fatalf("break-glass: %q", who)
	}
	signOut(t, tab, base)

	// Through the clinic's identity provider.
	p.signsIn(map[string]any{"email": "nia@clinic.example", "email_verified": true})
	do(t, tab, "sign in through the identity provider", chromedp.Navigate(base+"signin"), chromedp.WaitVisible(chromedp.ID("oidc")),
		chromedp.Click(chromedp.ID("oidc")), chromedp.WaitVisible(chromedp.ID("queue")))
	if who := text(t, tab, "#who"); who != "Nia Nurse" {
		t.Fatalf("signed in through the identity provider as %q", who)
	}
	do(t, tab, "the staff page", chromedp.Navigate(base+"staff"), chromedp.WaitVisible(chromedp.ID("staff")))
	shoot("staff")
}

// crossSiteForm serves, from another origin, a page whose form posts a
// rejection to target as soon as it loads, and returns the page's URL.
func crossSiteForm(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s">
<input name="outcome" value="rejected"><input name="note" value="forged"></form>
<script>document.getElementById("f").submit()</script>`, target)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends at cleanup
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}
