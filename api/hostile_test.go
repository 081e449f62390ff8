package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// The hostile-input suite throws malformed, oversized, slow and foreign
// requests at a running server (real PostgreSQL) and checks that each gets
// its documented answer, that the server stays ready, that nothing is
// claimed and that memory stays bounded.

// hostileBodyLimit is the body limit of the server under attack: large
// enough that deep nesting and long numbers reach the JSON parser (so they
// are refused for what they are, not for their size).
const hostileBodyLimit = 256 << 10

type hostileEnv struct {
	*apptest.Env
	addr     string
	tenant   uuid.UUID
	key      string
	customer uuid.UUID
	slot     uuid.UUID
}

func hostileSetup(t *testing.T) hostileEnv {
	t.Helper()
	e := apptest.Start(t, func(c *app.Config) {
		c.MaxBodyBytes = hostileBodyLimit
		c.ReadHeaderTimeout = time.Second
	})
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	tenant, key := e.Tenant("hostile")
	return hostileEnv{Env: e, addr: u.Host, tenant: tenant.ID, key: key,
		customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
}

// rawRequest is an HTTP/1.1 request written byte for byte, so that it can
// carry what well-behaved clients refuse to send (NUL bytes in headers,
// oversized header blocks).
type rawRequest struct {
	method, path string
	headers      [][2]string
	body         []byte
	chunked      bool
}

func (r rawRequest) bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: oncecall\r\nConnection: close\r\n", r.method, r.path)
	for _, h := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if r.chunked {
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := r.body; len(rest) > 0; {
			n := min(len(rest), 8<<10)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		b.WriteString("0\r\n\r\n")
		return b.Bytes()
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.body))
	b.Write(r.body)
	return b.Bytes()
}

// send writes r on a new connection and reads the answer. The write runs on
// its own: the server may answer and close before reading everything.
func (h hostileEnv) send(t *testing.T, r rawRequest) apptest.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
	go conn.Write(r.bytes())                           //nolint:errcheck // a refused body may be cut short
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: no answer: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// headers are the ones a valid booking sends; extra pairs replace them by
// name, and a pair with the value "\x00omit" drops the header.
func (h hostileEnv) headers(extra ...[2]string) [][2]string {
	base := [][2]string{
		{"Authorization", "Bearer " + h.key},
		{"Content-Type", "application/json"},
		{"Idempotency-Key", "hostile-" + uuid.NewString()},
	}
	var out [][2]string
	for _, b := range base {
		replaced := false
		for _, e := range extra {
			replaced = replaced || strings.EqualFold(e[0], b[0])
		}
		if !replaced {
			out = append(out, b)
		}
	}
	for _, e := range extra {
		if e[1] != "\x00omit" {
			out = append(out, e)
		}
	}
	return out
}

func (h hostileEnv) booking() string {
	return fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s"}`, h.customer, h.slot)
}

// healthy checks the server is ready and that nothing was claimed or booked.
func (h hostileEnv) healthy(t *testing.T) {
	t.Helper()
	if r := h.Get("/readyz", ""); r.Status != http.StatusOK {
		t.Fatalf("/readyz = %d %s", r.Status, r.Body)
	}
	if n := h.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", h.tenant); n != 0 {
		t.Fatalf("%d actions claimed", n)
	}
	if n := h.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", h.tenant); n != 0 {
		t.Fatalf("%d appointments made", n)
	}
}

