// Package pgtest owns the PostgreSQL that tests run against: per test
// process, one server (an embedded one unless TEST_DATABASE_URL names an
// existing server) and one template database with the migrations applied;
// per test, a fresh database cloned from that template and dropped at
// cleanup.
//
// Every name it creates carries a random suffix, so test processes running
// in parallel against one server never see each other's databases, and
// nothing depends on what an earlier run left behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/pgembed"
)

const (
	// setupTimeout bounds starting the server and migrating the template.
	setupTimeout = 3 * time.Minute
	// cloneTimeout bounds creating or dropping one test database, including
	// retries while the template is briefly in use.
	cloneTimeout = time.Minute
)

// env is what Main set up for this test process. It is written once by Main
// before m.Run and only read by tests afterwards, which is why package-level
// state is acceptable here.
var env *environment

type environment struct {
	adminURL string // maintenance database of the server in use
	template string // name of the migrated template database
	server   *pgembed.Postgres
	admin    *pgxpool.Pool // on adminURL; issues CREATE/DROP DATABASE
	err      error         // why setup failed, if it did
}

// Main prepares the server and template, runs the tests and tears down what
// it created. Call it from TestMain: os.Exit(pgtest.Main(m)).
//
// If TEST_DATABASE_URL is set, it names a server on which the tests may
// create databases; otherwise a throwaway embedded server is started. If
// setup fails, the tests still run (those not needing a database pass) and
// each NewDB call fails with the reason.
func Main(m *testing.M) int {
	// A fuzz worker only runs fuzz functions, which take no database;
	// starting a server in each worker would eat the fuzzing time.
	if slices.Contains(os.Args[1:], "-test.fuzzworker") {
		return m.Run()
	}
	e, teardown := setup()
	env = e
	if e.err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", e.err)
	}
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// setup returns the environment and a teardown that undoes whatever part of
// it succeeded.
func setup() (*environment, func() error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()

	e := &environment{}
	var undo []func() error
	teardown := func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*environment, func() error) {
		e.err = err
		return e, teardown
	}

	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		if _, err := withDatabase(u, "postgres"); err != nil {
			return fail(fmt.Errorf("TEST_DATABASE_URL: %w", err))
		}
		e.adminURL = u
	} else {
		// Not t.TempDir: there is no t yet, and when tests run as root the
		// postgres account must be able to enter the directory.
		dir, err := os.MkdirTemp("", "oncecall-pgtest-")
		if err != nil {
			return fail(err)
		}
		undo = append(undo, func() error { return os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			return fail(err)
		}
		srv, err := pgembed.Start(ctx, pgembed.Config{DataDir: filepath.Join(dir, "data"), Fast: true})
		if err != nil {
			return fail(fmt.Errorf("no test database: set TEST_DATABASE_URL to a server where tests may create databases, or fix: %w", err))
		}
		undo = append(undo, srv.Stop)
		e.server = srv
		e.adminURL = srv.URL("postgres")
	}

	admin, err := pgxpool.New(ctx, e.adminURL)
	if err != nil {
		return fail(fmt.Errorf("connect to %s: %w", redact(e.adminURL), err))
	}
	undo = append(undo, func() error { admin.Close(); return nil })
	e.admin = admin

	tpl := "oncecall_tpl_" + db.MigrationsHash() + "_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		return fail(fmt.Errorf("create template database: %w", err))
	}
	undo = append(undo, func() error { return dropDatabase(admin, tpl) })
	if err := migrate(ctx, e.adminURL, tpl); err != nil {
		return fail(err)
	}
	// Clones fail while anyone is connected to the template; refusing
	// connections keeps a stray session from ever causing that.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{tpl}.Sanitize()+" ALLOW_CONNECTIONS false"); err != nil {
		return fail(fmt.Errorf("seal template database: %w", err))
	}
	e.template = tpl
	return e, teardown
}

func migrate(ctx context.Context, adminURL, dbname string) error {
	u, err := withDatabase(adminURL, dbname)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return fmt.Errorf("connect to template database: %w", err)
	}
	// Closed before the template is cloned: CREATE DATABASE ... TEMPLATE
	// fails while the source has sessions.
	defer conn.Close(context.WithoutCancel(ctx))
	if err := db.Migrate(ctx, conn); err != nil {
		return fmt.Errorf("migrate template database: %w", err)
	}
	return nil
}

// NewDB creates a database with the migrations applied, dropped when the
// test ends, and returns its URL.
func NewDB(t testing.TB) string {
	t.Helper()
	e := ready(t)
	return newDB(t, e, " TEMPLATE "+pgx.Identifier{e.template}.Sanitize())
}

// NewEmptyDB creates a database without the migrations (for tests of the
// migrations themselves), dropped when the test ends, and returns its URL.
func NewEmptyDB(t testing.TB) string {
	t.Helper()
	return newDB(t, ready(t), "")
}

func newDB(t testing.TB, e *environment, options string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cloneTimeout)
	defer cancel()

	name := "oncecall_test_" + randomSuffix()
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + options
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		_, err := e.admin.Exec(ctx, create)
		if err == nil {
			break
		}
		// 55006: "source database is being accessed by other users", e.g.
		// by a concurrent clone on some server versions or autovacuum.
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != "55006" {
			t.Fatalf("pgtest: create test database: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: create test database: template stayed busy: %v", err)
		case <-time.After(delay):
		}
	}
	t.Cleanup(func() {
		if err := dropDatabase(e.admin, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})

	u, err := withDatabase(e.adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// NewPool is NewDB plus a pool on the new database, closed at cleanup
// before the database is dropped.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewDB(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	// Registered after NewDB's cleanup, so it runs first.
	t.Cleanup(pool.Close)
	return pool
}

// Server returns the embedded server, so tests can Restart or Kill it; nil
// when TEST_DATABASE_URL is in use or Main has not run.
func Server() *pgembed.Postgres {
	if env == nil {
		return nil
	}
	return env.server
}

// AdminURL is the URL of the maintenance database of the server in use;
// empty if Main has not set one up.
func AdminURL() string {
	if env == nil {
		return ""
	}
	return env.adminURL
}

func ready(t testing.TB) *environment {
	t.Helper()
	switch {
	case env == nil:
		t.Fatal("pgtest: Main has not run; add to this package's tests:\n\tfunc TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }")
	case env.err != nil:
		t.Fatalf("pgtest: %v", env.err)
	}
	return env
}

func dropDatabase(admin *pgxpool.Pool, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cloneTimeout)
	defer cancel()
	// FORCE: a test may leave connections open (or leak a pool); they must
	// not keep its database alive.
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// withDatabase returns connURL pointing at database dbname instead.
func withDatabase(connURL, dbname string) (string, error) {
	u, err := url.Parse(connURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%q is not a postgres:// URL", redact(connURL))
	}
	u.Path = "/" + dbname
	u.RawPath = ""
	q := u.Query()
	if q.Has("dbname") {
		q.Del("dbname")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// redact hides a password before a URL goes into test output.
func redact(connURL string) string {
	u, err := url.Parse(connURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// randomSuffix tells apart databases of concurrent test processes that share
// a server.
func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
