// Package idem is the idempotency core: it turns one request into at most one
// execution of an action. It claims the action atomically, runs the
// operation's local writes in the same transaction as the claim and the
// completion, and otherwise follows the retained action (replay, mismatch,
// in progress, unknown). It knows nothing about any particular operation.
package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Outcome is what the caller hears.
type Outcome = oncecall.Outcome

// Outcomes.
const (
	Confirmed = oncecall.Confirmed
	Rejected  = oncecall.Rejected
	Pending   = oncecall.Pending
)

// Config tunes the core.
type Config struct {
	// Lease is how long a claimed action may run before the reconciler may
	// treat it as abandoned. Default 30s.
	Lease time.Duration
	// MaxBodyBytes: a result body larger than this is not stored; its replay
	// is the compact envelope. Default 1 MiB.
	MaxBodyBytes int
	// Retries bounds how often a unit is re-run after a serialization
	// failure, deadlock or lost race. Default 3.
	Retries int
	// PollInterval is the first delay between reads while waiting on a
	// running action; it doubles up to 250ms. Default 20ms.
	PollInterval time.Duration
	// ClaimWait bounds how long a claim may wait for a concurrent attempt of
	// the same key whose transaction has not finished (PostgreSQL makes the
	// second INSERT wait for the first). A request with its own Wait waits
	// that long instead. Past it the attempt answers ErrInProgress.
	// Default 10s. PostgreSQL's lock_timeout (db.Timeouts) ends the wait
	// sooner when it is shorter, with the same answer.
	ClaimWait time.Duration
	// Observer, when set, is told how each request ended (metrics).
	Observer Observer
	// AnswerBytes is the memory this process may spend keeping the
	// completed actions it answered recently, so that their replays are
	// answered without the database (see answers). 0 keeps none.
	AnswerBytes int
	// AnswerAge is how long a kept answer is used. Default 1m; it must stay
	// well under the response retention (pruning clears stored answers).
	AnswerAge time.Duration
	// RejectionHold is how long after a rejection was recorded (its
	// completed_at, read by this process's clock) a request identical to
	// the rejected one is answered with it even when its answers may go
	// stale (Request.Stale): duplicates of one request that arrive while
	// its first attempt runs or just after its answer (a platform's
	// retries of a tool call, the same call delivered twice) hear that
	// answer, and a remote provider is asked once. Later, the same request
	// is decided afresh. Default 30s, longer than a voice platform's
	// retries of one tool call take (Dasha: 10s timeout, 2 retries).
	RejectionHold time.Duration
}

// Core runs requests against the store.
type Core struct {
	store  *db.Store
	cfg    Config
	driver Driver
	remote Remotes
	// background counts drives that outlived their request (see Drain).
	background sync.WaitGroup
	// replays estimates how many of the requests for operations with a
	// statement are replays, which picks their first round trip.
	replays replayShare
	// answers keeps recent completed answers; nil when Config.AnswerBytes
	// is 0.
	answers *answers
}

// SetDriver installs the driver of remote steps. A driver that tells
// which capabilities are remote (step.Driver does) tells local operations
// too, through Exec.Remotes.
func (c *Core) SetDriver(d Driver) {
	c.driver = d
	if r, ok := d.(Remotes); ok {
		c.remote = r
	}
}

// New returns a Core with defaults applied to cfg.
func New(store *db.Store, cfg Config) *Core {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 10 * time.Second
	}
	if cfg.AnswerAge <= 0 {
		cfg.AnswerAge = time.Minute
	}
	if cfg.RejectionHold <= 0 {
		cfg.RejectionHold = 30 * time.Second
	}
	return &Core{store: store, cfg: cfg, answers: newAnswers(cfg.AnswerBytes, cfg.AnswerAge)}
}

// errNotClaimed rolls back a transaction whose claim found an existing action.
var errNotClaimed = errors.New("action already claimed")

