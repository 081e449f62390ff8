package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/provider"
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

// TestConsoleInABrowser drives the console in chromium as an operator
// would: a wrong token is refused; sign in; the queue shows a booking left
// unknown by a real provider fault (the simulator dropped its answer) and
// picks up a second one without reloading; the action page shows the step
// with its provider key; confirming without a reference is refused and
// changes nothing; while someone holds an action the console says so; a
// resolution with the provider's reference settles the action, which
// leaves the queue; search finds an action by its idempotency key and by
// the key_hash of the logs; a cross-site form post is refused; sign out.
func TestConsoleInABrowser(t *testing.T) {
	tab := browser(t)
	shoot := shooter(t, tab)
	// The calendar forgets keys at once, so the reconciler cannot prove
	// what became of the first booking and sends it to an operator.
	s := startStack(t, "Riverside Clinic", time.Millisecond)
	first := s.stuckBooking(t, "console-book-1", 1)
	s.reconcile(t)
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state = 'unknown'`, first); n != 1 {
		t.Fatal("the reconciler did not send the booking to an operator")
	}
	base := s.e.URL + "/console/"

	// Signed out, the console sends the browser to sign in.
	do(t, tab, "open the console", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signin")))
	shoot("signin")
	do(t, tab, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.ID("name"), "Ana"), chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#signin button`)), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "not the operator token") {
		t.Fatalf("wrong token: %q", msg)
	}
	if loc, _ := chromedp.Run(tab, chromedp.Location()); !strings.HasSuffix(loc, "/console/signin") {
		t.Fatalf("after a wrong token the browser is at %s", loc)
	}
	if name, err := chromedp.Run(tab, chromedp.Value(chromedp.ID("name"))); err != nil || name != "Ana" {
		t.Fatalf("the sign-in form lost the name: %q %v", name, err)
	}
	do(t, tab, "sign in", chromedp.SendKeys(chromedp.ID("token"), operatorToken),
		chromedp.Click(chromedp.CSS(`#signin button`)), chromedp.WaitVisible(chromedp.ID("queue")))
	if who := text(t, tab, "#who"); who != "Ana" {
		t.Fatalf("signed in as %q", who)
	}
	row := func(id uuid.UUID) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`tr[data-action="%s"]`, id)) }
	do(t, tab, "the stuck booking in the queue", chromedp.WaitVisible(row(first)))
	if n := text(t, tab, `[data-count="needs_operator"]`); n != "1" {
		t.Fatalf("needs_operator count %q, want 1", n)
	}

	// The queue refreshes itself: a second stuck booking appears without
	// a reload (the marker set in the page survives).
	do(t, tab, "mark the page", chromedp.Evaluate[chromedp.Void](`window.consoleMarker = 42`))
	second := s.stuckBooking(t, "console-book-2", 2)
	do(t, tab, "the queue picks up the second booking", chromedp.WaitVisible(row(second)))
	if m, err := chromedp.Run(tab, chromedp.Evaluate[int](`window.consoleMarker || 0`)); err != nil || m != 42 {
		t.Fatalf("the queue reloaded the page to refresh: marker %d %v", m, err)
	}
	if n := text(t, tab, `[data-count="unknown"]`); n != "1" {
		t.Fatalf("unknown count after refresh %q, want 1", n)
	}
	shoot("queue")

	// The action page: the step with its provider key, the timeline.
	pkey := s.providerKey(t, first)
	do(t, tab, "open the first booking",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/console/actions/%s"]`, first))), chromedp.WaitVisible(chromedp.ID("resolve")))
	if steps := text(t, tab, "#steps"); !strings.Contains(steps, pkey) || !strings.Contains(steps, "unknown") {
		t.Fatalf("steps without the provider key %s or the unknown state:\n%s", pkey, steps)
	}
	if tl := text(t, tab, "#timeline"); !strings.Contains(tl, "claimed") || !strings.Contains(tl, "sent:ambiguous") {
		t.Fatalf("timeline:\n%s", tl)
	}
	if ev := text(t, tab, "#evidence"); !strings.Contains(ev, "needs_operator") {
		t.Fatalf("the reconciler's evidence:\n%s", ev)
	}
	shoot("action")

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
	if n := s.e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'`, first); n != 0 {
		t.Fatal("a refused resolution was recorded")
	}
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
	if n := s.e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'
		AND detail->>'by' = 'Ana' AND detail->>'provider_ref' = $2 AND detail->>'evidence' = 'booking found in the calendar admin'`, first, ref); n != 1 {
		t.Fatal("the resolution is not in the timeline with who and the evidence")
	}
	if n := len(s.sim.Ledger(provider.Calendar)); n != 2 {
		t.Fatalf("calendar ledger holds %d writes, want 2 (one per booking)", n)
	}

	// The resolved booking has left the queue; the other is still there.
	do(t, tab, "back to the queue", chromedp.Navigate(base), chromedp.WaitVisible(row(second)))
	if html := text(t, tab, "#queue"); strings.Contains(html, first.String()) {
		t.Fatalf("the resolved action is still in the queue:\n%s", html)
	}

	// Search by idempotency key, then by the key_hash the logs print.
	do(t, tab, "search by idempotency key",
		chromedp.Navigate(base+"search"), chromedp.WaitVisible(chromedp.ID("search")),
		chromedp.SendKeys(chromedp.ID("q"), "console-book-2"), chromedp.Click(chromedp.CSS(`#search button`)),
		chromedp.WaitVisible(row(second)))
	shoot("search")
	do(t, tab, "search by key hash",
		chromedp.Navigate(base+"search?q="+idem.KeyHash("console-book-1")), chromedp.WaitVisible(row(first)))

	// A page of another origin posts a resolution with the operator's
	// session: refused, and the action stays unknown.
	evil := crossSiteForm(t, s.e.URL+"/console/actions/"+second.String()+"/resolve")
	do(t, tab, "cross-site post", chromedp.Navigate(evil), chromedp.WaitVisible(chromedp.ID("error")))
	if msg := text(t, tab, "#error"); !strings.Contains(msg, "Cross-origin request refused") {
		t.Fatalf("cross-site post: %q", msg)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, second); n != 1 {
		t.Fatal("a cross-site post changed the action")
	}

	// Sign out: the console is closed to the browser again.
	do(t, tab, "sign out", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signout")),
		chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
	do(t, tab, "the queue after signing out", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("signin")))
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
