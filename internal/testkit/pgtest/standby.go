package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/pgembed"
)

// standbyName is the standby's application_name, the one the primary's
// synchronous_standby_names waits for.
const standbyName = "oncecall_standby"

// pairTimeout bounds starting both servers and the base backup.
const pairTimeout = 2 * time.Minute

// Pair is a primary and one synchronous standby on loopback, each its own
// server apart from the one of the other tests: a COMMIT on the primary
// answers only once the standby has flushed it, as under Patroni's
// synchronous mode.
type Pair struct {
	Primary, Standby *pgembed.Postgres
}

// SyncPair starts a primary with the database "oncecall" and a standby
// copied from it that it waits for on every COMMIT, both stopped at
// cleanup. Outside CI the test is skipped when no PostgreSQL server
// binaries are installed; in CI that is a failure.
func SyncPair(t testing.TB) *Pair {
	t.Helper()
	if _, err := pgembed.FindBinDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: CI runs the replication tests: %v", err)
		}
		t.Skipf("pgtest: skipped, %v; CI installs them and fails without them", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pairTimeout)
	defer cancel()
	// Not t.TempDir: when tests run as root the postgres account must be
	// able to enter it.
	dir, err := os.MkdirTemp("", "oncecall-pair-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// fsync off keeps it fast; the standby's flush report, which a
	// synchronous commit waits for, is sent all the same.
	primary, err := pgembed.Start(ctx, pgembed.Config{
		DataDir: filepath.Join(dir, "primary"), MaxConnections: 50,
		Settings: map[string]string{
			"fsync": "off", "synchronous_commit": "on", "wal_sender_timeout": "0",
		},
	})
	if err != nil {
		t.Fatalf("pgtest: start primary: %v", err)
	}
	t.Cleanup(func() { primary.Stop() })
	standbyCfg := pgembed.Config{
		DataDir: filepath.Join(dir, "standby"), MaxConnections: 50,
		Settings: map[string]string{
			"fsync": "off", "hot_standby": "on", "wal_receiver_timeout": "0",
			"primary_conninfo": fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s", primary.Port(), pgembed.Superuser, standbyName),
		},
	}
	if err := pgembed.BaseBackup(ctx, primary, standbyCfg); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	standby, err := pgembed.Start(ctx, standbyCfg)
	if err != nil {
		t.Fatalf("pgtest: start standby: %v", err)
	}
	// Registered after the primary's: it stops first, so the primary's
	// stop does not wait for a standby that is gone.
	t.Cleanup(func() { standby.Stop() })
	p := &Pair{Primary: primary, Standby: standby}
	// Only now: the primary's own setup (its database) must not wait for a
	// standby that does not exist yet.
	var ok bool
	if err := p.query(ctx, primary, "ALTER SYSTEM SET synchronous_standby_names = '"+standbyName+"'", nil); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := p.query(ctx, primary, "SELECT pg_reload_conf()", &ok); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	p.waitSync(t, ctx)
	return p
}

// waitSync waits until the primary counts the standby as synchronous.
func (p *Pair) waitSync(t testing.TB, ctx context.Context) {
	t.Helper()
	for {
		var n int
		err := p.query(ctx, p.Primary, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'", &n)
		if err == nil && n == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: the standby never became synchronous (%v)", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the URL of database dbname on the primary.
func (p *Pair) URL(dbname string) string { return p.Primary.URL(dbname) }

// MultiHostURL names database dbname on both servers, standby first, with
// target_session_attrs=read-write: a client connects to whichever accepts
// writes.
func (p *Pair) MultiHostURL(dbname string) string {
	u, _ := url.Parse(p.Primary.URL(dbname))
	s, _ := url.Parse(p.Standby.URL(dbname))
	u.Host = s.Host + "," + u.Host
	u.RawQuery += "&target_session_attrs=read-write"
	return u.String()
}

// StallReceiver stops the standby's WAL receiver process (SIGSTOP), as a
// standby that hangs or a network that drops its traffic would: from then
// on every COMMIT on the primary waits. The returned resume lets it go on;
// it is also called at cleanup.
func (p *Pair) StallReceiver(t testing.TB) (resume func()) {
	t.Helper()
	var pid int
	if err := p.query(t.Context(), p.Standby, "SELECT pid FROM pg_stat_wal_receiver", &pid); err != nil {
		t.Fatalf("pgtest: find the WAL receiver: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pgtest: stop the WAL receiver: %v", err)
	}
	stopped := true
	resume = func() {
		if stopped {
			stopped = false
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Errorf("pgtest: resume the WAL receiver: %v", err)
			}
		}
	}
	t.Cleanup(resume)
	return resume
}

// WaitCommitWaits waits until a session of database dbname on the primary
// is in a COMMIT waiting for the standby, and returns its process id.
func (p *Pair) WaitCommitWaits(t testing.TB, dbname string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		var pid int
		err := p.query(ctx, p.Primary,
			"SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND datname = $1", &pid, dbname)
		if err == nil && pid != 0 {
			return pid
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: no COMMIT ever waited for the standby (%v)", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StandbyCount runs a count query on the standby's database dbname: what
// the standby has, so what a failover at this moment would keep.
func (p *Pair) StandbyCount(t testing.TB, dbname, query string, args ...any) int {
	t.Helper()
	var n int
	if err := p.queryDB(t.Context(), p.Standby, dbname, query, &n, args...); err != nil {
		t.Fatalf("pgtest: standby: %v", err)
	}
	return n
}

// WaitStandby waits until the standby has replayed everything the primary
// has written so far.
func (p *Pair) WaitStandby(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var lsn string
	if err := p.query(ctx, p.Primary, "SELECT pg_current_wal_lsn()::text", &lsn); err != nil {
		t.Fatal(err)
	}
	for {
		var done bool
		err := p.query(ctx, p.Standby, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", &done, lsn)
		if err == nil && done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: the standby never replayed up to %s (%v)", lsn, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// query scans the one value query returns (runs it, when dest is nil) on srv's maintenance database,
// over a connection of its own.
func (p *Pair) query(ctx context.Context, srv *pgembed.Postgres, query string, dest any, args ...any) error {
	return p.queryDB(ctx, srv, "postgres", query, dest, args...)
}

func (p *Pair) queryDB(ctx context.Context, srv *pgembed.Postgres, dbname, query string, dest any, args ...any) error {
	conn, err := pgx.Connect(ctx, srv.URL(dbname))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if dest == nil {
		_, err := conn.Exec(ctx, query, args...)
		return err
	}
	return conn.QueryRow(ctx, query, args...).Scan(dest)
}
