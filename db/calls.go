package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// NudgeCall makes the open steps of the tenant's unfinished actions claimed
// by a voice call (the platform's call callID) due for the reconciler now,
// recording event in their timelines, and returns how many actions it
// nudged.
func (q queries) NudgeCall(ctx context.Context, tenant uuid.UUID, platform, callID, event string) (int, error) {
	ids, err := q.q.NudgeCall(ctx, dbsqlc.NudgeCallParams{TenantID: tenant, CallID: &callID, CallPlatform: &platform, Event: event})
	if err != nil {
		return 0, err
	}
	seen := map[uuid.UUID]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	return len(seen), nil
}

// RegisterLateResult registers the delivery of an action's late result to
// a call's control URL; false when the action has one already (one
// delivery per action).
func (q queries) RegisterLateResult(ctx context.Context, tenant, action uuid.UUID, platform, callID, controlURL string) (bool, error) {
	n, err := q.q.RegisterLateResult(ctx, dbsqlc.RegisterLateResultParams{
		TenantID: tenant, ActionID: action, CallPlatform: platform, CallID: callID, ControlUrl: controlURL,
	})
	return n == 1, err
}

// EndLateResults notes that a call has ended: none of its late results is
// delivered any more.
func (q queries) EndLateResults(ctx context.Context, tenant uuid.UUID, platform, callID string) error {
	_, err := q.q.EndLateResults(ctx, dbsqlc.EndLateResultsParams{TenantID: tenant, CallPlatform: platform, CallID: callID})
	return err
}

// LateResultCallEnded reports whether the call of an action's late result
// has ended.
func (q queries) LateResultCallEnded(ctx context.Context, tenant, action uuid.UUID) (bool, error) {
	ended, err := q.q.LateResultCallEnded(ctx, dbsqlc.LateResultCallEndedParams{TenantID: tenant, ActionID: action})
	return ended, notFound(err)
}

// LateResultDelivered records that an action's late result was delivered.
func (q queries) LateResultDelivered(ctx context.Context, tenant, action uuid.UUID) error {
	_, err := q.q.LateResultDelivered(ctx, dbsqlc.LateResultDeliveredParams{TenantID: tenant, ActionID: action})
	return err
}
