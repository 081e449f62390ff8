package pgtest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// bouncerStartTimeout bounds PgBouncer's start until it answers a query.
const bouncerStartTimeout = 30 * time.Second

// bouncerUser is the OS account PgBouncer runs as when the tests run as
// root, which it refuses; Debian's package runs it as postgres too.
const bouncerUser = "postgres"

// BouncerBinary finds PgBouncer: on PATH, or where Debian installs it.
func BouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/pgbouncer"
	if fi, err := os.Stat(debian); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return debian, nil
	}
	return "", errors.New("pgbouncer is not on PATH or at /usr/sbin/pgbouncer (Debian: apt-get install pgbouncer)")
}

// Bouncer starts PgBouncer in transaction pooling mode in front of the
// server of dbURL, stopped at cleanup, and returns dbURL pointing through
// it. Outside CI (the CI environment variable unset) the test is skipped
// when PgBouncer is not installed; in CI that is a failure, so the tests
// behind it can never pass by not running.
//
// Call it after the database's NewDB, so that PgBouncer stops (its server
// connections closed) before the database is dropped.
func Bouncer(t testing.TB, dbURL string) string {
	t.Helper()
	bin, err := BouncerBinary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: CI runs the tests behind PgBouncer: %v", err)
		}
		t.Skipf("pgtest: skipped, %v; CI installs it and fails without it", err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", redact(dbURL), err)
	}
	dir := t.TempDir()
	// PgBouncer reads its files as the account it runs as.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	users := fmt.Sprintf("%q %q\n", u.User.Username(), password)
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(users), 0o644); err != nil {
		t.Fatal(err)
	}

	for attempt := 1; ; attempt++ {
		port, err := freeTCPPort()
		if err != nil {
			t.Fatalf("pgtest: pick a port for PgBouncer: %v", err)
		}
		through := *u
		through.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err = startBouncer(t, bin, dir, bouncerConfig(u, port, dir), through.String())
		if err == nil {
			return through.String()
		}
		// Another process may have taken the port between the pick and
		// PgBouncer's bind; a fresh one is tried a few times.
		if attempt == 3 || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("pgtest: start PgBouncer: %v", err)
		}
	}
}

// bouncerConfig forwards every database to the server of u and pools server
// connections per transaction.
func bouncerConfig(u *url.URL, port int, dir string) string {
	host, serverPort := u.Hostname(), cmp.Or(u.Port(), "5432")
	return fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
; a pooled server connection serves many clients: session settings cannot
; travel with a client (docs/pgbouncer.md sets them on the database)
ignore_startup_parameters = lock_timeout,statement_timeout,idle_in_transaction_session_timeout
logfile =
pidfile =
`, host, serverPort, port, filepath.Join(dir, "users.txt"))
}

// startBouncer runs PgBouncer with config until the test ends and waits
// until a query through url succeeds.
func startBouncer(t testing.TB, bin, dir, config, url string) error {
	t.Helper()
	cfgPath := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{cfgPath}
	if os.Geteuid() == 0 {
		args = []string{"-u", bouncerUser, cfgPath}
	}
	cmd := exec.Command(bin, args...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-exited
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), bouncerStartTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		if err == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("PgBouncer's log:\n%s", out.String())
				}
			})
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("pgbouncer exited (%v): %s", werr, out.String())
		case <-ctx.Done():
			stop()
			return fmt.Errorf("no answer through PgBouncer within %s: %v\n%s", bouncerStartTimeout, err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects a child's output while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
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
