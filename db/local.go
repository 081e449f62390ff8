package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// A local operation whose writes and answer can be decided in SQL needs no
// round trip of its own: the claim, the operation's writes, the completion
// and the read of the key's action are sent as one pgx Batch, which
// PostgreSQL runs as one implicit transaction. A first execution and a
// replay then both cost one round trip.

// Local queues a claimed action's local writes and its completion. Every
// statement it queues does nothing unless the claim before it inserted the
// action (the action's fresh id exists only then), so a request whose key
// is taken changes nothing and only reads the action it finds.
type Local struct {
	b      pgx.Batch
	action uuid.UUID
	tenant uuid.UUID
	err    error
}

// NewLocal returns an empty Local for the action id that tenant is about
// to claim.
func NewLocal(action, tenant uuid.UUID) *Local { return &Local{action: action, tenant: tenant} }

// Action is the id of the action being claimed.
func (l *Local) Action() uuid.UUID { return l.action }

// Tenant is the claiming tenant.
func (l *Local) Tenant() uuid.UUID { return l.tenant }

func (l *Local) queue(call func(q *dbsqlc.Queries) error) {
	if l.err == nil {
		l.err = record(&l.b, call)
	}
}

// write queues an operation's local write and its completion, both about
// the row of the fresh id the write creates.
func (l *Local) write(write, complete func(q *dbsqlc.Queries, id uuid.UUID) error) {
	id, err := uuid.NewV7()
	if err != nil {
		l.err = err
		return
	}
	l.queue(func(q *dbsqlc.Queries) error { return write(q, id) })
	l.queue(func(q *dbsqlc.Queries) error { return complete(q, id) })
}

// recorded is the context of a statement that is recorded, not run.
var recorded = context.Background()

// Book queues a booking of slot for customer and the action's completion:
// confirmed with the appointment, or rejected as BookSlot's caller would.
func (l *Local) Book(customer, slot uuid.UUID, service string) {
	l.write(func(q *dbsqlc.Queries, id uuid.UUID) error {
		return q.BookClaimed(recorded, dbsqlc.BookClaimedParams{
			ID: id, TenantID: l.tenant, CustomerID: customer, SlotID: slot, Service: service, ActionID: l.action,
		})
	}, func(q *dbsqlc.Queries, id uuid.UUID) error {
		return q.CompleteBooking(recorded, dbsqlc.CompleteBookingParams{
			ActionID: l.action, TenantID: l.tenant, CustomerID: customer, SlotID: slot, AppointmentID: id,
		})
	})
}

// AddPoints queues a change of customer's loyalty balance by delta and the
// action's completion: confirmed with the ledger entry, or rejected as
// AddPoints's caller would.
func (l *Local) AddPoints(customer uuid.UUID, delta int64, reason string) {
	l.write(func(q *dbsqlc.Queries, id uuid.UUID) error {
		return q.AddPointsClaimed(recorded, dbsqlc.AddPointsClaimedParams{
			ID: id, TenantID: l.tenant, CustomerID: customer, Delta: delta, Reason: reason, ActionID: l.action,
		})
	}, func(q *dbsqlc.Queries, id uuid.UUID) error {
		return q.CompletePoints(recorded, dbsqlc.CompletePointsParams{
			ActionID: l.action, TenantID: l.tenant, CustomerID: customer, Delta: delta, EntryID: id,
		})
	})
}

// ErrAtClaim marks a ClaimLocal error raised by the claim itself (not by
// the local writes after it): a lock or a deadline met there is a
// concurrent attempt of the same key holding it in an open transaction.
var ErrAtClaim = errors.New("at the claim")

// ClaimLocal claims c (whose ID must be l's action), runs l's statements
// and reads the action stored under c's key, in one round trip and one
// implicit transaction. The claim waits at most claimWait for a concurrent
// attempt of the same key that holds it in an open transaction (PostgreSQL's
// lock_timeout, for that statement only: the local writes keep the
// connection's own), and fails then with a lock timeout. claimed reports whether
// this call inserted the action; a is the action the key names afterwards:
// this call's, completed, or another attempt's. ErrNotFound means there is
// none (a concurrent claimer rolled back, or the key was retired
// meanwhile). Any error rolls the whole transaction back, except a broken
// connection, which leaves the outcome unknown (OutcomeUnknown): the batch
// commits when it ends, and its end may have been reached.
func (s *Store) ClaimLocal(ctx context.Context, c Claim, claimWait time.Duration, l *Local) (claimed bool, a Action, err error) {
	if l.err != nil {
		return false, Action{}, l.err
	}
	b := &pgx.Batch{}
	for _, call := range []func(q *dbsqlc.Queries) error{
		func(q *dbsqlc.Queries) error {
			return q.SetClaimLockTimeout(ctx, fmt.Sprintf("%dms", max(claimWait.Milliseconds(), 1)))
		},
		func(q *dbsqlc.Queries) error { _, err := q.ClaimAction(ctx, claimParams(c)); return err },
		func(q *dbsqlc.Queries) error { return q.RestoreLockTimeout(ctx) },
	} {
		if err := record(b, call); err != nil {
			return false, Action{}, err
		}
	}
	b.QueuedQueries = append(b.QueuedQueries, l.b.QueuedQueries...)
	if err := record(b, func(q *dbsqlc.Queries) error {
		_, err := q.ActionByKey(ctx, dbsqlc.ActionByKeyParams{TenantID: c.TenantID, IdempotencyKey: c.Key})
		return err
	}); err != nil {
		return false, Action{}, err
	}

	br := s.pool.SendBatch(ctx, b)
	claimed, a, err = readLocal(br, len(l.b.QueuedQueries))
	// The implicit transaction commits when the batch ends: only then is
	// the answer stored.
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("commit the claim and its local writes: %w", cerr)
	}
	if err != nil {
		return false, Action{}, afterCommit(err)
	}
	return claimed, a, nil
}

// readLocal reads a ClaimLocal batch's results: the claim between its lock
// timeout settings, n local writes, the key's action.
func readLocal(br pgx.BatchResults, n int) (claimed bool, a Action, err error) {
	if _, err := br.Exec(); err != nil {
		return false, Action{}, fmt.Errorf("claim action: %w: %w", ErrAtClaim, err)
	}
	var id uuid.UUID
	switch err := br.QueryRow().Scan(&id); {
	case err == nil:
		claimed = true
	case !errors.Is(err, pgx.ErrNoRows):
		return false, Action{}, fmt.Errorf("claim action: %w: %w", ErrAtClaim, err)
	}
	if _, err := br.Exec(); err != nil {
		return false, Action{}, fmt.Errorf("restore lock_timeout: %w", err)
	}
	for range n {
		if _, err := br.Exec(); err != nil {
			return false, Action{}, fmt.Errorf("local writes: %w", err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return false, Action{}, fmt.Errorf("read action: %w", err)
	}
	row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[dbsqlc.Action])
	if err != nil {
		return false, Action{}, notFound(err)
	}
	return claimed, action(row), nil
}
