package db

import (
	"context"
	"time"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// PruneResponses clears the replayable body of at most batch completed
// actions that completed more than retention before now, and returns how
// many it cleared. Unresolved actions are never touched.
func (s *Store) PruneResponses(ctx context.Context, now time.Time, retention time.Duration, batch int) (int64, error) {
	return s.q.PruneResponses(ctx, dbsqlc.PruneResponsesParams{Now: now, Retention: interval(retention), Batch: int32(batch)})
}

// PruneActions deletes at most batch completed actions that completed more
// than retention before now, and returns how many it deleted. Unresolved
// actions are never deleted; business rows keep their action_id.
func (s *Store) PruneActions(ctx context.Context, now time.Time, retention time.Duration, batch int) (int64, error) {
	return s.q.PruneActions(ctx, dbsqlc.PruneActionsParams{Now: now, Retention: interval(retention), Batch: int32(batch)})
}

// Prunable is what a prune would do.
type Prunable struct {
	// Responses is the number of bodies that would be cleared from actions
	// that are kept.
	Responses int64
	// Actions is the number of actions that would be deleted.
	Actions int64
}

// CountPrunable counts what pruning at now with these retentions would do.
func (s *Store) CountPrunable(ctx context.Context, now time.Time, responseRetention, actionRetention time.Duration) (Prunable, error) {
	row, err := s.q.CountPrunable(ctx, dbsqlc.CountPrunableParams{
		Now: now, ResponseRetention: interval(responseRetention), ActionRetention: interval(actionRetention),
	})
	if err != nil {
		return Prunable{}, err
	}
	return Prunable{Responses: row.Responses, Actions: row.Actions}, nil
}

// Now is the database's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) { return s.q.DatabaseNow(ctx) }
