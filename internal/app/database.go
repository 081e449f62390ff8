package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/pgembed"
)

// StartEmbedded starts the embedded PostgreSQL with data under dataDir, on
// a free port.
func StartEmbedded(ctx context.Context, dataDir string, log zerolog.Logger) (*pgembed.Postgres, error) {
	return StartEmbeddedOn(ctx, dataDir, 0, log)
}

// StartEmbeddedOn is StartEmbedded on the given port (0: a free one).
func StartEmbeddedOn(ctx context.Context, dataDir string, port int, log zerolog.Logger) (*pgembed.Postgres, error) {
	if dataDir == "" {
		dataDir = ".oncecall"
	}
	abs, err := filepath.Abs(filepath.Join(dataDir, "pgdata"))
	if err != nil {
		return nil, err
	}
	log.Info().Str("data_dir", abs).Int("port", port).Msg("starting embedded PostgreSQL")
	pg, err := pgembed.Start(ctx, pgembed.Config{DataDir: abs, Port: port})
	if err != nil {
		if errors.Is(err, pgembed.ErrNoBinaries) {
			return nil, err
		}
		return nil, fmt.Errorf("start embedded PostgreSQL: %w", err)
	}
	return pg, nil
}

// OpenDB connects to url, applies the migrations (on migrateURL when it is
// set, url otherwise) and returns a pool on url whose connections have the
// default timeouts.
func OpenDB(ctx context.Context, url, migrateURL string, maxConns int32) (*pgxpool.Pool, error) {
	return OpenPool(ctx, url, migrateURL, maxConns, db.Timeouts{})
}

// OpenPool is OpenDB with the given timeouts. Migrations run on their own
// connection first, without them.
func OpenPool(ctx context.Context, url, migrateURL string, maxConns int32, timeouts db.Timeouts) (*pgxpool.Pool, error) {
	if err := Migrate(ctx, cmp.Or(migrateURL, url)); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	pcfg.MaxConns = cmp.Or(maxConns, DefaultMaxConns())
	db.Configure(pcfg)
	db.SetTimeouts(pcfg, timeouts)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}

// Migrate applies the embedded migrations to the database at url.
func Migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return db.Migrate(ctx, conn)
}
