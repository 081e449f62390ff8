package netcut_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/testkit/netcut"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// setup returns a direct connection and a proxy to a fresh database with a
// table t(id int).
func setup(t *testing.T) (*pgx.Conn, *netcut.Proxy) {
	t.Helper()
	url := pgtest.NewDB(t)
	direct, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close(context.Background()) })
	if _, err := direct.Exec(t.Context(), "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	return direct, netcut.Start(t, url)
}

func connect(t *testing.T, p *netcut.Proxy) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func rows(t *testing.T, direct *pgx.Conn, id int) int {
	t.Helper()
	var n int
	if err := direct.QueryRow(t.Context(), "SELECT count(*) FROM t WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFired fails the test unless the armed proxy acted within 10s.
func waitFired(t *testing.T, fired <-chan struct{}) {
	t.Helper()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy never saw the COMMIT")
	}
}

// A COMMIT sent as a simple query (pgx's Tx.Commit) is cut before or after
// the server ran it: the client sees the same broken connection, the
// database tells the two apart.
func TestCutAtSimpleCommit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode netcut.Mode
		want int
	}{{netcut.Before, 0}, {netcut.After, 1}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			t.Parallel()
			direct, p := setup(t)
			conn := connect(t, p)
			tx, err := conn.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(t.Context(), "INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			fired := p.Arm(c.mode)
			if err := tx.Commit(t.Context()); err == nil {
				t.Fatal("commit through a cut connection succeeded")
			}
			waitFired(t, fired)
			if n := rows(t, direct, 1); n != c.want {
				t.Fatalf("rows after a cut %s = %d, want %d", c.mode, n, c.want)
			}
		})
	}
}

// A COMMIT queued in a batch is a prepared statement that pgx caches: the
// second time the connection sends it, only a Bind names it. The proxy
// still recognises it.
func TestCutAtCachedCommitInBatch(t *testing.T) {
	t.Parallel()
	direct, p := setup(t)
	conn := connect(t, p)
	send := func(id int) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue("INSERT INTO t VALUES ($1)", id)
		b.Queue("COMMIT")
		return conn.SendBatch(t.Context(), b).Close()
	}
	if err := send(1); err != nil {
		t.Fatal(err)
	}
	fired := p.Arm(netcut.After)
	if err := send(2); err == nil {
		t.Fatal("a batch through a cut connection succeeded")
	}
	waitFired(t, fired)
	if n := rows(t, direct, 2); n != 1 {
		t.Fatalf("the cut batch's row: %d, want 1 (committed)", n)
	}
}

// A stalled COMMIT leaves the transaction open on the server until the
// connection is cut, and then it rolls back.
func TestStallAtCommit(t *testing.T) {
	t.Parallel()
	direct, p := setup(t)
	conn := connect(t, p)
	var pid int
	if err := conn.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	fired := p.Arm(netcut.Stall)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tx.Commit(ctx) }()
	waitFired(t, fired)
	var state string
	if err := direct.QueryRow(t.Context(), "SELECT state FROM pg_stat_activity WHERE pid = $1", pid).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "idle in transaction" {
		t.Fatalf("stalled session is %q", state)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a stalled commit succeeded")
	}
	p.CutAll()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := direct.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut session is still on the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := rows(t, direct, 1); n != 0 {
		t.Fatalf("a stalled, cut commit stored %d rows", n)
	}
}