func TestHostileInput(t *testing.T) {
	// Not parallel: what the suite leaves on the heap is measured against
	// the heap before it, with no other test of the package running.
	h := hostileSetup(t)
	before := heapInUse()
	big := func(n int) string { return strings.Repeat("a", n) }
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	post := func(body string, extra ...[2]string) rawRequest {
		return rawRequest{method: "POST", path: "/v1/appointments", headers: h.headers(extra...), body: []byte(body)}
	}
	overLimit := `{"service":"` + big(hostileBodyLimit) + `"}`
	digits := strings.Repeat("7", 10_000)

	for _, tc := range []struct {
		name   string
		req    rawRequest
		status int
		code   string // problem+json code; "" when net/http answers by itself
		field  string
	}{
		{"body over the limit", post(overLimit), 413, "PAYLOAD_TOO_LARGE", ""},
		{"chunked body over the limit", func() rawRequest { r := post(overLimit); r.chunked = true; return r }(), 413, "PAYLOAD_TOO_LARGE", ""},
		{"100,000-level nested array", post(nested(100_000)), 400, "INVALID_JSON", ""},
		{"100,000-level nesting in a field", post(`{"customer_id":` + nested(100_000) + `}`), 400, "INVALID_JSON", ""},
		{"100,000 unclosed objects", post(strings.Repeat(`{"a":`, 40_000)), 400, "INVALID_JSON", ""},
		{"number with 10,000 digits", post(`{"customer_id":` + digits + `}`), 400, "INVALID_JSON", ""},
		{"fraction with 10,000 digits", post(`{"service":0.` + digits + `}`), 400, "INVALID_JSON", ""},
		{"huge exponent", post(`{"service":1e999999999999}`), 400, "INVALID_JSON", ""},
		{"invalid UTF-8 in a value", post(`{"customer_id":"` + "\xff\xfe" + `","slot_id":"x"}`), 400, "INVALID_JSON", ""},
		{"invalid UTF-8 in a key", post(`{"` + "\xc3\x28" + `":"x"}`), 400, "INVALID_JSON", ""},
		{"lone surrogate escape", post(`{"service":"\ud800"}`), 400, "INVALID_JSON", ""},
		{"raw NUL byte in a string", post("{\"service\":\"a\x00b\"}"), 400, "INVALID_JSON", ""},
		{"escaped NUL as a key", post(`{"\u0000":1}`), 400, "INVALID_INPUT", `\x00`},
		{"escaped NUL in a value", post(fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s","service":"a\u0000b"}`, h.customer, h.slot)), 400, "INVALID_INPUT", "service"},
		{"10 KiB key", post(`{"` + big(10<<10) + `":1}`), 400, "INVALID_INPUT", ""},
		{"10 KiB value", post(`{"customer_id":"` + big(10<<10) + `","slot_id":"x"}`), 400, "INVALID_INPUT", "customer_id"},
		{"duplicate keys", post(fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s","slot_id":"%s"}`, h.customer, h.slot, h.slot)), 400, "INVALID_JSON", ""},
		{"keys equal after NFC", post(`{"caf\u00e9":1,"cafe\u0301":2}`), 400, "INVALID_JSON", ""},
		{"not an object", post(`"` + h.slot.String() + `"`), 400, "INVALID_JSON", ""},
		{"trailing data", post(h.booking() + h.booking()), 400, "INVALID_JSON", ""},
		{"text/plain", post(h.booking(), [2]string{"Content-Type", "text/plain"}), 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"XML", post(h.booking(), [2]string{"Content-Type", "application/xml"}), 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"form", post("customer_id=1", [2]string{"Content-Type", "application/x-www-form-urlencoded"}), 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"multipart", post(h.booking(), [2]string{"Content-Type", "multipart/form-data; boundary=x"}), 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"no Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", "\x00omit"}), 400, "IDEMPOTENCY_KEY_MISSING", ""},
		{"empty Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", ""}), 400, "IDEMPOTENCY_KEY_INVALID", ""},
		{"10 KiB Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", big(10 << 10)}), 400, "IDEMPOTENCY_KEY_INVALID", ""},
		{"non-ASCII Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", "k\xffey"}), 400, "IDEMPOTENCY_KEY_INVALID", ""},
		{"NUL in the Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", "k\x00ey"}), 400, "", ""},
		{"control character in the Idempotency-Key", post(h.booking(), [2]string{"Idempotency-Key", "k\x01ey"}), 400, "", ""},
		{"two Idempotency-Keys", rawRequest{method: "POST", path: "/v1/appointments", body: []byte(h.booking()),
			headers: append(h.headers(), [2]string{"Idempotency-Key", "second"})}, 400, "IDEMPOTENCY_KEY_INVALID", ""},
		{"10 KiB API key", post(h.booking(), [2]string{"Authorization", "Bearer " + big(10<<10)}), 401, "UNAUTHORIZED", ""},
		{"NUL in the API key", post(h.booking(), [2]string{"Authorization", "Bearer " + h.key + "\x00"}), 400, "", ""},
		{"10 KiB header of another name", post(h.booking(), [2]string{"Idempotency-Key", "\x00omit"}, [2]string{"X-Padding", big(10 << 10)}), 400, "IDEMPOTENCY_KEY_MISSING", ""},
		{"oversized header block", post(h.booking(), [2]string{"X-Padding", big(64 << 10)}), 431, "", ""},
		{"many headers", post(h.booking(), func() [][2]string {
			var hs [][2]string
			for i := range 5000 {
				hs = append(hs, [2]string{fmt.Sprintf("X-H%d", i), "v"})
			}
			return hs
		}()...), 431, "", ""},
		{"unknown route", rawRequest{method: "POST", path: "/v1/" + big(5000), headers: h.headers(), body: []byte(h.booking())}, 404, "NOT_FOUND", ""},
		{"wrong method", rawRequest{method: "DELETE", path: "/v1/appointments", headers: h.headers()}, 405, "METHOD_NOT_ALLOWED", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.send(t, tc.req)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Body)
			}
			if tc.code != "" {
				if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type %q, want problem+json", ct)
				}
				p := r.JSON(t)
				if p["code"] != tc.code {
					t.Errorf("code %v, want %s: %s", p["code"], tc.code, r.Body)
				}
				if tc.field != "" && p["field"] != tc.field {
					t.Errorf("field %q, want %q", p["field"], tc.field)
				}
			}
			// An answer never echoes a hostile input back at length.
			if len(r.Body) > 2<<10 {
				t.Errorf("answer of %d bytes: %.300s", len(r.Body), r.Body)
			}
			h.healthy(t)
		})
	}

	// After all that the server still books, exactly once.
	ok := h.Post("/v1/appointments", h.key, "after-the-storm", h.booking())
	again := h.Post("/v1/appointments", h.key, "after-the-storm", h.booking())
	if ok.Status != http.StatusCreated || again.Status != http.StatusCreated || !again.Replayed() || !bytes.Equal(ok.Body, again.Body) {
		t.Fatalf("valid booking after the hostile input: %d %s / %d %s", ok.Status, ok.Body, again.Status, again.Body)
	}
	if n := h.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", h.tenant); n != 1 {
		t.Fatalf("%d appointments, want 1", n)
	}
	// No hostile body may be retained: the heap after the suite holds
	// less than one more body at the limit than the suite itself leaves.
	after := heapInUse()
	t.Logf("heap in use before the suite %.1f MiB, after it %.1f MiB", float64(before)/(1<<20), float64(after)/(1<<20))
	if after > before && after-before > hostileHeapGrowth {
		t.Fatalf("heap in use grew by %d MiB over the suite, more than %d MiB", (after-before)>>20, hostileHeapGrowth>>20)
	}
}

