package api_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

func TestRateLimitIsPerTenantAndStoresNothing(t *testing.T) {
	t.Parallel()
	// A token every 100s: the bucket does not refill while the test runs.
	e := apptest.Start(t, func(c *app.Config) { c.RateLimit, c.RateBurst = 0.01, 2 })
	tenant, key := e.Tenant("acme")
	b := bookingEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}

	// Unauthenticated requests do not spend the tenant's tokens.
	if r := e.Post("/v1/appointments", "oc_wrong", "x", map[string]any{}); r.Status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", r.Status)
	}
	if r := b.book("first", b.slot); r.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	if r := b.Get("/v1/slots", b.key); r.Status != http.StatusOK {
		t.Fatalf("second: %d %s", r.Status, r.Body)
	}
	limited := b.book("third", b.Slot(b.tenant, 2))
	p := limited.JSON(t)
	if limited.Status != http.StatusTooManyRequests || p["code"] != "RATE_LIMITED" ||
		limited.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("over the limit: %d %s", limited.Status, limited.Body)
	}
	retry, err := strconv.Atoi(limited.Header.Get("Retry-After"))
	if err != nil || retry < 90 || retry > 100 {
		t.Fatalf("Retry-After %q, want about 100 seconds", limited.Header.Get("Retry-After"))
	}
	if got := e.Count("SELECT count(*) FROM actions WHERE idempotency_key = 'third'"); got != 0 {
		t.Fatalf("a rate-limited request claimed its key")
	}
	if got := e.Count("SELECT count(*) FROM actions"); got != 1 {
		t.Fatalf("actions = %d, want 1", got)
	}
	// Another tenant has its own bucket.
	other, otherKey := e.Tenant("other")
	r := e.Post("/v1/appointments", otherKey, "third", map[string]any{"customer_id": e.Customer(other.ID), "slot_id": e.Slot(other.ID, 1)})
	if r.Status != http.StatusCreated {
		t.Fatalf("other tenant: %d %s", r.Status, r.Body)
	}
	// Health checks are never limited.
	if r := e.Get("/readyz", ""); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d", r.Status)
	}
}

func TestBodyLimitIsConfigurableAndStoresNothing(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) { c.MaxBodyBytes = 1024 })
	tenant, key := e.Tenant("acme")
	b := bookingEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
	big := `{"customer_id":"` + b.customer.String() + `","slot_id":"` + b.slot.String() + `","service":"` + strings.Repeat("a", 1100) + `"}`

	// Declared length over the limit.
	r := b.Post("/v1/appointments", b.key, "big", big)
	if r.Status != http.StatusRequestEntityTooLarge || r.JSON(t)["code"] != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("declared length: %d %s", r.Status, r.Body)
	}
	// Chunked, no declared length: cut off while reading.
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/appointments", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Idempotency-Key", "big")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(body, []byte("PAYLOAD_TOO_LARGE")) {
		t.Fatalf("chunked: %d %s", resp.StatusCode, body)
	}
	if got := e.Count("SELECT count(*) FROM actions"); got != 0 {
		t.Fatalf("oversized requests claimed %d actions", got)
	}
	// The key is still free.
	if r := b.book("big", b.slot); r.Status != http.StatusCreated || r.Replayed() {
		t.Fatalf("after 413: %d %s", r.Status, r.Body)
	}
}

func TestDeepNestingIsInvalidInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deep := `{"customer_id":"` + b.customer.String() + `","slot_id":"` + b.slot.String() + `","service":` +
		strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`
	r := b.Post("/v1/appointments", b.key, "deep", deep)
	if r.Status != http.StatusBadRequest || r.JSON(t)["code"] != "INVALID_JSON" {
		t.Fatalf("40 levels deep: %d %s", r.Status, r.Body)
	}
	if got := b.Count("SELECT count(*) FROM actions"); got != 0 {
		t.Fatalf("claimed %d actions", got)
	}
}

func TestSlowHeadersAreCutOff(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) { c.ReadHeaderTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Half a request, then nothing: the server must give up on us.
	if _, err := conn.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("the server answered a request whose headers never ended: %d", resp.StatusCode)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the connection open for 10s")
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("cut off after %v", waited)
	}
}