// errClaimWait: the claim waited too long for another attempt's transaction.
var errClaimWait = errors.New("claim waited too long for a concurrent attempt")

// InProgressError is returned when another attempt still runs the action.
type InProgressError struct {
	Action     oncecall.Action
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string { return "action in progress" }

// ReusedError is returned when the key belongs to an action with another
// operation or fingerprint.
type ReusedError struct{ Action oncecall.Action }

func (e *ReusedError) Error() string { return "idempotency key reused" }

// errKeyChurn: every claim of the key found it taken, and every read after
// found it free again; nothing was claimed by this request.
var errKeyChurn = fault.New(fault.Unavailable,
	"other attempts kept taking and releasing this idempotency key while this request tried to claim it; "+
		"nothing was stored for this request. Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)")

// errSuperseded: the followed action's answer no longer holds and its key
// was retired; the request claims the key anew.
var errSuperseded = errors.New("the action under this key was superseded")

// do is Do without the observer: from the answers kept in memory when
// req's may be kept there, otherwise (and on a miss) from the database.
func (c *Core) do(ctx context.Context, req Request) (Reply, error) {
	if !c.answers.holds(&req) {
		return c.fromDB(ctx, req)
	}
	if a, ok := c.answers.get(req.TenantID, req.Key); ok {
		if !req.made(a) {
			return Reply{}, &ReusedError{Action: a}
		}
		return Reply{Action: a, Replayed: true, Kept: true}, nil
	}
	reply, err := c.fromDB(ctx, req)
	switch {
	case err != nil:
	case reply.Replayed:
		// Replayed after the Replicated check (answers.put keeps only
		// completed actions).
		c.answers.put(reply.Action)
	case len(req.Steps) == 0:
		// A local operation completed by this request's own commit.
		c.answers.put(reply.Action)
	}
	return reply, err
}

// fromDB answers req from the database: a named action by its id; a key's
// action read first when that is likely to pay, then claimed and executed
// when the key is free, or followed when it is taken.
func (c *Core) fromDB(ctx context.Context, req Request) (Reply, error) {
	if req.Named != uuid.Nil {
		a, err := c.store.ActionByID(ctx, req.TenantID, req.Named)
		if err != nil {
			return Reply{}, db.Fault(err)
		}
		req.Stale = nil
		return c.follow(ctx, &req, a)
	}
	// A retry is most often for an action that is already completed: answer it
	// with one lock-free read. Correctness never depends on this read; the
	// claim below is the only decision. An operation's one statement starts
	// with the same read, so for it the read alone is worth its round trip
	// only when most requests are replays (see replayShare).
	statement := req.Work.OneStatement() && len(req.Steps) == 0
	counted := false
	if !statement || req.Gate != nil || c.replays.likely() {
		a, err := c.store.ActionByKey(ctx, req.TenantID, req.Key)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return Reply{}, db.Fault(err)
		}
		if statement {
			c.replays.observe(err == nil)
			counted = true
		}
		if err == nil {
			// follow asks the gate before it supersedes a.
			reply, err := c.follow(ctx, &req, a)
			if !errors.Is(err, errSuperseded) {
				return reply, err
			}
		} else if err := req.admit(ctx, nil); err != nil {
			return Reply{}, err
		}
	}

	for attempt := 0; ; attempt++ {
		reply, err := c.execute(ctx, req)
		if statement && !counted && (err == nil || errors.Is(err, errNotClaimed)) {
			c.replays.observe(err != nil)
			counted = true
		}
		switch {
		case err == nil:
			return reply, nil
		case errors.Is(err, errClaimWait):
			return Reply{}, &InProgressError{RetryAfter: time.Second}
		case errors.Is(err, errNotClaimed):
			a := reply.Action // read with the claim, when it was
			if a.ID == uuid.Nil {
				if a, err = c.store.ActionByKey(ctx, req.TenantID, req.Key); err != nil && !errors.Is(err, db.ErrNotFound) {
					return Reply{}, db.Fault(err)
				}
			}
			if a.ID == uuid.Nil {
				// The claimer rolled back (or the key was retired or
				// pruned meanwhile): the key is free again.
				if attempt < c.cfg.Retries {
					continue
				}
				return Reply{}, errKeyChurn
			}
			reply, err := c.follow(ctx, &req, a)
			if errors.Is(err, errSuperseded) && attempt < c.cfg.Retries {
				continue
			}
			return reply, err
		case db.Retryable(err) && attempt < c.cfg.Retries:
			continue
		default:
			return Reply{}, db.Fault(err)
		}
	}
}

