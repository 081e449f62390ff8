package db

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// The outbox of late results. A voice call that heard pending for an
// action subscribes to its answer (late_results, one row per action and
// call); the transaction that settles the action (ResolveAction: the
// request's driver, the reconciler, an operator) queues one River job per
// subscriber still live, unique per call and action; River's workers
// (api's lateWorker, started by the wiring) send them, retried, on any
// replica, after any restart.

// LateQueue is the River queue of late-result deliveries.
const LateQueue = "late_results"

// LateJob is the delivery of a settled action's answer to one call that
// heard pending for it. Its arguments are identifiers only: no customer
// data is kept in the queue.
type LateJob struct {
	TenantID     uuid.UUID `json:"tenant_id"`
	ActionID     uuid.UUID `json:"action_id"`
	CallPlatform string    `json:"call_platform"`
	CallID       string    `json:"call_id"`
}

// Kind names the job for River.
func (LateJob) Kind() string { return "late_result" }

// InsertOpts makes the job unique per call and action (all its arguments),
// whatever path queues it, for as long as River keeps the finished job:
// one delivery per call, never two.
func (LateJob) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: LateQueue, MaxAttempts: LateAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// LateAttempts is how many times a delivery is tried.
const LateAttempts = 5

// LateSubscriber is a call waiting for an action's late result.
type LateSubscriber struct {
	TenantID, ActionID uuid.UUID
	// CallPlatform and CallID are the call, as its platform names it.
	CallPlatform, CallID string
	// Tool is the tool the call asked about, in its own words.
	Tool string
	// ControlURL is where the call's platform takes a late result.
	ControlURL string
	// Ended and Delivered tell whether the call has ended, and whether
	// the result was delivered to it.
	Ended, Delivered bool
}

// newJobs is the River client that queues jobs inside the store's
// transactions (insert-only: it works no job and needs no pool).
func newJobs() *river.Client[pgx.Tx] {
	c, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	if err != nil {
		panic(fmt.Sprintf("river insert-only client: %v", err)) // a constant configuration
	}
	return c
}

// SubscribeLate makes a call that heard pending for an action a subscriber
// of its late result, and reports whether it was not one already. When the
// action settled in the meantime, the delivery is queued here, in the same
// transaction. Another tenant's action subscribes nothing (false, nil).
func (s *Store) SubscribeLate(ctx context.Context, sub LateSubscriber) (bool, error) {
	var fresh bool
	err := s.InTx(ctx, func(tx *Tx) error {
		row, err := tx.q.SubscribeLate(ctx, dbsqlc.SubscribeLateParams{
			TenantID: sub.TenantID, ActionID: sub.ActionID, CallPlatform: sub.CallPlatform, CallID: sub.CallID,
			ControlUrl: sub.ControlURL, Tool: sub.Tool,
		})
		if err = notFound(err); err != nil {
			if err == ErrNotFound {
				return nil
			}
			return err
		}
		fresh = row.Fresh
		if !row.Settled || !row.Fresh {
			return nil
		}
		return tx.queueLate(ctx, sub.TenantID, sub.ActionID, []LateJob{{
			TenantID: sub.TenantID, ActionID: sub.ActionID, CallPlatform: sub.CallPlatform, CallID: sub.CallID,
		}})
	})
	return fresh, err
}

// ResolveAction completes an unfinished action that owner holds the lease
// of (a driver's evidence or an operator's decision); false when the lease
// is not owner's or the action is already completed. needsOperator keeps
// the completed action in the operator's queue (a follow-up step is stuck).
// In the same transaction it queues the delivery of the answer to every
// live call that heard pending for the action.
func (t *Tx) ResolveAction(ctx context.Context, id, owner uuid.UUID, c Completion, needsOperator bool) (bool, error) {
	status := int32(c.Status)
	tenant, err := t.q.ResolveAction(ctx, dbsqlc.ResolveActionParams{
		ID: id, Owner: &owner, NeedsOperator: needsOperator, Outcome: ptr(string(c.Outcome)), Reason: ptr(c.Reason), HTTPStatus: &status,
		ResourceID: ptr(c.ResourceID), Result: c.Result,
	})
	if err = notFound(err); err != nil {
		if err == ErrNotFound {
			return false, nil
		}
		return false, err
	}
	subs, err := t.q.LateSubscribers(ctx, dbsqlc.LateSubscribersParams{TenantID: tenant, ActionID: id})
	if err != nil {
		return false, fmt.Errorf("late results of %s: %w", id, err)
	}
	jobs := make([]LateJob, len(subs))
	for i, s := range subs {
		jobs[i] = LateJob{TenantID: tenant, ActionID: id, CallPlatform: s.CallPlatform, CallID: s.CallID}
	}
	return true, t.queueLate(ctx, tenant, id, jobs)
}

// queueLate inserts the delivery jobs in the transaction.
func (t *Tx) queueLate(ctx context.Context, tenant, action uuid.UUID, jobs []LateJob) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: j}
	}
	if _, err := t.jobs.InsertManyTx(ctx, t.tx, params); err != nil {
		return fmt.Errorf("queue late results of %s (tenant %s): %w", action, tenant, err)
	}
	return nil
}

// LateSubscriber returns a call's subscription to an action's late result.
func (q queries) LateSubscriber(ctx context.Context, j LateJob) (LateSubscriber, error) {
	r, err := q.q.LateSubscriber(ctx, dbsqlc.LateSubscriberParams{
		TenantID: j.TenantID, ActionID: j.ActionID, CallPlatform: j.CallPlatform, CallID: j.CallID,
	})
	if err != nil {
		return LateSubscriber{}, notFound(err)
	}
	return LateSubscriber{
		TenantID: r.TenantID, ActionID: r.ActionID, CallPlatform: r.CallPlatform, CallID: r.CallID, Tool: r.Tool,
		ControlURL: r.ControlUrl, Ended: r.CallEndedAt != nil, Delivered: r.DeliveredAt != nil,
	}, nil
}

// EndLateResults notes that a call has ended: none of its late results is
// delivered any more.
func (q queries) EndLateResults(ctx context.Context, tenant uuid.UUID, platform, callID string) error {
	_, err := q.q.EndLateResults(ctx, dbsqlc.EndLateResultsParams{TenantID: tenant, CallPlatform: platform, CallID: callID})
	return err
}

// LateDelivered records that a call got an action's late result; false
// when it was recorded already.
func (q queries) LateDelivered(ctx context.Context, j LateJob) (bool, error) {
	n, err := q.q.LateDelivered(ctx, dbsqlc.LateDeliveredParams{
		TenantID: j.TenantID, ActionID: j.ActionID, CallPlatform: j.CallPlatform, CallID: j.CallID,
	})
	return n == 1, err
}
