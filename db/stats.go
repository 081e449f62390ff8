package db

import (
	"context"

	"github.com/oncecall/oncecall"
)

// ActionCounts is how many actions there are, by state.
type ActionCounts struct {
	// ByState counts running and unknown actions exactly and completed
	// actions by the statistics collector's estimate of the table's rows.
	ByState map[oncecall.State]int64
	// NeedsOperator counts unresolved actions waiting for an operator.
	NeedsOperator int64
}

// CountActions returns the action counts without scanning completed
// actions: unfinished ones come from their partial index, the completed
// count is the table's row estimate less the unfinished ones.
func (s *Store) CountActions(ctx context.Context) (ActionCounts, error) {
	rows, err := s.q.UnfinishedActionCounts(ctx)
	if err != nil {
		return ActionCounts{}, err
	}
	estimate, err := s.q.ActionRowEstimate(ctx)
	if err != nil {
		return ActionCounts{}, err
	}
	c := ActionCounts{ByState: map[oncecall.State]int64{oncecall.Running: 0, oncecall.Unknown: 0}}
	unfinished := int64(0)
	for _, r := range rows {
		c.ByState[oncecall.State(r.State)] = r.Actions
		c.NeedsOperator += r.NeedsOperator
		unfinished += r.Actions
	}
	c.ByState[oncecall.Completed] = max(estimate-unfinished, 0)
	return c, nil
}
