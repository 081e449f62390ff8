package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// QueueFilter selects the operator console's queue: the actions flagged
// needs_operator and the unfinished ones, oldest first.
type QueueFilter struct {
	Tenant    *uuid.UUID
	Operation string
	// State is needs_operator, running or unknown; empty for all.
	State string
	// MinAge keeps only actions at least this old.
	MinAge time.Duration
	Limit  int
}

// Queue returns the console's queue under f.
func (q queries) Queue(ctx context.Context, f QueueFilter) ([]oncecall.Action, error) {
	rows, err := q.q.ConsoleQueue(ctx, dbsqlc.ConsoleQueueParams{
		TenantID: f.Tenant, Operation: ptr(f.Operation), QueueState: ptr(f.State),
		MinAgeSeconds: f.MinAge.Seconds(), MaxRows: int32(f.Limit),
	})
	return actions(rows, err)
}

// QueueCounts counts the queue by state (needs_operator, running,
// unknown) under f's tenant, operation and age.
func (q queries) QueueCounts(ctx context.Context, f QueueFilter) (map[string]int64, error) {
	rows, err := q.q.ConsoleQueueCounts(ctx, dbsqlc.ConsoleQueueCountsParams{
		TenantID: f.Tenant, Operation: ptr(f.Operation), MinAgeSeconds: f.MinAge.Seconds(),
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.QueueState] = r.N
	}
	return out, nil
}

// Tenants lists tenants by name (at most 1000), for the console's filters.
func (q queries) Tenants(ctx context.Context) ([]oncecall.Tenant, error) {
	rows, err := q.q.ConsoleTenants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Tenant, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Tenant{ID: r.ID, Name: r.Name}
	}
	return out, nil
}

// ActionsByKey finds actions, in any tenant, by the idempotency key they
// were claimed with (also once retired) or by its key_hash as the logs
// print it.
func (q queries) ActionsByKey(ctx context.Context, key string) ([]oncecall.Action, error) {
	return actions(q.q.ConsoleActionsByKey(ctx, key))
}

// ActionsByCall finds the actions claimed by a voice call's tool calls: by
// the call's id, of any platform, or written <platform>:<id>.
func (q queries) ActionsByCall(ctx context.Context, call string) ([]oncecall.Action, error) {
	return actions(q.q.ConsoleActionsByCall(ctx, call))
}

// CustomerHit is a customer as a search result shows it: no phone or e-mail.
type CustomerHit struct {
	ID       uuid.UUID
	TenantID uuid.UUID
	Name     string
}

// FindCustomers finds customers in any tenant by id, exact phone or e-mail,
// or part of the name.
func (q queries) FindCustomers(ctx context.Context, query string) ([]CustomerHit, error) {
	rows, err := q.q.ConsoleCustomers(ctx, query)
	if err != nil {
		return nil, err
	}
	out := make([]CustomerHit, len(rows))
	for i, r := range rows {
		out[i] = CustomerHit{ID: r.ID, TenantID: r.TenantID, Name: r.Name}
	}
	return out, nil
}

// ActionsOfCustomers finds the actions whose request names one of ids.
func (q queries) ActionsOfCustomers(ctx context.Context, ids []uuid.UUID) ([]oncecall.Action, error) {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return actions(q.q.ConsoleActionsOfCustomers(ctx, s))
}

func actions(rows []dbsqlc.Action, err error) ([]oncecall.Action, error) {
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Action, len(rows))
	for i, r := range rows {
		out[i] = action(r)
	}
	return out, nil
}
