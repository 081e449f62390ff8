package db_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Every connection of a pool configured as oncecall configures its pool
// (db.Configure, db.SetTimeouts with a zero Timeouts) carries the
// documented default timeouts.
func TestPoolConnectionsHaveDatabaseTimeouts(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	db.Configure(cfg)
	db.SetTimeouts(cfg, db.Timeouts{})
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for name, want := range map[string]string{
		"lock_timeout": "2s", "statement_timeout": "5s", "idle_in_transaction_session_timeout": "10s",
	} {
		var got string
		if err := pool.QueryRow(t.Context(), "SELECT current_setting($1)", name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
}
