package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// What the durable-confirmation check (db.Store.Replicated) adds to a
// replay, against one round trip (SELECT 1): with a synchronous standby on
// loopback, and with none configured, when it writes nothing. The figures
// are in docs/performance.md.
func BenchmarkReplicated(b *testing.B) {
	pair := pgtest.SyncPair(b)
	cfg, err := pgxpool.ParseConfig(pair.URL("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	db.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	store := db.New(pool)
	roundTrip := func(b *testing.B) {
		for b.Loop() {
			if _, err := pool.Exec(b.Context(), "SELECT 1"); err != nil {
				b.Fatal(err)
			}
		}
	}
	walLSN := func(b *testing.B) (lsn int64) {
		if err := pool.QueryRow(b.Context(), "SELECT pg_current_wal_lsn() - '0/0'").Scan(&lsn); err != nil {
			b.Fatal(err)
		}
		return lsn
	}
	replicated := func(b *testing.B) {
		start := walLSN(b)
		for b.Loop() {
			if err := store.Replicated(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(walLSN(b)-start)/float64(b.N), "WAL-B/op")
	}
	b.Run("round_trip", roundTrip)
	b.Run("sync_standby", replicated)
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	// Each session rereads the configuration before its next statement.
	for {
		var names string
		if err := pool.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&names); err != nil {
			b.Fatal(err)
		}
		if names == "" {
			break
		}
		if ctx.Err() != nil {
			b.Fatal("synchronous_standby_names was never cleared")
		}
	}
	b.Run("no_standby", replicated)
}
