package db

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// ErrNotFound is returned for every lookup that finds no row in the tenant.
var ErrNotFound = errors.New("not found")

// Store is oncecall's access to PostgreSQL. Generated sqlc types stop here:
// it turns their rows into the domain types of package oncecall and takes
// those (or parameter structs of this package) as arguments.
type Store struct {
	queries
	pool *pgxpool.Pool
	// jobs queues River jobs in the store's transactions (late.go).
	jobs *river.Client[pgx.Tx]
	// noSyncUntil (Unix nanoseconds) is until when Replicated takes the
	// server to have no synchronous standby without asking it again.
	noSyncUntil atomic.Int64
}

// Tx is a Store view bound to one Read Committed transaction.
type Tx struct {
	queries
	tx   pgx.Tx
	jobs *river.Client[pgx.Tx]
}

// queries holds the methods that work both on the pool and inside a Tx:
// sqlc's, and db for the few statements written in this package.
type queries struct {
	q  *dbsqlc.Queries
	db dbsqlc.DBTX
	// plan names the providers of steps being claimed (SetStepPlanner).
	plan StepPlanner
}

// on returns the queries that run on db.
func on(db dbsqlc.DBTX) queries { return queries{q: dbsqlc.New(db), db: db} }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{queries: on(pool), pool: pool, jobs: newJobs()}
}

// SetStepPlanner installs the planner that names, on every step recorded
// through this Store or its transactions, the provider it is sent to: the
// process's configuration. Set it before the Store is used.
func (s *Store) SetStepPlanner(p StepPlanner) { s.plan = p }

// tx is the Tx of a transaction begun on s's pool.
func (s *Store) tx(tx pgx.Tx) *Tx {
	t := &Tx{queries: on(tx), tx: tx, jobs: s.jobs}
	t.plan = s.plan
	return t
}

// Pool returns the underlying pool (health checks, metrics).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// InTx runs fn in one Read Committed transaction: committed when fn returns
// nil, rolled back otherwise. It does not retry; callers that can repeat the
// whole unit decide that themselves (see Retryable).
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		conn.Release()
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(s.tx(tx)); err != nil {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the connection is dropped if it fails
		conn.Release()
		return err
	}
	// The COMMIT is never cancelled by ctx (see detach).
	return detach(ctx, conn, func(ctx context.Context) error {
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// notFound maps pgx.ErrNoRows to ErrNotFound; the one place that does.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// optionalInterval is NULL for zero.
func optionalInterval(d time.Duration) pgtype.Interval {
	if d == 0 {
		return pgtype.Interval{}
	}
	return interval(d)
}

// interval converts a duration for interval parameters.
func interval(d time.Duration) pgtype.Interval {
	return pgtype.Interval{Microseconds: d.Microseconds(), Valid: true}
}
