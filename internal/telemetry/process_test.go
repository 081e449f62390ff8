package telemetry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/testkit/buildtest"
)

// server is `oncecall serve` running as a child process.
type server struct {
	url  string
	mu   sync.Mutex
	logs bytes.Buffer
}

// startServer runs oncecall serve on a free port with env added to the
// test's environment, and stops it (SIGTERM: it flushes its spans) when t
// ends.
func startServer(t *testing.T, env ...string) *server {
	t.Helper()
	s := &server{}
	cmd := exec.Command(buildtest.Command(t, "cmd/oncecall"), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr, done := make(chan string, 1), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			fmt.Fprintln(&s.logs, sc.Text())
			s.mu.Unlock()
			var l struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "serving" {
				addr <- l.Addr
			}
		}
		cmd.Wait() //nolint:errcheck // stopped at cleanup
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) //nolint:errcheck
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-done
		}
	})
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-done:
		t.Fatalf("oncecall exited before serving:\n%s", s.Logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("oncecall did not start:\n%s", s.Logs())
	}
	return s
}

func (s *server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// vapiTool sends one Vapi tool-calls message with one tool call and
// returns the oncecall answer in its result.
func (s *server) vapiTool(t *testing.T, key, callID, caller, tool string, args map[string]any, header ...string) map[string]any {
	t.Helper()
	msg := map[string]any{"message": map[string]any{
		"type": "tool-calls",
		"call": map[string]any{"id": callID, "customer": map[string]any{"number": caller}},
		"toolCallList": []any{map[string]any{
			"id": "tc-" + tool, "type": "function", "function": map[string]any{"name": tool, "arguments": args},
		}},
	}}
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/vapi/webhook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Vapi-Secret", key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Results []struct{ Result, Error string } `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != http.StatusOK || len(ans.Results) != 1 {
		t.Fatalf("%s: %s %v %+v", tool, resp.Status, err, ans)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(ans.Results[0].Result), &out); err != nil {
		t.Fatalf("%s: result %q: %v", tool, ans.Results[0].Result, err)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		<-time.After(50 * time.Millisecond) // poll interval of a condition wait
	}
}

// has reports whether any of needles is in text.
func has(text string, needles ...string) string {
	for _, n := range needles {
		if strings.Contains(text, n) {
			return n
		}
	}
	return ""
}