// hostileHeapGrowth bounds what the hostile suite may leave on the heap:
// less than one body at the limit more than the 0.3–0.5 MiB a run leaves
// (the server's pooled buffers and connections, the booking's answer).
const hostileHeapGrowth = hostileBodyLimit + 1<<20

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestSlowlorisIsCutOff: a client that sends its headers slower than the
// server's ReadHeaderTimeout gets its connection closed, and others are
// still served meanwhile.
func TestSlowlorisIsCutOff(t *testing.T) {
	t.Parallel()
	h := hostileSetup(t) // ReadHeaderTimeout: 1s
	conn, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := []byte("POST /v1/appointments HTTP/1.1\r\nHost: oncecall\r\nAuthorization: Bearer " + h.key + "\r\nX-Slow: " + strings.Repeat("z", 100))
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	go func() {
		// One byte every 100ms: 10 bytes per second, far too slow.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for _, c := range head {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{c}); err != nil {
				return
			}
		}
	}()

	// Meanwhile a normal client is served.
	if r := h.Get("/readyz", ""); r.Status != http.StatusOK {
		t.Fatalf("/readyz during slowloris = %d", r.Status)
	}

	// The server may say why before it hangs up (net/http answers a header
	// timeout with 400 and Connection: close); either way the connection
	// must end at about the timeout.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	got, err := io.ReadAll(conn)
	elapsed := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the slow connection was still open after %v", elapsed)
	}
	if len(got) > 0 && !bytes.HasPrefix(got, []byte("HTTP/1.1 400 ")) && !bytes.HasPrefix(got, []byte("HTTP/1.1 408 ")) {
		t.Fatalf("unexpected answer to the slow connection: %q", got)
	}
	// The server's clock starts at accept, a little before ours; the lower
	// bound only proves the connection was not dropped at once.
	if elapsed < 500*time.Millisecond || elapsed > 5*time.Second {
		t.Fatalf("closed after %v, want about the 1s ReadHeaderTimeout", elapsed)
	}
	t.Logf("slow connection closed after %v (%q)", elapsed.Round(time.Millisecond), bytes.SplitN(got, []byte("\r\n"), 2)[0])
	h.healthy(t)
}

