// Package stripemock starts Stripe's own stripe-mock (an implementation of
// Stripe's API from its OpenAPI description, validating every request) for
// tests. It is installed with `go install` when missing; outside CI a test
// skips with the reason when it cannot be had, in CI it fails.
package stripemock

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Module is the stripe-mock version the tests run.
const Module = "github.com/stripe/stripe-mock@v0.203.0"

var install struct {
	once sync.Once
	path string
	err  string
}

// binary finds stripe-mock on PATH or in Go's bin folder, installing it
// there once when it is in neither.
func binary() (string, string) {
	install.once.Do(func() {
		if p, err := exec.LookPath("stripe-mock"); err == nil {
			install.path = p
			return
		}
		bin := os.Getenv("GOBIN")
		if bin == "" {
			out, err := exec.Command("go", "env", "GOPATH").Output()
			if err != nil {
				install.err = "go env GOPATH: " + err.Error()
				return
			}
			bin = filepath.Join(strings.SplitN(strings.TrimSpace(string(out)), string(os.PathListSeparator), 2)[0], "bin")
		}
		p := filepath.Join(bin, "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			install.path = p
			return
		}
		cmd := exec.Command("go", "install", Module)
		cmd.Env = append(os.Environ(), "GOBIN="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			install.err = "go install " + Module + ": " + err.Error() + ": " + strings.TrimSpace(string(out))
			return
		}
		install.path = p
	})
	return install.path, install.err
}

// Start runs stripe-mock on a free port of 127.0.0.1 until the test ends
// and returns its base URL.
func Start(t testing.TB) string {
	t.Helper()
	path, why := binary()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("stripe-mock is required in CI: %s", why)
		}
		t.Skipf("stripe-mock is not available (%s); install it with go install %s", why, Module)
	}
	cmd := exec.Command(path, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it is stopped either way
		cmd.Wait()         //nolint:errcheck // killed
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatal("stripe-mock did not start listening within 60s")
	}
	return ""
}
