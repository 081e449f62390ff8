package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, c *http.Client, method, u string, form url.Values, headers ...string) answer {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestBreakGlassNeedsAnOperatorToken: without a token the console serves
// its sign-in page (named staff sign in), but a sign-in with a token is
// refused, and /v1/ops does not exist.
func TestBreakGlassNeedsAnOperatorToken(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t)
	if a := send(t, noRedirect(), http.MethodGet, e.URL+"/console/signin", nil); a.status != http.StatusOK || strings.Contains(a.body, "breakglass-signin") {
		t.Fatalf("the sign-in page without an operator token: %d", a.status)
	}
	a := send(t, noRedirect(), http.MethodPost, e.URL+"/console/signin", url.Values{"how": {"token"}, "token": {"x"}, "name": {"Ana"}})
	if a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" || !strings.Contains(a.body, "no operator token is configured") {
		t.Fatalf("break-glass without an operator token: %d %v", a.status, a.header)
	}
	if r := e.Get("/v1/ops/actions", "anything"); r.Status != http.StatusNotFound {
		t.Fatalf("/v1/ops without an operator token: %d", r.Status)
	}
}

// TestConsoleSessionsAndRefusals checks the console's rules over plain
// HTTP: the session cookie's flags, a wrong token, a forged or missing
// session, cross-origin writes, bad filters, and pages that escape what
// they show and list no phone or e-mail.
func TestConsoleSessionsAndRefusals(t *testing.T) {
	t.Parallel()
	s := startStack(t, `<script>alert("tenant")</script>`, time.Hour)
	plain := noRedirect()
	cust, err := s.e.Store.CreateCustomer(t.Context(), db.NewCustomer{
		TenantID: s.tenant.ID, Name: "Dana Example", Phone: "+15550100777", Email: "dana@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	id := s.stuckBookingFor(t, "http-book-1", 1, cust.ID)

	a := send(t, plain, http.MethodGet, s.e.URL+"/console/signin", nil)
	if a.status != http.StatusOK || !strings.Contains(a.header.Get("Content-Security-Policy"), "script-src 'self'") ||
		a.header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("sign-in page: %d %v", a.status, a.header)
	}
	a = send(t, plain, http.MethodPost, s.e.URL+"/console/signin", url.Values{"token": {"wrong"}, "name": {"Ana"}})
	if a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" {
		t.Fatalf("wrong token: %d %v", a.status, a.header)
	}
	a = send(t, plain, http.MethodPost, s.e.URL+"/console/signin", url.Values{"token": {operatorToken}, "name": {""}})
	if a.status != http.StatusBadRequest || a.header.Get("Set-Cookie") != "" {
		t.Fatalf("no name: %d %v", a.status, a.header)
	}
	a = send(t, plain, http.MethodPost, s.e.URL+"/console/signin", url.Values{"token": {operatorToken}, "name": {"Ana"}})
	ck := a.header.Get("Set-Cookie")
	if a.status != http.StatusSeeOther || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") ||
		!strings.Contains(ck, "Path=/console/") || !strings.Contains(ck, "Max-Age=") || strings.Contains(ck, "Secure") {
		t.Fatalf("session cookie: %d %q", a.status, ck)
	}
	a = send(t, plain, http.MethodPost, s.e.URL+"/console/signin", url.Values{"token": {operatorToken}, "name": {"Ana"}}, "X-Forwarded-Proto", "https")
	if ck := a.header.Get("Set-Cookie"); !strings.Contains(ck, "Secure") {
		t.Fatalf("session cookie behind TLS: %q", ck)
	}

	// No session, or a forged one: pages send to sign-in, writes get 401.
	forged := "oncecall_console=" + "QW5h.9999999999.forged"
	for _, c := range []string{"", forged} {
		a = send(t, plain, http.MethodGet, s.e.URL+"/console/", nil, "Cookie", c)
		if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/signin" {
			t.Fatalf("queue with cookie %q: %d %v", c, a.status, a.header)
		}
		a = send(t, plain, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
			url.Values{"outcome": {"rejected"}, "note": {"n"}}, "Cookie", c)
		if a.status != http.StatusUnauthorized {
			t.Fatalf("resolve with cookie %q: %d", c, a.status)
		}
	}

	ops := s.signedInClient(t, "Ana")
	// Cross-origin writes are refused before anything else.
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://evil.example"}} {
		a = send(t, ops, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
			url.Values{"outcome": {"rejected"}, "note": {"forged"}}, h...)
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "Cross-origin request refused") {
			t.Fatalf("cross-origin post (%v): %d", h, a.status)
		}
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, id); n != 1 {
		t.Fatal("a refused post changed the action")
	}

	// Bad filters are a clear 400.
	for _, q := range []string{"state=bogus", "tenant=acme", "operation=nope", "age=forever"} {
		if a = send(t, ops, http.MethodGet, s.e.URL+"/console/?"+q, nil); a.status != http.StatusBadRequest || !strings.Contains(a.body, "filter must") {
			t.Fatalf("queue ?%s: %d", q, a.status)
		}
	}

	// The queue escapes the tenant's name and shows no phone or e-mail;
	// its refresh fragment is the rows alone, and 401 without a session.
	a = send(t, ops, http.MethodGet, s.e.URL+"/console/", nil)
	if a.status != http.StatusOK || !strings.Contains(a.body, id.String()) || strings.Contains(a.body, `<script>alert`) ||
		!strings.Contains(a.body, "&lt;script&gt;alert(&#34;tenant&#34;)&lt;/script&gt;") {
		t.Fatalf("queue: %d\n%s", a.status, a.body)
	}
	a = send(t, ops, http.MethodGet, s.e.URL+"/console/queue?state=unknown", nil, "X-Console-Fetch", "1")
	if a.status != http.StatusOK || !strings.Contains(a.body, id.String()) || strings.Contains(a.body, "<html") {
		t.Fatalf("queue fragment: %d\n%s", a.status, a.body)
	}
	a = send(t, plain, http.MethodGet, s.e.URL+"/console/queue", nil, "X-Console-Fetch", "1")
	if a.status != http.StatusUnauthorized {
		t.Fatalf("queue fragment without a session: %d", a.status)
	}
	for _, q := range []string{"+15550100777", "dana@example.com", "Dana"} {
		a = send(t, ops, http.MethodGet, s.e.URL+"/console/search?"+url.Values{"q": {q}}.Encode(), nil)
		if a.status != http.StatusOK || !strings.Contains(a.body, id.String()) || !strings.Contains(a.body, "Dana Example") {
			t.Fatalf("search %q: %d\n%s", q, a.status, a.body)
		}
		// Only what the operator typed comes back; the record's phone and
		// e-mail are not listed.
		if q == "Dana" && (strings.Contains(a.body, "5550100777") || strings.Contains(a.body, "dana@example.com")) {
			t.Fatalf("search results list a phone or e-mail:\n%s", a.body)
		}
	}

	// While someone holds the action: 409, as the API answers, and nothing changes.
	if held, err := s.e.Store.TakeLease(t.Context(), id, uuid.New(), time.Minute); err != nil || !held {
		t.Fatalf("hold the action: %v %v", held, err)
	}
	a = send(t, ops, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
		url.Values{"outcome": {"rejected"}, "note": {"no booking at the provider"}})
	if a.status != http.StatusConflict || !strings.Contains(a.body, "Someone is working on it") {
		t.Fatalf("resolve a held action: %d", a.status)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'unknown'`, id); n != 1 {
		t.Fatal("a refused resolution changed the action")
	}
	if _, err := s.e.Store.Pool().Exec(t.Context(), `UPDATE actions SET lease_owner = NULL, lease_until = NULL WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}

	// A rejection through the console: 303 to the action, rejected with
	// the default reason, by the signed-in operator.
	a = send(t, ops, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
		url.Values{"outcome": {"rejected"}, "note": {"no booking at the provider"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/console/actions/"+id.String()+"?resolved=rejected" {
		t.Fatalf("reject: %d %v\n%s", a.status, a.header, a.body)
	}
	if n := s.e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed' AND outcome = 'rejected' AND reason = 'OPERATOR_REJECTED'`, id); n != 1 {
		t.Fatal("the action is not rejected")
	}
	if n := s.e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator' AND detail->>'by' = 'Ana'`, id); n != 1 {
		t.Fatal("the rejection is not in the timeline")
	}
	// Resolved once, it cannot be resolved again.
	a = send(t, ops, http.MethodPost, s.e.URL+"/console/actions/"+id.String()+"/resolve",
		url.Values{"outcome": {"rejected"}, "note": {"again"}})
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, "already completed") {
		t.Fatalf("resolve twice: %d", a.status)
	}
}

