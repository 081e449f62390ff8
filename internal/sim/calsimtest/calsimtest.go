// Package calsimtest runs cmd/calendarsim as a real child process for
// tests: built once per test binary, started on a free port, ready once it
// logs where it listens, killed at cleanup.
package calsimtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/calendarsim once per test binary (into a folder
// removed when the process exits through Cleanup's last caller) and
// returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "calendarsim-")
		if err != nil {
			buildErr = err
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		binPath = filepath.Join(dir, "calendarsim")
		out, err := exec.Command(goBin, "build", "-o", binPath, "github.com/oncecall/oncecall/cmd/calendarsim").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build calendarsim: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Remove deletes the built binary; call it from TestMain after m.Run.
func Remove() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}

// Process is a running simulator.
type Process struct {
	t   testing.TB
	URL string

	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   sync.Mutex
	done chan struct{}
}

// Start runs the simulator for provider ("google", "microsoft", "calcom")
// with extra flags, and waits up to 20s for it to listen.
func Start(t testing.TB, provider string, args ...string) *Process {
	t.Helper()
	bin := Binary(t)
	p := &Process{t: t, logs: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"--provider", provider, "--addr", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), "LOG_LEVEL=info")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start calendarsim: %v", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.Write(append(sc.Bytes(), '\n'))
			p.mu.Unlock()
			var l struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "listening" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Kill)
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		t.Fatalf("calendarsim exited before listening:\n%s", p.Logs())
	case <-time.After(20 * time.Second):
		t.Fatalf("calendarsim did not listen within 20s:\n%s", p.Logs())
	}
	return p
}

// Logs is what the simulator wrote on stderr.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Fault adds a fault rule (POST /sim/faults).
func (p *Process) Fault(r simkit.Rule) {
	p.t.Helper()
	p.Call(http.MethodPost, "/sim/faults", r, http.StatusCreated, nil)
}

// ClearFaults removes every rule.
func (p *Process) ClearFaults() {
	p.t.Helper()
	p.Call(http.MethodDelete, "/sim/faults", nil, http.StatusNoContent, nil)
}

// Call sends a JSON request to the simulator, requires status, and decodes
// the answer into out (when not nil).
func (p *Process) Call(method, path string, body any, status int, out any) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.URL+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		p.t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			p.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// WritesDelayed is how many writes are waiting out a delay fault (GET
// /sim/healthz): they reached the simulator and will be done.
func (p *Process) WritesDelayed() int {
	p.t.Helper()
	var h struct {
		WritesDelayed int `json:"writes_delayed"`
	}
	p.Call(http.MethodGet, "/sim/healthz", nil, http.StatusOK, &h)
	return h.WritesDelayed
}
