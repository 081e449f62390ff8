package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
)

// Three connections that trickle their request bodies with a dasha-scoped
// key of a tenant, as many as the tenant's share of database requests,
// hold none of that share: a request takes its tenant's place only once
// its body is read. The tenant's normal calls, REST and Dasha, are served
// meanwhile; and each trickling body is cut off at the body read bound,
// with 400, long before the server's ReadTimeout, claiming nothing.
func TestSlowBodiesHoldNoTenantPlace(t *testing.T) {
	t.Parallel()
	const share, bound = 3, 2 * time.Second
	d := setupDasha(t, func(c *app.Config) {
		c.TenantDBRequests = share
		c.TenantDBWait = 100 * time.Millisecond
		c.BodyReadTimeout = bound
	})
	dashaKey, err := d.Store.AddScopedAPIKey(t.Context(), d.tenant, oncecall.ScopeDasha)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Warm the keys into the cache, so the trickling requests reach the
	// gate at once.
	for _, k := range []string{d.key, dashaKey} {
		if r := d.Post("/v1/dasha/tools/find_available_slots", k, "", payload("find_available_slots", "warm", map[string]any{})); r.Status != http.StatusOK {
			t.Fatalf("warm-up with %s: %d %s", k[:6], r.Status, r.Body)
		}
	}

	body := `{"type":"ToolWebHookPayload","toolName":"find_available_slots","callId":"slow","orgId":"` + testOrg + `","arguments":{}}` +
		strings.Repeat(" ", 400) // 50 ms a byte: 20 s to send, far past the bound
	type result struct {
		status  string
		elapsed time.Duration
		err     error
	}
	results := make([]result, share)
	stop := make(chan struct{})
	var writers, readers sync.WaitGroup
	started := make(chan struct{}, share)
	for i := range share {
		conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		head := fmt.Sprintf("POST /v1/dasha/tools/find_available_slots HTTP/1.1\r\nHost: oncecall\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%c", dashaKey, len(body), body[0])
		begin := time.Now()
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		started <- struct{}{}
		writers.Go(func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for _, c := range []byte(body[1:]) {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte{c}); err != nil {
					return
				}
			}
		})
		readers.Go(func() {
			conn.SetReadDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				results[i] = result{err: err, elapsed: time.Since(begin)}
				return
			}
			resp.Body.Close()
			results[i] = result{status: resp.Status, elapsed: time.Since(begin)}
		})
	}
	for range share {
		<-started
	}

	// While they trickle, the tenant's own calls are served, for a second.
	calls := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end) || calls < 6; calls++ {
		if r := d.Get("/v1/slots", d.key); r.Status != http.StatusOK {
			t.Fatalf("REST call %d while bodies trickle: %d %s", calls, r.Status, r.Body)
		}
		r := d.call("find_available_slots", fmt.Sprintf("call_%d", calls), map[string]any{})
		if a := decodeAnswer(t, r); a.Outcome != "confirmed" {
			t.Fatalf("Dasha call %d while bodies trickle: %s", calls, r.Body)
		}
	}

	readers.Wait()
	close(stop)
	writers.Wait()
	for i, r := range results {
		if r.err != nil || !strings.HasPrefix(r.status, "400") || r.elapsed > bound+3*time.Second {
			t.Errorf("trickling request %d: %q %v after %v, want 400 at about %v", i, r.status, r.err, r.elapsed, bound)
		}
	}
	if n := d.Count("SELECT count(*) FROM actions"); n != 0 {
		t.Errorf("%d actions claimed", n)
	}
}