// TestConsoleShowsTheCallAnActionCameFrom: a booking a Dasha tool call
// left unknown is found by its call id, and its page names the platform,
// the call and the tool.
func TestConsoleShowsTheCallAnActionCameFrom(t *testing.T) {
	t.Parallel()
	s := startStack(t, "Harbour Dental", time.Hour)
	s.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	const callID = "call-7f3a-console"
	r := s.e.Post("/v1/dasha/tools/book_appointment", s.key, "", map[string]any{
		"type": "ToolWebHookPayload", "status": "Running", "callId": callID, "agentId": "agent_1", "orgId": "org_1",
		"toolName": "book_appointment", "callAdditionalData": map[string]any{}, "agentAdditionalData": map[string]any{},
		"arguments": map[string]any{"customer_id": s.e.Customer(s.tenant.ID), "slot_id": s.e.Slot(s.tenant.ID, 1)},
	})
	if r.Status != http.StatusOK || r.JSON(t)["outcome"] != "pending" {
		t.Fatalf("tool call with a dropped provider answer: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["action_id"].(string)
	ops := s.signedInClient(t, "Ana")
	a := send(t, ops, http.MethodGet, s.e.URL+"/console/search?q="+callID, nil)
	if a.status != http.StatusOK || !strings.Contains(a.body, "By call id") || !strings.Contains(a.body, id) {
		t.Fatalf("search by call id: %d\n%s", a.status, a.body)
	}
	a = send(t, ops, http.MethodGet, s.e.URL+"/console/actions/"+id, nil)
	for _, want := range []string{`<dd id="platform">Dasha</dd>`, callID, "book_appointment", "(derived from the call)"} {
		if a.status != http.StatusOK || !strings.Contains(a.body, want) {
			t.Fatalf("action page without %q: %d\n%s", want, a.status, a.body)
		}
	}
}
