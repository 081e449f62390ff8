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
