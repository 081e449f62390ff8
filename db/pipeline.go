package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// A claim's transaction needs four round trips when each statement waits
// for the one before: BEGIN, the claim, the work, the completion and COMMIT.
// Two of them carry no decision: BEGIN can travel with the claim and COMMIT
// with the completion. ClaimTx pipelines them, so a local action costs the
// claim, its own writes and one final round trip.

// errRecorded is what a recorder answers instead of running a statement.
var errRecorded = errors.New("statement recorded, not run")

// recorder is a dbsqlc.DBTX that keeps the statement a sqlc method would
// run, so it can be queued in a batch with the generated SQL and arguments.
type recorder struct {
	sql  string
	args []any
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.sql, r.args = sql, args
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.sql, r.args = sql, args
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.sql, r.args = sql, args
	return recordedRow{}
}

type recordedRow struct{}

func (recordedRow) Scan(...any) error { return errRecorded }

// record runs a sqlc method against a recorder and queues its statement.
func record(b *pgx.Batch, call func(q *dbsqlc.Queries) error) error {
	r := &recorder{}
	if err := call(dbsqlc.New(r)); !errors.Is(err, errRecorded) {
		return fmt.Errorf("record statement: %v", err)
	}
	b.Queue(r.sql, r.args...)
	return nil
}

// ClaimTx claims c in a new Read Committed transaction (BEGIN and the claim
// sent together, the claim bounded by claimCtx) and, if this call claimed
// it, runs fn in that transaction. When fn returns a completion it is sent
// together with COMMIT; when it returns nil the transaction is committed as
// is. Any error rolls everything back, so the key is free again.
func (s *Store) ClaimTx(ctx, claimCtx context.Context, c Claim, fn func(*Tx) (*Completion, error)) (claimed bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire connection: %w", err)
	}
	committing := false
	defer func() {
		if !committing {
			// A COMMIT sent in a batch leaves pgx's Tx unaware that it
			// ended; the connection's own status tells whether anything is
			// left open.
			rollbackOpen(context.WithoutCancel(ctx), conn)
			conn.Release()
		}
	}()

	begin := &pgx.Batch{}
	begin.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err := record(begin, func(q *dbsqlc.Queries) error {
		_, err := q.ClaimAction(ctx, claimParams(c))
		return err
	}); err != nil {
		return false, err
	}
	br := conn.SendBatch(claimCtx, begin)
	tx := br.Tx()
	var id uuid.UUID
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&id)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim action: %w", err)
	}

	done, err := fn(&Tx{queries: queries{q: dbsqlc.New(tx)}, tx: tx})
	if err != nil {
		return true, err
	}
	// From here on the connection belongs to the commit (see detach).
	committing = true
	return true, detach(ctx, conn, func(ctx context.Context) error {
		defer rollbackOpen(ctx, conn)
		if done == nil {
			if err := tx.Commit(ctx); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			return nil
		}
		return completeAndCommit(ctx, conn.Conn(), c.ID, *done)
	})
}

// rollbackOpen ends a transaction left open on conn; the connection is
// dropped if that fails.
func rollbackOpen(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		conn.Exec(ctx, "ROLLBACK") //nolint:errcheck // a broken connection is closed and not reused
	}
}

// completeAndCommit sends the completion and COMMIT in one round trip.
// From the moment the batch is sent, a lost connection leaves the outcome
// unknown (see afterCommit), even while the completion's answer is read.
func completeAndCommit(ctx context.Context, conn *pgx.Conn, id uuid.UUID, done Completion) error {
	b := &pgx.Batch{}
	if err := record(b, func(q *dbsqlc.Queries) error { return q.CompleteAction(ctx, completeParams(id, done)) }); err != nil {
		return err
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err != nil {
		br.Close() //nolint:errcheck // the first error is the one to report
		return fmt.Errorf("complete action: %w", afterCommit(err))
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("commit: %w", afterCommit(err))
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: the transaction ended with %s", tag)
	}
	return nil
}
