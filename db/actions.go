package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// Claim is the row an attempt tries to insert.
type Claim struct {
	ID          uuid.UUID
	TenantID    uuid.UUID
	Key         string
	Operation   string
	Fingerprint string
	Request     []byte
	Lease       time.Duration
	// LeaseOwner is the claiming attempt's token: only its holder may
	// drive the action while the lease lasts.
	LeaseOwner uuid.UUID
	// CallPlatform and CallID are the voice call whose tool call claims
	// the action (the platform, and the platform's id of the call); empty
	// for REST requests.
	CallPlatform string
	CallID       string
	// TraceContext is the claiming request's trace context
	// (telemetry.Keep), or nil: see the column's migration.
	TraceContext []byte
}

// Completion is the known outcome of an action.
type Completion struct {
	Outcome    oncecall.Outcome
	Reason     string
	Status     int
	ResourceID string
	Result     []byte
}

// ClaimAction inserts the action unless its key is taken and reports whether
// this call inserted it.
func (q queries) ClaimAction(ctx context.Context, c Claim) (bool, error) {
	var id uuid.UUID
	err := q.db.QueryRow(ctx, claimSQL, claimArgs(c)...).Scan(&id)
	if err = notFound(err); err == ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// ActionByKey returns the tenant's action for an idempotency key.
func (q queries) ActionByKey(ctx context.Context, tenant uuid.UUID, key string) (oncecall.Action, error) {
	row, err := q.q.ActionByKey(ctx, dbsqlc.ActionByKeyParams{TenantID: tenant, IdempotencyKey: key})
	if err != nil {
		return oncecall.Action{}, notFound(err)
	}
	return action(row), nil
}

// ActionByID returns one of the tenant's actions.
func (q queries) ActionByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Action, error) {
	row, err := q.q.ActionByID(ctx, dbsqlc.ActionByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Action{}, notFound(err)
	}
	return action(row), nil
}

// RetireKey frees a completed action's key for a new action (the key was
// derived from identity fields and its answer no longer holds); false when
// the key no longer names that action.
func (q queries) RetireKey(ctx context.Context, tenant, id uuid.UUID, key string) (bool, error) {
	n, err := q.q.RetireKey(ctx, dbsqlc.RetireKeyParams{TenantID: tenant, ID: id, IdempotencyKey: key})
	return n == 1, err
}

// CompleteAction records an action's known outcome.
func (q queries) CompleteAction(ctx context.Context, id uuid.UUID, c Completion) error {
	_, err := q.db.Exec(ctx, completeSQL, completeArgs(id, c)...)
	return err
}

func action(r dbsqlc.Action) oncecall.Action {
	a := oncecall.Action{
		ID: r.ID, TenantID: r.TenantID, Key: r.IdempotencyKey, Operation: r.Operation,
		Fingerprint: r.Fingerprint, State: oncecall.State(r.State), NeedsOperator: r.NeedsOperator,
		Outcome: oncecall.Outcome(deref(r.Outcome)), Reason: deref(r.Reason), ResourceID: deref(r.ResourceID),
		Result: r.Result, LeaseUntil: r.LeaseUntil, CreatedAt: r.CreatedAt, CompletedAt: deref(r.CompletedAt),
		Request: r.Request, CallPlatform: deref(r.CallPlatform), CallID: deref(r.CallID), TraceContext: r.TraceContext,
	}
	if r.HTTPStatus != nil {
		a.Status = int(*r.HTTPStatus)
	}
	return a
}

// ptr returns nil for the zero value, so empty strings are stored as NULL.
func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
