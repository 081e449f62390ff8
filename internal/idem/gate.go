package idem

import (
	"context"

	"github.com/oncecall/oncecall"
)

// Gate decides whether a request may perform its effect. The core asks it
// right before the request would claim its key for a new action, on every
// path that leads there: a key found free, and a key whose action's
// answer no longer holds (Request.Stale), which the request would retire
// and claim anew. It is never asked about a request answered from an
// action that stands (a replay, a running attempt awaited, a key reused)
// nor about one naming its action (Request.Named): those perform nothing.
//
// The API installs one on a voice tool call of a tenant whose
// caller-confirmation gate is on (api/voice_confirm.go).
type Gate interface {
	// Admit returns nil to let the request perform, or the error Do
	// returns instead: nothing is claimed and the key is left as it was.
	// prior is the action whose answer no longer holds and which the
	// request would supersede; nil when the key is free.
	Admit(ctx context.Context, prior *oncecall.Action) error
}

// admit asks req's gate, if it has one, whether it may perform after
// prior (nil: the key is free).
func (req *Request) admit(ctx context.Context, prior *oncecall.Action) error {
	if req.Gate == nil {
		return nil
	}
	return req.Gate.Admit(ctx, prior)
}
