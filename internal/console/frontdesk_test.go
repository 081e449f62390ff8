package console_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// TestTheFrontDesksFirstDay is the front desk's first day, end to end, on
// the real binary started as `make run` starts it: a new tenant (a New
// York clinic booking in its Google Calendar, the fake as a process) gets
// its first admin with the command the banner prints; she signs in
// through the link in chromium, adds a colleague from the console, finds
// a caller by "(212) 555-0142", opens the booking whose answer Google
// Calendar lost (stuck: the calendar's reads lagged, so no check settled
// it), sees what the caller heard and where to look in Google Calendar,
// and resolves it with the event the form offers from Google Calendar;
// one event, the action confirmed with it, and her name in the audit trail.
func TestTheFrontDesksFirstDay(t *testing.T) {
	tab := browser(t)
	shoot := shooter(t, tab)
	google := calsimtest.Start(t, "google")
	key, err := calsimtest.GoogleKey(google.URL + "/token")
	if err != nil {
		t.Fatal(err)
	}
	s := serveLikeMakeRun(t, "CLINIC_GOOGLE_KEY="+string(key), "ONCECALL_RECONCILE_INTERVAL=100ms", "ONCECALL_STEP_BACKOFF=10ms",
		"ONCECALL_STEP_MAX_BACKOFF=50ms", "ONCECALL_CALENDAR_VISIBILITY_DELAY=1h", "ONCECALL_CALENDAR_TIMEOUT=5s")

	// The clinic: a tenant, a practitioner whose calendar is in Google
	// Calendar, a slot, a caller.
	var tenant struct {
		ID  string `json:"tenant_id"`
		Key string `json:"api_key"`
	}
	if err := json.Unmarshal([]byte(s.run(t, "tenant", "create", "--name", "Hudson Clinic", "--timezone", "America/New_York", "--json")), &tenant); err != nil {
		t.Fatal(err)
	}
	loc := resultID(t, post(t, s.url, tenant.Key, "loc", "/v1/locations", map[string]any{"name": "Midtown", "timezone": "America/New_York", "address": "1 Fifth Avenue"}))
	pr := resultID(t, post(t, s.url, tenant.Key, "pr", "/v1/practitioners", map[string]any{"name": "Dr. Patel", "location_ids": []string{loc}}))
	day := time.Now().UTC().AddDate(0, 0, 10)
	start := time.Date(day.Year(), day.Month(), day.Day(), 15, 0, 0, 0, time.UTC)
	slot := resultID(t, post(t, s.url, tenant.Key, "slot", "/v1/slots", map[string]any{"starts_at": start, "ends_at": start.Add(30 * time.Minute),
		"location_id": loc, "practitioner_id": pr}))
	lucy := resultID(t, post(t, s.url, tenant.Key, "lucy", "/v1/customers", map[string]any{"name": "Lucy Park", "phone": "+1 212 555 0142"}))
	s.run(t, "calendar", "connect", "--tenant", tenant.ID, "--provider", "google", "--credentials-env", "CLINIC_GOOGLE_KEY",
		"--base-url", google.URL+"/calendar/v3", "--map", "Dr. Patel=patel@hudson.example")

	// A caller books on a Dasha call; Google Calendar makes the event but
	// its answer is lost, and its reads lag behind, so no check settles it.
	google.Fault(simkit.Rule{Fault: "drop_response", Count: 1, On: "write"})
	google.Fault(simkit.Rule{Fault: "lookup_lag=1h", Count: 1000000, On: "read"})
	ans := post(t, s.url, tenant.Key, "", "/v1/dasha/tools/book_appointment", map[string]any{
		"type": "ToolWebHookPayload", "status": "Running", "callId": "call-lucy-1", "agentId": "agent-1", "orgId": "org-1",
		"toolName": "book_appointment", "arguments": map[string]any{"customer_id": lucy, "slot_id": slot, "service": "Cleaning"},
		"callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{}})
	action := fmt.Sprint(ans["action_id"])
	if ans["outcome"] != "pending" {
		t.Fatalf("the booking whose answer was lost: %v; want pending", ans)
	}
	conn, err := pgx.Connect(t.Context(), s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(t.Context()) })
	count := func(q string, args ...any) (n int) {
		t.Helper()
		if err := conn.QueryRow(t.Context(), q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	waitUntil(t, "the reconciler to give the booking to a person", 2*time.Minute, func() bool {
		return count(`SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state = 'unknown'`, action) == 1
	})
	google.ClearFaults() // the calendar's reads catch up; the booking waits for a person all the same

	// Her first admin, added with the command the banner prints.
	line := s.printed(t, "operator add")
	words := shellWords(line[strings.Index(line, "operator add"):])
	words = append(words[:2], "--name", "Nia Admin", "--email", "nia@hudson.example", "--role", "admin", "--base-url", s.url)
	link := linkPattern.FindString(s.run(t, words...))
	if link == "" {
		t.Fatal("operator add printed no sign-in link")
	}
	do(t, tab, "open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("welcome")))
	do(t, tab, "choose a password", chromedp.SendKeys(chromedp.ID("password"), "copper lantern meadow tuba"),
		chromedp.SendKeys(chromedp.ID("again"), "copper lantern meadow tuba"),
		chromedp.Click(chromedp.CSS(`#welcome button`)), chromedp.WaitVisible(chromedp.ID("queue")))
	if who := text(t, tab, "#who"); who != "Nia Admin" {
		t.Fatalf("signed in as %q", who)
	}
	shoot("frontdesk-queue")

	// She adds a colleague from the console.
	do(t, tab, "add a colleague", chromedp.Navigate(s.url+"/console/staff"), chromedp.WaitVisible(chromedp.ID("add")),
		chromedp.SendKeys(chromedp.ID("add-name"), "Ben Okafor"), chromedp.SendKeys(chromedp.ID("add-email"), "ben@hudson.example"),
		chromedp.SetValue(chromedp.ID("add-role"), "resolver"), chromedp.SetValue(chromedp.ID("add-tenant"), tenant.ID),
		chromedp.Click(chromedp.ID("add-submit")), chromedp.WaitVisible(chromedp.ID("new-link")))
	if l, err := chromedp.Run(tab, chromedp.Value(chromedp.ID("link"))); err != nil || !strings.HasPrefix(l, s.url+"/console/welcome?t=") {
		t.Fatalf("the colleague's link: %q %v", l, err)
	}
	if count(`SELECT count(*) FROM operators WHERE email = 'ben@hudson.example' AND role = 'resolver' AND tenant_id = $1`, tenant.ID) != 1 ||
		count(`SELECT count(*) FROM operator_audit WHERE kind = 'person_added' AND operator_name = 'Nia Admin'`) != 1 {
		t.Fatal("the colleague is not on the staff, or adding him is not audited under her name")
	}
	shoot("frontdesk-staff")

	// She finds the caller by the number as she writes it.
	row := chromedp.CSS(fmt.Sprintf(`tr[data-action="%s"]`, action))
	do(t, tab, "find the caller", chromedp.Navigate(s.url+"/console/search"), chromedp.WaitVisible(chromedp.ID("search")),
		chromedp.SendKeys(chromedp.ID("q"), "(212) 555-0142"), chromedp.Click(chromedp.CSS(`#search button`)),
		chromedp.WaitVisible(chromedp.ID("by-customer")), chromedp.WaitVisible(row))
	if r := text(t, tab, fmt.Sprintf(`tr[data-action="%s"]`, action)); !strings.Contains(r, "Lucy Park") {
		t.Fatalf("the search's row: %q", r)
	}
	shoot("frontdesk-search")

	// The stuck booking: what the caller heard, and where to look in
	// Google Calendar.
	do(t, tab, "open the booking", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/console/actions/%s"]`, action))),
		chromedp.WaitVisible(chromedp.ID("resolve")))
	if heard := text(t, tab, "#heard"); !strings.Contains(heard, "Dasha") || !strings.Contains(heard, "call-lucy-1") || !strings.Contains(heard, "NOT confirmed") {
		t.Fatalf("what the caller heard: %q", heard)
	}
	if who := text(t, tab, "#person"); !strings.Contains(who, "(212) 555-0142") {
		t.Fatalf("who: %q", who)
	}
	look := text(t, tab, "#look")
	for _, want := range []string{"Search Google Calendar for", "Cleaning — Lucy Park", "10:00 AM", "America/New_York", "Dr. Patel"} {
		if !strings.Contains(look, want) {
			t.Fatalf("where to look does not say %q: %q", want, look)
		}
	}
	shoot("frontdesk-action")
	events, err := calsimtest.Events(t.Context(), "google", google.URL)
	if err != nil {
		t.Fatal(err)
	}
	live := calsimtest.LiveOf(events, action)
	if len(live) != 1 {
		t.Fatalf("Google Calendar holds %d events of the booking, want 1", len(live))
	}
	// The resolve form offers the event Google Calendar holds at that time,
	// marked as the one oncecall wrote for this booking: she picks it.
	if found := text(t, tab, "#found"); !strings.Contains(found, live[0].ID) || !strings.Contains(found, "written by oncecall for this booking") {
		t.Fatalf("the resolve form does not offer the event found at that time: %q", found)
	}
	do(t, tab, "resolve it with the event found", chromedp.Click(chromedp.ID("confirmed")),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input.found-event[value="%s"]`, live[0].ID))),
		chromedp.SendKeys(chromedp.ID("note"), "found Cleaning — Lucy Park in Dr. Patel's Google Calendar"),
		chromedp.Click(chromedp.ID("resolve-submit")), chromedp.WaitVisible(chromedp.ID("notice")))
	if now := text(t, tab, "#now"); now != "confirmed" {
		t.Fatalf("now: %q", now)
	}
	if c := text(t, tab, "#call-them"); !strings.Contains(c, "tell them") {
		t.Fatalf("the page does not say to tell the caller: %q", c)
	}
	shoot("frontdesk-resolved")
	if count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed' AND outcome = 'confirmed' AND NOT needs_operator`, action) != 1 ||
		count(`SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active' AND event_id = $2`, action, live[0].ID) != 1 ||
		count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_name = 'Nia Admin'`, action) != 1 {
		t.Fatal("the booking is not confirmed with its event, or the resolution is not audited under her name")
	}
	if events, err = calsimtest.Events(t.Context(), "google", google.URL); err != nil || len(calsimtest.LiveOf(events, action)) != 1 {
		t.Fatalf("Google Calendar holds %d events of the booking after the resolution, want 1 (%v)", len(calsimtest.LiveOf(events, action)), err)
	}
}
