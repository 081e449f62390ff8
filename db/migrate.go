// Package db owns oncecall's PostgreSQL schema: the embedded migrations, the
// sqlc-generated queries in dbsqlc, and the Store that wraps them.
package db

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
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
	version  string
	sql      string
	checksum string // hex SHA-256 of the file, recorded in schema_migrations
}

// ErrMigrationChanged is returned (wrapped, naming the migration) by Migrate
// when a migration this database applied differs from the embedded file of
// the same version: the schema is not the one this build expects, so it
// refuses to run on it.
var ErrMigrationChanged = errors.New("migration changed after it was applied")

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
		sum := sha256.Sum256(body)
		out = append(out, migration{version: version, sql: string(body), checksum: hex.EncodeToString(sum[:])})
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
// transaction, and records its version and checksum. It first compares the
// checksums recorded for migrations already applied with the embedded files
// and returns ErrMigrationChanged, applying nothing, when one differs. A
// migration recorded without a checksum (by a build from before checksums
// were recorded) is accepted as applied and gets the embedded file's
// checksum; migration 0012 restates what such a build's 0010 may have
// lacked. Each transaction first takes a transaction-scoped advisory lock,
// so concurrent callers apply each migration exactly once; a lock held
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
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version text PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now(),
			checksum text)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		// A table created by a build from before checksums: add the column
		// (the check keeps every later start from taking the table's lock).
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
			WHERE attrelid = 'schema_migrations'::regclass AND attname = 'checksum' AND NOT attisdropped)`).Scan(&has); err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		if !has {
			if _, err := tx.Exec(ctx, "ALTER TABLE schema_migrations ADD COLUMN checksum text"); err != nil {
				return fmt.Errorf("add schema_migrations.checksum: %w", err)
			}
		}
		return verify(ctx, tx, ms)
	}); err != nil {
		return err
	}
	for _, m := range ms {
		err := locked(func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2) ON CONFLICT DO NOTHING", m.version, m.checksum)
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

// verify compares the recorded checksum of every applied migration with the
// embedded file of its version and records the checksum of those applied
// without one.
func verify(ctx context.Context, tx pgx.Tx, ms []migration) error {
	rows, err := tx.Query(ctx, "SELECT version, checksum FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	recorded := map[string]*string{}
	for rows.Next() {
		var version string
		var sum *string
		if err := rows.Scan(&version, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		recorded[version] = sum
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	var changed []error
	var adopt []migration
	for _, m := range ms {
		sum, applied := recorded[m.version]
		switch {
		case !applied:
		case sum == nil:
			adopt = append(adopt, m)
		case *sum != m.checksum:
			changed = append(changed, fmt.Errorf("%w: %s.sql was applied to this database with sha256 %s, this build's file has %s; "+
				"a migration is never edited once released: run a build whose %s.sql matches, and put any change in a new migration",
				ErrMigrationChanged, m.version, *sum, m.checksum, m.version))
		}
	}
	if len(changed) > 0 {
		return errors.Join(changed...)
	}
	for _, m := range adopt {
		if _, err := tx.Exec(ctx, "UPDATE schema_migrations SET checksum = $2 WHERE version = $1 AND checksum IS NULL", m.version, m.checksum); err != nil {
			return fmt.Errorf("record checksum of migration %s: %w", m.version, err)
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
