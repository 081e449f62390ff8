package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/app"
)

// serveStartTimeout bounds the start of oncecall until /readyz answers 200.
// Building it is not bounded but by the run's context: a build with
// -trimpath compiles every package again, the standard library included,
// which takes minutes on a loaded machine.
const serveStartTimeout = 5 * time.Minute

// startProcess builds oncecall as `make build` does (unless --oncecall-bin
// names a binary) and runs `oncecall serve` on dbURL as a process of its
// own, as in production: its default configuration except the per-tenant
// limits (the rate limits off and the tenant's share of the pool the whole
// pool, so that the server's admission control, --db-wait, is its only
// gate: the benchmark is one tenant sending as fast as it can, and the
// SQL-only scenarios get the whole pool too) and its periodic prune (off,
// as in the bench's in-process server: pruning at the server's own clock
// would delete or empty the preloaded actions older than the retentions
// during whichever run it fell in, and the prune scenario measures a
// prune it runs itself), JSON logs at info level (written to a pipe that
// the bench drains, keeping the last lines for errors).
func (b *bench) startProcess(ctx context.Context, dbURL string) error {
	bin := b.cfg.oncecallBin
	if bin == "" {
		var err error
		if bin, err = b.buildOncecall(ctx); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, serveStartTimeout)
	defer cancel()
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ONCECALL_ADDR="+addr, "ONCECALL_RATE_LIMIT=0", "ONCECALL_DASHA_RATE_LIMIT=0",
		"ONCECALL_TENANT_DB_REQUESTS="+strconv.Itoa(int(app.DefaultMaxConns())),
		"ONCECALL_PRUNE_INTERVAL=0", "ONCECALL_REQUIRE_DATABASE_URL=1", "LOG_LEVEL=info")
	if b.cfg.answerBytes >= 0 {
		cmd.Env = append(cmd.Env, "ONCECALL_ANSWER_CACHE_BYTES="+strconv.Itoa(b.cfg.answerBytes))
	}
	// Tracing is off unless asked for, whatever the environment says.
	if b.cfg.otlpEndpoint == "" {
		cmd.Env = append(cmd.Env, "OTEL_SDK_DISABLED=true")
	} else {
		cmd.Env = append(cmd.Env, "OTEL_SDK_DISABLED=false", "OTEL_EXPORTER_OTLP_ENDPOINT="+b.cfg.otlpEndpoint,
			"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_TRACES_SAMPLER=always_on", "OTEL_TRACES_EXPORTER=otlp")
	}
	logs := &tail{size: 16 << 10}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := b.startChild(ctx, cmd, "oncecall serve", "http://"+addr+"/readyz", http.StatusOK, logs); err != nil {
		return err
	}
	b.parts = append(b.parts, part{name: "oncecall", pid: cmd.Process.Pid})
	pid := strconv.Itoa(cmd.Process.Pid)
	b.base = "http://" + addr
	b.serverRSS = func() (float64, bool) { return peakRSS(pid) }
	b.rssNote = "oncecall serve, pid " + pid
	return nil
}

// buildOncecall builds oncecall as make build does into a folder removed
// at close, and returns the binary's path.
func (b *bench) buildOncecall(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "oncecall-bench-bin-")
	if err != nil {
		return "", err
	}
	b.closers = append(b.closers, func() error { return os.RemoveAll(dir) })
	bin := filepath.Join(dir, "oncecall")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	b.logf("building oncecall (CGO_ENABLED=0 go build -trimpath -ldflags='-s -w', as make build)")
	build := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/oncecall/oncecall/cmd/oncecall")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build oncecall: %w\n%s", err, out)
	}
	return bin, nil
}

// startChild starts cmd, whose output goes to logs, stops it with SIGTERM
// at close, and waits until a GET of readyURL answers readyStatus.
func (b *bench) startChild(ctx context.Context, cmd *exec.Cmd, name, readyURL string, readyStatus int, logs *tail) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.closers = append(b.closers, func() error {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
		select {
		case err := <-exited:
			var exit *exec.ExitError
			if errors.As(err, &exit) && !exit.Exited() { // ended by the signal
				return nil
			}
			return err
		case <-time.After(30 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-exited
			return fmt.Errorf("%s did not stop within 30s of SIGTERM", name)
		}
	})
	for {
		if resp, err := http.Get(readyURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == readyStatus {
				return nil
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the closer
			return fmt.Errorf("%s exited (%v):\n%s", name, err, logs)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w\n%s", name, readyURL, ctx.Err(), logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu   sync.Mutex
	size int
	buf  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	// Trimmed only past twice the size, so a long run copies little.
	if len(t.buf) > 2*t.size {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.size:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf[max(0, len(t.buf)-t.size):]))
}
