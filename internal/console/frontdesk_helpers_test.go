package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/buildtest"
)

// served is a real `oncecall serve` process started as `make run` starts
// it (the embedded database), and what its banner printed.
type served struct {
	bin, url, dbURL string
	banner, logs    *simtest.Buffer
	env             []string
}

// serveLikeMakeRun starts the real binary with an embedded database in a
// folder of its own, with env added, and waits for its banner.
func serveLikeMakeRun(t *testing.T, env ...string) *served {
	t.Helper()
	// Not t.TempDir: when tests run as root the database's own account
	// must be able to enter the folder.
	dir, err := os.MkdirTemp("", "oncecall-frontdesk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &served{bin: buildtest.Command(t, "cmd/oncecall"), banner: &simtest.Buffer{}, logs: &simtest.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, s.bin, "serve", "--addr", "127.0.0.1:0", "--data-dir", dir)
	cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=", "ONCECALL_EMBEDDED_PORT=" + strconv.Itoa(port),
		"ONCECALL_PRUNE_INTERVAL=0", "ONCECALL_RATE_LIMIT=0"}, env...)...)
	cmd.Stdout, cmd.Stderr = s.banner, s.logs
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() }) //nolint:errcheck // stopped by the test
	waitUntil(t, "oncecall serve to print its banner", 3*time.Minute, func() bool {
		return strings.Contains(s.logs.String(), `"message":"serving"`) && strings.Contains(s.banner.String(), "operator add")
	})
	b := s.banner.String()
	url := regexp.MustCompile(`(?m)^export URL=(\S+)$`).FindStringSubmatch(b)
	db := regexp.MustCompile(`DATABASE_URL='([^']+)'`).FindStringSubmatch(b)
	if url == nil || db == nil {
		t.Fatalf("the banner has no URL or database URL:\n%s", b)
	}
	s.url, s.dbURL, s.env = url[1], db[1], env
	return s
}

// printed is the banner's command line that contains what.
func (s *served) printed(t *testing.T, what string) string {
	t.Helper()
	for _, line := range strings.Split(s.banner.String(), "\n") {
		if strings.Contains(line, what) {
			return line
		}
	}
	t.Fatalf("the banner prints no %q:\n%s", what, s.banner.String())
	return ""
}

// run runs the binary with args against the served database, as a person
// pasting the banner's DATABASE_URL does.
func (s *served) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(append(os.Environ(), s.env...), "DATABASE_URL="+s.dbURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("oncecall %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// shellWords splits a printed command line into its words, as a shell
// would for what the banner prints: words, and '...' or "..." quoted ones.
func shellWords(line string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`'[^']*'|"[^"]*"|\S+`).FindAllString(line, -1) {
		if len(m) >= 2 && (m[0] == '\'' || m[0] == '"') {
			m = m[1 : len(m)-1]
		}
		out = append(out, m)
	}
	return out
}

// post sends a JSON write with the tenant's key and returns its result.
func post(t *testing.T, url, key, idem, path string, body any) map[string]any {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || res.StatusCode >= 300 && res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
	}
	return out
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
	}
}

func resultID(t *testing.T, r map[string]any) string {
	t.Helper()
	res, ok := r["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", r)
	}
	return fmt.Sprint(res["id"])
}
