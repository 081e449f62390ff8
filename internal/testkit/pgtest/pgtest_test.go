package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestDatabasesAreIndependent(t *testing.T) {
	a, b := pgtest.NewPool(t), pgtest.NewPool(t)
	ctx := t.Context()

	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	for name, pool := range map[string]interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}{"a": a, "b": b} {
		var inA, migrated bool
		err := pool.QueryRow(ctx, "SELECT to_regclass('only_in_a') IS NOT NULL, to_regclass('schema_migrations') IS NOT NULL").Scan(&inA, &migrated)
		if err != nil {
			t.Fatal(err)
		}
		if inA != (name == "a") {
			t.Errorf("database %s: table only_in_a present = %v", name, inA)
		}
		if !migrated {
			t.Errorf("database %s was not cloned from the migrated template", name)
		}
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	var dbname string
	t.Run("uses a database", func(t *testing.T) {
		pool := pgtest.NewPool(t)
		if err := pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&dbname); err != nil {
			t.Fatal(err)
		}
		// Left open on purpose: cleanup must drop the database regardless.
		if _, err := pool.Exec(t.Context(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	})
	// The subtest's cleanups have run by now.
	if dbname == "" {
		t.Fatal("subtest did not report its database")
	}
	if exists(t, dbname) {
		t.Fatalf("database %s still exists after its test ended", dbname)
	}
}

func TestParallelClones(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			conn, err := pgx.Connect(t.Context(), pgtest.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(t.Context(), "SELECT 1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestServerMatchesMode(t *testing.T) {
	embedded := os.Getenv("TEST_DATABASE_URL") == ""
	if got := pgtest.Server() != nil; got != embedded {
		t.Fatalf("Server() != nil is %v, want %v", got, embedded)
	}
}

func exists(t *testing.T, dbname string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbname).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}