// execute claims the action and, if claimed, runs and completes it in the
// same transaction.
func (c *Core) execute(ctx context.Context, req Request) (Reply, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Reply{}, err
	}
	claim := db.Claim{
		ID: id, TenantID: req.TenantID, Key: req.Key, Operation: req.Operation,
		Fingerprint: req.Fingerprint, Request: req.Input, CallPlatform: req.CallPlatform, CallID: req.CallID,
	}
	if req.Work.OneStatement() && len(req.Steps) == 0 {
		st := db.NewStatement(req.TenantID)
		req.Work.Statement(st, Exec{TenantID: req.TenantID, ActionID: id, CallPlatform: req.CallPlatform, CallID: req.CallID, Remotes: c.remote})
		return c.claimOnce(ctx, claim, c.claimWait(req), st)
	}
	// Only an action claimed running has a lease, with its owner's token.
	owner := uuid.New()
	claim.Lease, claim.LeaseOwner = c.cfg.Lease, owner
	if len(req.Steps) > 0 {
		// A remote action may be settled later, by the reconciler, whose
		// span links back to this request's.
		claim.TraceContext = telemetry.Keep(ctx)
	}
	var reply Reply
	// The claim waits while another attempt's uncommitted claim holds the
	// key; bound that wait so a caller is never held past its patience.
	claimCtx, cancel := context.WithTimeout(ctx, c.claimWait(req))
	defer cancel()
	claimed, err := c.store.ClaimTx(ctx, claimCtx, claim, func(tx *db.Tx) (*db.Completion, error) {
		x := Exec{TenantID: req.TenantID, ActionID: id, CallPlatform: req.CallPlatform, CallID: req.CallID, Remotes: c.remote,
			Offer: req.Offer}
		var res Result
		if len(req.Steps) > 0 {
			rejected, err := c.claimSteps(ctx, tx, x, req)
			if err != nil {
				return nil, err
			}
			if rejected == nil {
				reply = Reply{Action: oncecall.Action{
					ID: id, TenantID: req.TenantID, Key: req.Key, Operation: req.Operation,
					Fingerprint: req.Fingerprint, State: oncecall.Running, Request: req.Input,
				}}
				return nil, nil
			}
			res = *rejected
		} else if res, err = req.Work.Run(ctx, tx, x); err != nil {
			return nil, err
		}
		done := db.Completion{
			Outcome: res.Outcome, Reason: res.Reason, Status: res.Status,
			ResourceID: res.ResourceID, Result: res.Body,
		}
		if len(done.Result) > c.cfg.MaxBodyBytes {
			done.Result = nil
		}
		reply = Reply{Action: oncecall.Action{
			ID: id, TenantID: req.TenantID, Key: req.Key, Operation: req.Operation,
			Fingerprint: req.Fingerprint, State: oncecall.Completed,
			Outcome: done.Outcome, Reason: done.Reason, Status: done.Status,
			ResourceID: done.ResourceID, Result: done.Result, Request: req.Input,
			CallPlatform: req.CallPlatform, CallID: req.CallID,
		}}
		return &done, nil
	})
	switch {
	// The claim waited out its bound, or PostgreSQL's lock timeout, for a
	// concurrent attempt that holds the key in an open transaction.
	case err != nil && !claimed && ctx.Err() == nil && (claimCtx.Err() != nil || db.LockTimeout(err)):
		return Reply{}, errClaimWait
	case err == nil && !claimed:
		return Reply{}, errNotClaimed
	}
	if err != nil || reply.Action.State != oncecall.Running {
		return reply, err
	}
	return c.drive(ctx, reply.Action, owner, req.Steps), nil
}

