package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// AddHeard keeps an answer a caller was given about one of the tenant's
// actions (migration 0046).
func (q queries) AddHeard(ctx context.Context, tenant uuid.UUID, h oncecall.Heard) error {
	return q.q.AddAnswer(ctx, dbsqlc.AddAnswerParams{
		TenantID: tenant, ActionID: h.ActionID, Platform: h.Platform, CallID: h.CallID, Tool: h.Tool,
		Outcome: h.Outcome, Reason: h.Reason, Current: h.Current, Say: h.Say,
	})
}

// Heard lists what the callers of an action were told, oldest first (at
// most 200 answers).
func (q queries) Heard(ctx context.Context, tenant, action uuid.UUID) ([]oncecall.Heard, error) {
	rows, err := q.q.AnswersOfAction(ctx, dbsqlc.AnswersOfActionParams{TenantID: tenant, ActionID: action})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Heard, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Heard{
			ActionID: r.ActionID, At: r.At.UTC(), Platform: r.Platform, CallID: r.CallID, Tool: r.Tool,
			Outcome: r.Outcome, Reason: r.Reason, Current: r.Current, Say: r.Say,
		}
	}
	return out, nil
}
