package db_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Replicas starting at once migrate an empty database together, directly
// and through PgBouncer's transaction pooling: each migration is applied
// once, all of them succeed, and no migration lock is left behind on a
// pooled server connection to stall the next deploy.
func TestConcurrentMigrationsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	direct := pgtest.NewEmptyDB(t)
	bounced := pgtest.Bouncer(t, direct) + "&default_query_exec_mode=cache_describe"

	const migrators = 6
	errs := make([]error, migrators)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range migrators {
		url := bounced
		if i == 0 {
			url = direct
		}
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close(context.WithoutCancel(ctx))
			<-start
			errs[i] = db.Migrate(ctx, conn)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}

	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if ok, err := db.Applied(ctx, conn); err != nil || !ok {
		t.Fatalf("latest migration %s applied: %v %v", db.LatestVersion(), ok, err)
	}
	var versions, distinct int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	entries, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if versions != len(entries) || distinct != versions {
		t.Fatalf("schema_migrations holds %d rows (%d distinct) for %d migrations", versions, distinct, len(entries))
	}
	var held int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND d.datname = current_database()`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Fatalf("%d advisory locks still held on the database after migrating", held)
	}
}
