package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// client is one client address, a loopback address of its own (127.0.0.2,
// ...): api's answers are checked against openapi.yaml like Env's, the
// console's (not in it) are not.
type client struct{ api, console *http.Client }

func fromAddress(t *testing.T, ip string) client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return client{
		api:     &http.Client{Transport: apptest.NewContract(t, tr), CheckRedirect: noRedirect},
		console: &http.Client{Transport: tr, CheckRedirect: noRedirect},
	}
}

// opsList asks for the operator API's list of actions with token.
func opsList(t *testing.T, c client, base, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/v1/ops/actions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.api.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp
}

func signIn(t *testing.T, c client, base, token string) *http.Response {
	t.Helper()
	resp, err := c.console.PostForm(base+"/console/signin", url.Values{"token": {token}, "name": {"ana"}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp
}

// Wrong operator tokens are slowed per client address and overall: past a
// few, an address gets 429 with Retry-After on /v1/ops and the console's
// sign-in alike, whatever it sends, while the right token from another
// address still works; many addresses guessing at once meet the overall
// limit.
func TestWrongOperatorTokensAreSlowed(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) { c.OperatorToken = operatorToken })
	attacker := fromAddress(t, "127.0.0.2")
	refusedAt := 0
	for i := 1; i <= 50 && refusedAt == 0; i++ {
		resp := opsList(t, attacker, e.URL, "wrong-"+strconv.Itoa(i))
		switch resp.StatusCode {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("429 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
			refusedAt = i
		default:
			t.Fatalf("wrong token %d: %d", i, resp.StatusCode)
		}
	}
	if refusedAt == 0 || refusedAt > 11 {
		t.Fatalf("wrong operator tokens from one address: first 429 at attempt %d of 50, want by the 11th", refusedAt)
	}
	// The address waits, whatever it sends, on both doors.
	if resp := opsList(t, attacker, e.URL, operatorToken); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled address: %d, want 429", resp.StatusCode)
	}
	if resp := signIn(t, attacker, e.URL, "wrong"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("console sign-in from the throttled address: %d, want 429 with Retry-After", resp.StatusCode)
	}
	// The operator, elsewhere, is not locked out, on either door; the right
	// token spends nothing.
	operator := fromAddress(t, "127.0.0.3")
	for range 20 {
		if resp := opsList(t, operator, e.URL, operatorToken); resp.StatusCode != http.StatusOK {
			t.Fatalf("the right token from another address: %d", resp.StatusCode)
		}
	}
	if resp := signIn(t, operator, e.URL, operatorToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in with the right token from another address: %d", resp.StatusCode)
	}

	// Many addresses, each within its own allowance: the overall limit.
	overall := false
	for a := 10; a < 40 && !overall; a++ {
		c := fromAddress(t, "127.0.0."+strconv.Itoa(a))
		for range 5 {
			if opsList(t, c, e.URL, "guess").StatusCode == http.StatusTooManyRequests {
				overall = true
				break
			}
		}
	}
	if !overall {
		t.Fatal("150 wrong tokens from 30 addresses: no 429")
	}
}
