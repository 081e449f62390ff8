package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A claim's transaction needs four round trips when each statement waits
// for the one before: BEGIN, the claim, the work, the completion and COMMIT.
// Two of them carry no decision: BEGIN can travel with the claim and COMMIT
// with the completion. ClaimTx pipelines them, so a local action costs the
// claim, its own writes and one final round trip.

// The statements a batch carries next to BEGIN or COMMIT are written here
// rather than in queries/ (sqlc runs a statement; a batch queues its
// text), and the store's own methods (ClaimAction, CompleteAction) run the
// same text.

// claimSQL is the atomic claim: a returned row means this attempt owns the
// action. Its arguments are claimArgs's.
const claimSQL = `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, lease_owner, lease_until,
                     call_id, call_platform, trace_context)
VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8::interval, $9, $10, $11)
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
RETURNING id`

func claimArgs(c Claim) []any {
	return []any{c.ID, c.TenantID, c.Key, c.Operation, c.Fingerprint, json.RawMessage(c.Request),
		&c.LeaseOwner, interval(c.Lease), ptr(c.CallID), ptr(c.CallPlatform), c.TraceContext}
}

// completeSQL records an action's known outcome. Its arguments are
// completeArgs's.
const completeSQL = `UPDATE actions
SET state = 'completed', outcome = $2, reason = $3, http_status = $4, resource_id = $5,
    result = $6, lease_owner = NULL, lease_until = NULL, updated_at = now(), completed_at = now()
WHERE id = $1`

func completeArgs(id uuid.UUID, c Completion) []any {
	status := int32(c.Status)
	return []any{id, ptr(string(c.Outcome)), ptr(c.Reason), &status, ptr(c.ResourceID), c.Result}
}

// setResultSQL replaces a completed action's answer ($2) in the
// transaction that completed it (a statement's follow-up, see
// Statement.Then).
const setResultSQL = `UPDATE actions SET result = $2, updated_at = now() WHERE id = $1`

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
	begin.Queue(claimSQL, claimArgs(c)...)
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

	done, err := fn(s.tx(tx))
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
		return execAndCommit(ctx, conn.Conn(), "complete action", completeSQL, completeArgs(c.ID, *done)...)
	})
}

// rollbackOpen ends a transaction left open on conn; the connection is
// dropped if that fails.
func rollbackOpen(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		conn.Exec(ctx, "ROLLBACK") //nolint:errcheck // a broken connection is closed and not reused
	}
}

// execAndCommit sends sql (what, in errors) and COMMIT in one round trip.
// From the moment the batch is sent, a lost connection leaves the outcome
// unknown (see afterCommit), even while sql's answer is read.
func execAndCommit(ctx context.Context, conn *pgx.Conn, what, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err != nil {
		br.Close() //nolint:errcheck // the first error is the one to report
		return fmt.Errorf("%s: %w", what, afterCommit(err))
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
