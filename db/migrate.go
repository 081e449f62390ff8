// Package db owns oncecall's PostgreSQL schema: the embedded migrations, the
// sqlc-generated queries in dbsqlc, and the Store that wraps them.
package db

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockID is the advisory lock that serialises concurrent migrators
// (several replicas starting at once).
const migrateLockID = 0x6f6e636563616c6c // "oncecall"

type migration struct {
	version string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, name := range names {
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		out = append(out, migration{version: version, sql: string(body)})
	}
	return out, nil
}

// MigrationsHash identifies the schema the embedded migrations produce; test
// templates are named by it.
func MigrationsHash() string {
	ms, err := migrations()
	if err != nil {
		panic(err) // embedded files: cannot fail at run time
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%s\x00%s\x00", m.version, m.sql)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// LatestVersion is the version of the newest embedded migration.
func LatestVersion() string {
	ms, _ := migrations()
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1].version
}

// Migrate applies every embedded migration not yet applied, each in its own
// transaction. Each transaction first takes a transaction-scoped advisory
// lock, so concurrent callers apply each migration exactly once; a lock held
// by the transaction, not the session, also holds through a proxy that lends
// server connections per transaction (PgBouncer's transaction pooling),
// where a session lock could be taken on one server connection, left on it
// and meet the next migrator there.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	locked := func(step func(tx pgx.Tx) error) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLockID)); err != nil {
				return fmt.Errorf("take migration lock: %w", err)
			}
			return step(tx)
		})
	}
	if err := locked(func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version text PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := locked(func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1) ON CONFLICT DO NOTHING", m.version)
			if err != nil || tag.RowsAffected() == 0 {
				return err
			}
			_, err = tx.Exec(ctx, m.sql)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", m.version, err)
		}
	}
	return nil
}

// Applied reports whether every embedded migration has been applied.
func Applied(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)", LatestVersion()).Scan(&ok)
	return ok, err
}
