package idem

import (
	"context"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// follow answers a request whose key already names an action. An answer
// that no longer holds under a derived key (req.Stale) is superseded once
// per request, if req's gate admits it: the key is retired from a and
// errSuperseded returned. A
// request waiting for a running attempt is answered with that attempt's
// outcome, whatever it is.
func (c *Core) follow(ctx context.Context, req *Request, a oncecall.Action) (Reply, error) {
	if req.Stale != nil && a.State == oncecall.Completed && !c.held(req, a) {
		stale, err := req.Stale.Stale(ctx, a)
		if err != nil {
			return Reply{}, db.Fault(err)
		}
		if stale {
			// Once: an action a concurrent attempt of this request just
			// made is this request's answer, whatever it says.
			req.Stale = nil
			if err := req.admit(ctx, &a); err != nil {
				return Reply{}, err
			}
			if _, err := c.store.RetireKey(ctx, req.TenantID, a.ID, req.Key); err != nil {
				return Reply{}, db.Fault(err)
			}
			return Reply{}, errSuperseded
		}
	}
	if !req.made(a) {
		// A caller may answer from the action that stands (a voice call
		// that restates it hears it confirmed): as sure as a replay.
		if err := c.replicated(ctx, a); err != nil {
			return Reply{}, err
		}
		return Reply{}, &ReusedError{Action: a}
	}
	if a.State != oncecall.Running {
		return c.replay(ctx, a)
	}
	return c.await(ctx, req, a)
}

// await waits up to req.Wait for a, a running attempt of req's action, to
// end, and answers with how it ended, or InProgressError. The request's
// place in its caller's share of the pool (req.Place) is given up while it
// waits: between its reads, each of one row by its key that takes no lock,
// it holds no connection, and duplicates of one slow attempt (a remote
// provider's call) must not shut their tenant's other requests out. It is
// taken back once the attempt has ended, for the replay and whatever the
// caller does next; an answer of InProgressError goes without it.
func (c *Core) await(ctx context.Context, req *Request, a oncecall.Action) (Reply, error) {
	deadline := time.Now().Add(req.Wait)
	delay := c.cfg.PollInterval
	place := req.Place
	if place != nil && time.Now().Add(delay).Before(deadline) {
		place.Free()
	}
	for time.Now().Add(delay).Before(deadline) {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Reply{}, ctx.Err()
		case <-t.C:
		}
		next, err := c.store.ActionByID(ctx, req.TenantID, a.ID)
		if err != nil {
			return Reply{}, db.Fault(err)
		}
		if next.State != oncecall.Running {
			if place != nil {
				if err := place.Take(ctx); err != nil {
					return Reply{}, err
				}
			}
			return c.replay(ctx, next)
		}
		a = next
		delay = min(delay*2, 250*time.Millisecond)
	}
	telemetry.Pending(ctx, "another attempt of the action was still running")
	return Reply{}, &InProgressError{Action: a, RetryAfter: retryAfter(a)}
}

// held reports whether a is a rejection of a request like req recorded
// less than RejectionHold ago, which answers req however stale (see
// Config.RejectionHold). A completion time ahead of this process's clock
// counts as now.
func (c *Core) held(req *Request, a oncecall.Action) bool {
	return req.made(a) && c.Holds(a)
}

// Holds reports whether a is a rejection recorded less than RejectionHold
// ago: a request that only restates the rejected one in other words (an
// operation's own judgement, op.Restater) is answered with it too.
func (c *Core) Holds(a oncecall.Action) bool {
	return a.Outcome == oncecall.Rejected && !a.CompletedAt.IsZero() &&
		time.Since(a.CompletedAt) < c.cfg.RejectionHold
}

// replay answers with a, an action this request did not complete, once it
// is replicated.
func (c *Core) replay(ctx context.Context, a oncecall.Action) (Reply, error) {
	if err := c.replicated(ctx, a); err != nil {
		return Reply{}, err
	}
	return Reply{Action: a, Replayed: true}, nil
}

// replicated returns once a completed action, which this request did not
// complete, is known to be on the synchronous standbys: its own request may
// have had its wait for them cancelled, and a failover would then lose
// what an answer built from it confirms (see db.Store.Replicated). Every
// action the core hands out that it did not commit itself passes here: a
// replay's, and the one a reused key names (ReusedError).
func (c *Core) replicated(ctx context.Context, a oncecall.Action) error {
	if a.State != oncecall.Completed {
		return nil
	}
	return db.Fault(c.store.Replicated(ctx))
}