// TestOtherTenantsResources: a tenant that names another tenant's actions,
// appointments, customers or slots, or reuses its key, gets 404 or a
// rejection of its own, never the other tenant's data; the other tenant's
// records are untouched.
func TestOtherTenantsResources(t *testing.T) {
	t.Parallel()
	h := hostileSetup(t)
	first := h.Post("/v1/appointments", h.key, "shared-key", h.booking())
	if first.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", first.Status, first.Body)
	}
	env := first.JSON(t)
	actionID := env["action_id"].(string)
	appt := env["result"].(map[string]any)
	apptID, startsAt := appt["id"].(string), appt["starts_at"].(string)

	tenantB, keyB := h.Tenant("intruder")
	custB, slotB := h.Customer(tenantB.ID), h.Slot(tenantB.ID, 3)
	secrets := map[string]string{
		"A's action id": actionID, "A's appointment id": apptID, "A's customer id": h.customer.String(),
		"A's slot id": h.slot.String(), "A's slot time": startsAt,
	}
	for _, tc := range []struct {
		name, method, path, key string
		body                    string
		status                  int
		code                    string
	}{
		{"read A's action", "GET", "/v1/actions/" + actionID, "", "", 404, "NOT_FOUND"},
		{"read A's appointment", "GET", "/v1/appointments/" + apptID, "", "", 404, "NOT_FOUND"},
		{"A's request with A's key", "POST", "/v1/appointments", "shared-key", h.booking(), 422, "CUSTOMER_NOT_FOUND"},
		{"book A's slot", "POST", "/v1/appointments", "b-1", fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s"}`, custB, h.slot), 422, "SLOT_NOT_FOUND"},
		{"book for A's customer", "POST", "/v1/appointments", "b-2", fmt.Sprintf(`{"customer_id":"%s","slot_id":"%s"}`, h.customer, slotB), 422, "CUSTOMER_NOT_FOUND"},
		{"move A's appointment", "POST", "/v1/appointments/" + apptID + "/reschedule", "b-3", fmt.Sprintf(`{"slot_id":"%s"}`, slotB), 422, "APPOINTMENT_NOT_FOUND"},
		{"cancel A's appointment", "POST", "/v1/appointments/" + apptID + "/cancel", "b-4", `{}`, 422, "APPOINTMENT_NOT_FOUND"},
		{"list slots", "GET", "/v1/slots", "", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r apptest.Response
			if tc.method == "GET" {
				r = h.Get(tc.path, keyB)
			} else {
				r = h.Post(tc.path, keyB, tc.key, tc.body)
			}
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.code != "" {
				if code := r.JSON(t)["code"]; code != tc.code {
					t.Fatalf("code %v, want %s", code, tc.code)
				}
			}
			for what, s := range secrets {
				// What B itself sent may be echoed; nothing else of A's.
				if strings.Contains(string(r.Body), s) && !strings.Contains(tc.path+tc.body, s) {
					t.Errorf("the answer reveals %s: %s", what, r.Body)
				}
			}
		})
	}
	// A's records are as they were.
	if n := h.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", h.tenant); n != 1 {
		t.Errorf("A has %d actions, want 1", n)
	}
	if n := h.Count("SELECT count(*) FROM appointments WHERE id = $1 AND slot_id = $2 AND status = 'active'", apptID, h.slot); n != 1 {
		t.Errorf("A's appointment was changed")
	}
	if n := h.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1", tenantB.ID); n != 0 {
		t.Errorf("B booked %d appointments", n)
	}
	if n := h.Count("SELECT count(*) FROM actions WHERE tenant_id = $1 AND outcome <> 'rejected'", tenantB.ID); n != 0 {
		t.Errorf("B has %d actions that are not rejections", n)
	}
	if r := h.Get("/readyz", ""); r.Status != http.StatusOK {
		t.Fatalf("/readyz = %d", r.Status)
	}
}

// TestThousandsOfConnections: thousands of open keep-alive connections do
// not stop the server from serving others.
func TestThousandsOfConnections(t *testing.T) {
	t.Parallel()
	h := hostileSetup(t)
	n := connectionBudget(t, 2000)
	conns := make([]net.Conn, n)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	// Each connection makes one request and then stays open, idle, as a
	// fleet of clients with keep-alive pools would.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				c, err := net.DialTimeout("tcp", h.addr, 10*time.Second)
				if err != nil {
					errs <- err
					continue
				}
				conns[i] = c
				c.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
				if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: oncecall\r\n\r\n"); err != nil {
					errs <- err
					continue
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body) //nolint:errcheck
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("/livez = %d", resp.StatusCode)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("connection: %v", err)
	}

	// With all of them open, normal requests are served.
	h.healthy(t)
	r := h.Post("/v1/appointments", h.key, "amid-the-crowd", h.booking())
	if r.Status != http.StatusCreated {
		t.Fatalf("booking with %d open connections: %d %s", n, r.Status, r.Body)
	}
	var env struct {
		ActionID string `json:"action_id"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	if g := h.Get("/v1/actions/"+env.ActionID, h.key); g.Status != http.StatusOK {
		t.Fatalf("read action: %d", g.Status)
	}
	t.Logf("%d open connections, server still serving", n)
}