// claimOnce claims the action and runs its writes and completion, the
// operation's one statement, in one round trip that also reads what the
// key names; a key found taken answers errNotClaimed with that action in
// the reply (none when it was taken meanwhile: do reads it).
func (c *Core) claimOnce(ctx context.Context, claim db.Claim, claimWait time.Duration, st *db.Statement) (Reply, error) {
	claimed, a, err := c.store.ClaimOnce(ctx, claim, claimWait, st)
	switch {
	// The claim waited out its bound for a concurrent attempt of the key.
	case errors.Is(err, db.ErrAtClaim) && ctx.Err() == nil:
		return Reply{}, errClaimWait
	case err != nil:
		return Reply{}, err
	case !claimed:
		return Reply{Action: a}, errNotClaimed
	}
	return Reply{Action: a}, nil
}

// drive hands a freshly claimed remote action to the driver. From here on
// the request can no longer fail: whatever goes wrong leaves the action for
// the reconciler and the caller hears pending.
//
// The driver runs apart from the request, so that neither a caller hanging
// up nor the request's deadline (a Dasha tool call's budget) cuts a
// provider call in half: when ctx ends first, the caller hears pending
// (the action is still running) while the driver goes on and records the
// provider's answer. Drain waits for such drives.
func (c *Core) drive(ctx context.Context, a oncecall.Action, owner uuid.UUID, steps []db.NewStep) Reply {
	if c.driver == nil {
		a.State = oncecall.Unknown
		return Reply{Action: a}
	}
	done := make(chan Reply, 1)
	c.background.Go(func() {
		driven, err := c.driver.Drive(context.WithoutCancel(ctx), a, owner)
		if err != nil {
			driven = a
			driven.State = oncecall.Unknown
		}
		done <- Reply{Action: driven}
	})
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		names := make([]string, len(steps))
		for i, s := range steps {
			names[i] = s.Name
		}
		telemetry.Pending(ctx, "the provider's answer did not come within the request's time", names...)
		return Reply{Action: a}
	}
}

// claimSteps records the remote steps with their provider keys in the
// claim's transaction, so every dispatch, retry and recovery uses them. The
// request's Reserve runs first; a rejection from it is returned instead and
// nothing is recorded. Provider keys and external references are derived
// from the action id: each action has its own, and a provider's retention
// of a key is counted from this action's claim.
func (c *Core) claimSteps(ctx context.Context, tx *db.Tx, x Exec, req Request) (*Result, error) {
	steps := slices.Clone(req.Steps)
	rejected, err := req.Work.Reserve(ctx, tx, x, steps)
	if err != nil || rejected != nil {
		return rejected, err
	}
	scope := x.ActionID.String()
	for i := range steps {
		steps[i].ProviderKey, steps[i].ExternalRef = ProviderKey(scope, steps[i].Name), scope+"/"+steps[i].Name
	}
	if err := tx.InsertSteps(ctx, x.ActionID, steps); err != nil {
		return nil, fmt.Errorf("record steps: %w", err)
	}
	return nil, tx.AddEvent(ctx, x.ActionID, "claimed", "", map[string]int{"steps": len(steps)})
}

// claimWait is how long a claim may wait on a concurrent uncommitted attempt.
func (c *Core) claimWait(req Request) time.Duration {
	if req.Wait > 0 {
		return req.Wait
	}
	return c.cfg.ClaimWait
}

func retryAfter(a oncecall.Action) time.Duration {
	if a.LeaseUntil == nil {
		return time.Second
	}
	d := time.Until(*a.LeaseUntil)
	return min(max(d, time.Second), 30*time.Second)
}
