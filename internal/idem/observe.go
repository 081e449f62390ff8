package idem

import (
	"context"
	"errors"

	"github.com/oncecall/oncecall"
)

// Observer is told how each request to the core ended, for metrics. Its
// methods must be cheap and must not block. The core knows nothing of the
// metrics system behind it.
type Observer interface {
	// Executed: this request claimed its key and ran the action; outcome is
	// what the caller hears.
	Executed(operation string, outcome Outcome)
	// Replayed: the request was answered from an existing action; kept
	// says it was answered from the answers kept in memory.
	Replayed(operation string, kept bool)
	// KeyReused: the key belongs to another operation or fingerprint.
	KeyReused(operation string)
	// InProgress: an earlier attempt still ran the action.
	InProgress(operation string)
}

// Do maps req to its action, executing it only if this attempt claims it.
func (c *Core) Do(ctx context.Context, req Request) (Reply, error) {
	reply, err := c.do(ctx, req)
	if o := c.cfg.Observer; o != nil {
		var reused *ReusedError
		var inProgress *InProgressError
		switch {
		case err == nil && reply.Replayed:
			o.Replayed(req.Operation, reply.Kept)
		case err == nil:
			outcome := reply.Action.Outcome
			if reply.Action.State != oncecall.Completed {
				outcome = Pending
			}
			o.Executed(req.Operation, outcome)
		case errors.As(err, &reused):
			o.KeyReused(req.Operation)
		case errors.As(err, &inProgress):
			o.InProgress(req.Operation)
		}
	}
	return reply, err
}
