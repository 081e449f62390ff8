// Package jaegertest runs a real trace collector for tests: Jaeger's
// all-in-one binary (in-memory storage, the OTLP/HTTP receiver and the
// query API), built from the tools module internal/tools/jaeger, which
// pins its version apart from oncecall's own modules. The build is kept in
// the user's cache folder by version, so only the first run on a machine
// pays for it (docs/observability.md#the-test-with-a-real-collector).
package jaegertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the Jaeger release internal/tools/jaeger pins.
const Version = "v1.75.0"

// UIAssets names the environment variable that may give the folder of a
// built Jaeger UI (its Go module carries none): the query port then serves
// the UI's pages too, for a screenshot of a trace.
const UIAssets = "JAEGERTEST_UI_ASSETS"

// Jaeger is a running collector.
type Jaeger struct {
	// OTLP is the OTLP/HTTP receiver's base URL, for
	// OTEL_EXPORTER_OTLP_ENDPOINT; Query is the query API's and the UI's.
	OTLP, Query string
	logs        *bytes.Buffer
	mu          *sync.Mutex
}

// Start builds Jaeger if needed and starts it on free ports; it is
// stopped when t ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := Binary(t)
	ports := freePorts(t, 3)
	cfg := fmt.Sprintf(config, ports[0], ports[1], ports[2])
	if ui := os.Getenv(UIAssets); ui != "" {
		cfg = strings.Replace(cfg, "  jaeger_query:\n", fmt.Sprintf("  jaeger_query:\n    ui:\n      assets_path: %q\n", ui), 1)
	}
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &Jaeger{
		OTLP: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), Query: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		logs: &bytes.Buffer{}, mu: &sync.Mutex{},
	}
	cmd := exec.Command(bin, "--config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			j.mu.Lock()
			fmt.Fprintln(j.logs, sc.Text())
			j.mu.Unlock()
		}
		cmd.Wait() //nolint:errcheck // killed at cleanup
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck
		<-done
	})
	end := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.Query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case <-done:
			t.Fatalf("jaeger exited before serving:\n%s", j.Logs())
		case <-time.After(100 * time.Millisecond): // poll interval of the start-up wait
		}
		if time.Now().After(end) {
			t.Fatalf("jaeger did not serve its query API within 60s:\n%s", j.Logs())
		}
	}
}

// Logs is what Jaeger printed.
func (j *Jaeger) Logs() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.logs.String()
}

// config is an all-in-one configuration on three ports (OTLP/HTTP, query
// HTTP, query gRPC) of 127.0.0.1, with nothing else listening.
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%[2]d
    grpc:
      endpoint: 127.0.0.1:%[3]d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%[1]d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

var built struct {
	once sync.Once
	path string
	err  error
}

// Binary returns Jaeger's binary, built from internal/tools/jaeger into
// the user's cache folder (named by Version) when it is not there yet. The
// first build on a machine compiles Jaeger's whole dependency graph: about
// 35 minutes on a busy 2-core machine (docs/observability.md), 40 seconds
// when the Go build cache has its packages.
func Binary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = build() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func build() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "oncecall", "jaeger-"+Version+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	bin := filepath.Join(dir, "jaeger")
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	tools := filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "internal", "tools", "jaeger")
	tmp := bin + ".building-" + fmt.Sprint(os.Getpid())
	out, err := exec.Command("go", "build", "-C", tools, "-o", tmp, "github.com/jaegertracing/jaeger/cmd/jaeger").CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build jaeger %s in %s: %v\n%s", Version, tools, err, out)
	}
	// Another test process may have built it meanwhile: the rename
	// replaces one complete binary with another.
	return bin, os.Rename(tmp, bin)
}

// Span is a span as Jaeger's query API returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
}

// Tag is the value of one of the span's tags (attributes), as text.
func (s Span) Tag(key string) (string, bool) {
	for _, tg := range s.Tags {
		if tg.Key == key {
			return fmt.Sprint(tg.Value), true
		}
	}
	return "", false
}

// Parent is the span id of the span's parent in its trace; empty for a
// root.
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// Trace is one trace's spans.
type Trace struct {
	TraceID string `json:"traceID"`
	Spans   []Span `json:"spans"`
}

// Traces returns the service's traces Jaeger holds (at most limit), and
// the query API's raw answer, which a test can search as text.
func (j *Jaeger) Traces(service string, limit int) ([]Trace, []byte, error) {
	return j.get(fmt.Sprintf("/api/traces?service=%s&limit=%d&lookback=1h", service, limit))
}

// Trace returns one trace by its hex id.
func (j *Jaeger) Trace(id string) (Trace, []byte, error) {
	ts, raw, err := j.get("/api/traces/" + id)
	if err != nil || len(ts) == 0 {
		return Trace{}, raw, fmt.Errorf("trace %s: %v", id, err)
	}
	return ts[0], raw, nil
}

func (j *Jaeger) get(path string) ([]Trace, []byte, error) {
	resp, err := http.Get(j.Query + path)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, body.Bytes(), fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	var out struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(body.Bytes(), &out); err != nil {
		return nil, body.Bytes(), err
	}
	return out.Data, body.Bytes(), nil
}
