package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/pgembed"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
)

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
}

func TestServeEmbeddedConventions(t *testing.T) {
	if _, err := pgembed.FindBinDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs the embedded database: %v", err)
		}
		t.Skipf("needs PostgreSQL server binaries: %v", err)
	}
	// Not t.TempDir: when tests run as root the postgres account must be
	// able to enter the directory.
	dir, err := os.MkdirTemp("", "oncecall-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	t.Setenv("DATABASE_URL", "")
	t.Setenv("ONCECALL_EMBEDDED_PORT", strconv.Itoa(port))
	t.Setenv("ONCECALL_PRUNE_INTERVAL", "0")
	t.Setenv("ONCECALL_NO_RECONCILE", "1")

	var keys []string
	for start := 1; start <= 2; start++ {
		stdout, stderr := &simtest.Buffer{}, &simtest.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, stdout, stderr)
		}()
		waitFor(t, "serving log line", 2*time.Minute, func() bool {
			select {
			case err := <-done:
				t.Fatalf("start %d: serve returned %v\n%s", start, err, stderr.String())
			default:
			}
			return strings.Contains(stderr.String(), `"message":"serving"`)
		})
		banner := stdout.String()
		url := regexp.MustCompile(`(?m)^export URL=(\S+)$`).FindStringSubmatch(banner)
		key := regexp.MustCompile(`(?m)^export KEY=(\S+)$`).FindStringSubmatch(banner)
		if url == nil || key == nil {
			t.Fatalf("start %d: no export lines in the banner:\n%s", start, banner)
		}
		keys = append(keys, key[1])
		if !strings.Contains(banner, fmt.Sprintf("@127.0.0.1:%d/", port)) {
			t.Errorf("start %d: the banner's database URL is not on port %d:\n%s", start, port, banner)
		}
		req, _ := http.NewRequest(http.MethodGet, url[1]+"/v1/slots?available=true", nil)
		req.Header.Set("Authorization", "Bearer "+key[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("start %d: the printed key answered %d", start, resp.StatusCode)
		}
		// The demo charges through the provider simulator it started, and says so.
		sim := regexp.MustCompile(`provider simulator at (http://127\.0\.0\.1:\d+),`).FindStringSubmatch(banner)
		if sim == nil || !strings.Contains(banner, "nothing real is charged or sent") ||
			!strings.Contains(stderr.String(), "provider simulator serving") {
			t.Fatalf("start %d: the banner does not say that the provider simulator serves payments and messages:\n%s", start, banner)
		}
		if status := demoCharge(t, url[1], key[1], banner); status != http.StatusCreated {
			t.Fatalf("start %d: the demo's charge answered %d", start, status)
		}
		kept := filepath.Join(dir, "demo-api-key")
		fi, err := os.Stat(kept)
		if err != nil {
			t.Fatalf("start %d: %v", start, err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("start %d: %s has mode %v, want 0600", start, kept, fi.Mode().Perm())
		}
		if b, _ := os.ReadFile(kept); strings.TrimSpace(string(b)) != key[1] {
			t.Errorf("start %d: %s does not hold the printed key", start, kept)
		}

		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("start %d: serve stopped with %v\n%s", start, err, stderr.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("start %d: serve did not stop", start)
		}
		logs := stderr.String()
		if !strings.Contains(logs, `"message":"stopped"`) || strings.Index(logs, `"message":"stopped"`) < strings.Index(logs, `"message":"serving"`) {
			t.Fatalf("start %d: no stopped line after serving:\n%s", start, logs)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			t.Fatalf("start %d: the embedded database still listens after stopped", start)
		}
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(sim[1], "http://"), time.Second); err == nil {
			c.Close()
			t.Fatalf("start %d: the provider simulator still listens after stopped", start)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "providersim-ledger.jsonl")); err != nil {
		t.Fatalf("the simulator's ledger in the data directory: %v", err)
	}
	if keys[0] != keys[1] {
		t.Fatalf("the second start printed another demo key: %s then %s", keys[0][:6], keys[1][:6])
	}

	t.Setenv("ONCECALL_EMBEDDED_PORT", "70000")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, &out, &out); err == nil || !strings.Contains(err.Error(), "--embedded-port") {
		t.Fatalf("port 70000: %v", err)
	}
	t.Setenv("ONCECALL_EMBEDDED_PORT", "")
	if err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--embedded-port", "-1"}, &out, &out); err == nil || !strings.Contains(err.Error(), "--embedded-port") {
		t.Fatalf("port -1: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// demoCharge approves 10.50 EUR for the demo customer and charges it, and
// returns the charge's status.
func demoCharge(t *testing.T, url, key, banner string) int {
	t.Helper()
	customer := regexp.MustCompile(`(?m)^export CUSTOMER_ID=(\S+)$`).FindStringSubmatch(banner)
	if customer == nil {
		t.Fatalf("no CUSTOMER_ID in the banner:\n%s", banner)
	}
	post := func(path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "demo-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s answered %d without JSON: %v", path, resp.StatusCode, err)
		}
		return resp.StatusCode, out
	}
	status, approved := post("/v1/payment-intents", `{"customer_id":"`+customer[1]+`","amount":1050,"currency":"eur"}`)
	result, _ := approved["result"].(map[string]any)
	if status != http.StatusCreated || result == nil {
		t.Fatalf("approve: %d %v", status, approved)
	}
	status, charged := post("/v1/payments", `{"payment_intent_id":"`+result["id"].(string)+`"}`)
	r, _ := charged["result"].(map[string]any)
	if ref, _ := r["provider_ref"].(string); status == http.StatusCreated && ref == "" {
		t.Fatalf("the charge names no provider's record: %v", charged)
	}
	return status
}
