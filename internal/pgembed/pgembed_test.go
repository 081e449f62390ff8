package pgembed_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/pgembed"
)

// clusterDir returns a fresh directory for a cluster. t.TempDir is not used
// because its 0700 parents keep out the postgres account when tests run as
// root.
func clusterDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgembed-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "data")
}

func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := pgembed.FindBinDir(); errors.Is(err, pgembed.ErrNoBinaries) {
		t.Skip(err)
	}
}

func TestErrNoBinariesExplainsFix(t *testing.T) {
	for _, want := range []string{"DATABASE_URL", "apt-get install postgresql", "brew install postgresql"} {
		if !strings.Contains(pgembed.ErrNoBinaries.Error(), want) {
			t.Errorf("ErrNoBinaries = %q, want it to mention %q", pgembed.ErrNoBinaries, want)
		}
	}
}

func TestLifecycle(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	log := new(lockedBuffer)
	cfg := pgembed.Config{DataDir: clusterDir(t), Fast: true, Log: log}
	pg, err := pgembed.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })

	execSQL(t, ctx, pg.URL("oncecall"), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	if got := queryInt(t, ctx, pg.URL("oncecall"), "SELECT 1"); got != 1 {
		t.Fatalf("SELECT 1 = %d", got)
	}

	t.Run("stop and start again keeps data", func(t *testing.T) {
		if err := pg.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := pg.Stop(); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		pg, err = pgembed.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := queryInt(t, ctx, pg.URL("oncecall"), "SELECT v FROM kept"); got != 42 {
			t.Fatalf("after restart: v = %d, want 42", got)
		}
	})

	t.Run("restart on the same port", func(t *testing.T) {
		port := pg.Port()
		if err := pg.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if pg.Port() != port {
			t.Fatalf("port changed from %d to %d", port, pg.Port())
		}
		if got := queryInt(t, ctx, pg.URL("oncecall"), "SELECT v FROM kept"); got != 42 {
			t.Fatalf("after restart: v = %d, want 42", got)
		}
	})

	t.Run("recovers after kill", func(t *testing.T) {
		// A connection left open across the crash must not hold up recovery.
		conn, err := pgx.Connect(ctx, pg.URL("oncecall"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := pg.Kill(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(pg.DataDir(), "postmaster.pid")); err != nil {
			t.Fatalf("a crash should leave postmaster.pid behind: %v", err)
		}
		pg, err = pgembed.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := queryInt(t, ctx, pg.URL("oncecall"), "SELECT v FROM kept"); got != 42 {
			t.Fatalf("after crash: v = %d, want 42", got)
		}
		if err := pg.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := pg.Restart(ctx); err != nil {
			t.Fatalf("Restart after Kill: %v", err)
		}
		if got := queryInt(t, ctx, pg.URL("oncecall"), "SELECT v FROM kept"); got != 42 {
			t.Fatalf("after crash and Restart: v = %d, want 42", got)
		}
	})

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "database system is ready to accept connections") {
		t.Errorf("server output did not reach Config.Log:\n%s", log.String())
	}
}

func TestStartReportsServerLog(t *testing.T) {
	requireBinaries(t)
	dir := clusterDir(t)
	// A data directory that is not empty but holds no cluster makes initdb
	// fail; the error must say why.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pgembed.Start(t.Context(), pgembed.Config{DataDir: dir, Fast: true})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Start() error = %v, want initdb's complaint about a non-empty directory", err)
	}
	if _, statErr := os.Stat(dir + ".log"); statErr != nil {
		t.Errorf("default log file: %v", statErr)
	}
}

func TestStartOnTakenPort(t *testing.T) {
	requireBinaries(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = pgembed.Start(t.Context(), pgembed.Config{DataDir: clusterDir(t), Port: port, Fast: true})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Start() on taken port %d: error = %v, want it to say the port is in use", port, err)
	}
}

func TestStartAsRootNamesUnreachableDir(t *testing.T) {
	requireBinaries(t)
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to another account")
	}
	// t.TempDir nests two directories of mode 0700 owned by root; the outer
	// one is the first the postgres account cannot enter.
	locked := t.TempDir()
	_, err := pgembed.Start(t.Context(), pgembed.Config{DataDir: filepath.Join(locked, "data")})
	if want := filepath.Dir(locked) + " (mode 0700)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start() error = %v, want it to name %s", err, want)
	}
}

func execSQL(t *testing.T, ctx context.Context, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func queryInt(t *testing.T, ctx context.Context, url, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lockedBuffer collects server output, written from the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
