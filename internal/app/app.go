// Package app wires oncecall together: the database (an external one or the
// embedded launcher), migrations, the idempotency core, the operations and
// the HTTP server. cmd/oncecall and end-to-end tests start the real program
// through it.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/api"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/booking"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/pgembed"
)

// Config configures a running oncecall.
type Config struct {
	// Addr is the listen address. Default ":8080"; "127.0.0.1:0" picks a port.
	Addr string
	// DatabaseURL selects an existing database; empty starts the embedded one.
	DatabaseURL string
	// DataDir holds the embedded database. Default ".oncecall".
	DataDir string
	// Log receives JSON logs.
	Log zerolog.Logger
	// Core tunes the idempotency core.
	Core idem.Config
	// MaxBodyBytes limits request bodies. Default 64 KiB.
	MaxBodyBytes int64
	// ShutdownTimeout bounds the drain of in-flight requests. Default 15s.
	ShutdownTimeout time.Duration
	// MaxConns sizes the connection pool. Default 20.
	MaxConns int32
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers; slower connections are closed. Default 5s.
	ReadHeaderTimeout time.Duration
}

// Main is a running oncecall.
type Main struct {
	cfg   Config
	pg    *pgembed.Postgres
	pool  *pgxpool.Pool
	store *db.Store
	ln    net.Listener
	srv   *http.Server
}

// Operations returns every operation oncecall offers.
func Operations() *op.Registry {
	return op.NewRegistry(booking.Operations()...)
}

// Start opens the database (starting the embedded one when no URL is
// given), applies migrations and starts listening. Serve runs the server.
func Start(ctx context.Context, cfg Config) (*Main, error) {
	if cfg.Addr == "" {
		cfg.Addr = ":8080"
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 5 * time.Second
	}
	m := &Main{cfg: cfg}
	url := cfg.DatabaseURL
	if url == "" {
		pg, err := StartEmbedded(ctx, cfg.DataDir, cfg.Log)
		if err != nil {
			return nil, err
		}
		m.pg = pg
		url = pg.URL("oncecall")
	}
	pool, err := OpenDB(ctx, url, cfg.MaxConns)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.pool, m.store = pool, db.New(pool)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	m.ln = ln
	handler := api.NewRouter(api.Config{
		Store: m.store, Core: idem.New(m.store, cfg.Core), Ops: Operations(), Log: cfg.Log,
		MaxBodyBytes: cfg.MaxBodyBytes,
	})
	m.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	return m, nil
}

// StartEmbedded starts the embedded PostgreSQL with data under dataDir.
func StartEmbedded(ctx context.Context, dataDir string, log zerolog.Logger) (*pgembed.Postgres, error) {
	if dataDir == "" {
		dataDir = ".oncecall"
	}
	abs, err := filepath.Abs(filepath.Join(dataDir, "pgdata"))
	if err != nil {
		return nil, err
	}
	log.Info().Str("data_dir", abs).Msg("starting embedded PostgreSQL")
	pg, err := pgembed.Start(ctx, pgembed.Config{DataDir: abs})
	if err != nil {
		if errors.Is(err, pgembed.ErrNoBinaries) {
			return nil, err
		}
		return nil, fmt.Errorf("start embedded PostgreSQL: %w", err)
	}
	return pg, nil
}

// OpenDB connects to url, applies the migrations and returns a pool.
func OpenDB(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	if err := Migrate(ctx, url); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	} else {
		pcfg.MaxConns = 20
	}
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

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Store is the running program's store.
func (m *Main) Store() *db.Store { return m.store }

// Embedded is the embedded database, nil when DatabaseURL was given.
func (m *Main) Embedded() *pgembed.Postgres { return m.pg }

// Serve serves until ctx is done, then drains in-flight requests.
func (m *Main) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- m.srv.Serve(m.ln) }()
	m.cfg.Log.Info().Str("addr", m.Addr()).Msg("serving")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.ShutdownTimeout)
	defer cancel()
	if err := m.srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("drain requests: %w", err)
	}
	return nil
}

// Close releases the pool and stops the embedded database.
func (m *Main) Close() error {
	if m.ln != nil {
		m.ln.Close()
	}
	if m.pool != nil {
		m.pool.Close()
	}
	if m.pg != nil {
		return m.pg.Stop()
	}
	return nil
}
