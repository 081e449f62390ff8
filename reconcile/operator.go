package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// Resolution is an operator's decision on a stuck action, with the evidence
// (oncecall.Resolution).
type Resolution = oncecall.Resolution

// actor is who resolved it.
func actor(r Resolution) oncecall.Actor {
	if r.Actor.Name == "" {
		return oncecall.Actor{Name: r.By, Via: oncecall.ViaAPI}
	}
	return r.Actor
}

// Detail is an action with its steps and timeline, for operators
// (oncecall.ActionDetail).
type Detail = oncecall.ActionDetail

// Operator is the operator service (oncecall.OperatorService) over the
// store and the operation registry: the operator API, the console and the
// command line take the same path through Show, Resolve, Retry and Note.
type Operator struct {
	Store *db.Store
	Ops   *op.Registry
}

var _ oncecall.OperatorService = Operator{}

// Show returns an action with its steps and timeline (Show).
func (o Operator) Show(ctx context.Context, id uuid.UUID) (Detail, error) {
	return Show(ctx, o.Store, id)
}

// Resolve records an operator's resolution (Resolve).
func (o Operator) Resolve(ctx context.Context, id uuid.UUID, r Resolution) (oncecall.Action, error) {
	return Resolve(ctx, o.Store, o.Ops, id, r)
}

// Retry gives an action back to the reconciler (Retry).
func (o Operator) Retry(ctx context.Context, id uuid.UUID, who oncecall.Actor, bulk string) (oncecall.Action, error) {
	return Retry(ctx, o.Store, id, who, bulk)
}

// Note adds an operator's note to the timeline (Note).
func (o Operator) Note(ctx context.Context, id uuid.UUID, who oncecall.Actor, text string) error {
	return Note(ctx, o.Store, id, who, text)
}

// Show returns an action with its steps and timeline.
func Show(ctx context.Context, store *db.Store, id uuid.UUID) (Detail, error) {
	a, err := store.ActionAnyTenant(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	steps, err := store.Steps(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	events, err := store.Events(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Action: a, Steps: steps, Events: events}, nil
}

// operatorLease bounds how long an operator's resolution holds an action.
const operatorLease = time.Minute

// errLeaseLost ends a resolution whose lease on the action was taken over
// before it wrote (it outlived the lease, and another operator or a
// reconciler took the action): its transaction rolls back, so nothing of it
// is recorded, and the operator looks again before deciding.
var errLeaseLost = fault.New(fault.InFlight,
	"someone else is resolving or working on this action: this resolution lost its hold on it, and nothing was recorded. "+
		"Look at the action again before deciding")

// Resolve records an operator's resolution of an action waiting for one:
// an unfinished action's unresolved required step takes the given outcome
// and the action completes; a completed action's stuck follow-up steps take
// it and the action leaves the operator's queue (its outcome stays). The
// decision stays in the timeline with who, when and the evidence.
//
// The resolution takes the action's lease first, so it never races a
// request or a reconciler: while any of them holds the action (a step may
// be in flight) it is refused with ACTION_IN_FLIGHT.
func Resolve(ctx context.Context, store *db.Store, ops *op.Registry, id uuid.UUID, r Resolution) (oncecall.Action, error) {
	switch {
	case r.Outcome != oncecall.Confirmed && r.Outcome != oncecall.Rejected:
		return oncecall.Action{}, fault.Field("outcome", "must be confirmed or rejected")
	case r.Outcome == oncecall.Confirmed && r.ProviderRef == "":
		return oncecall.Action{}, fault.Field("provider_ref", "is required to confirm: the provider's reference of the write is the evidence")
	case r.Note == "":
		return oncecall.Action{}, fault.Field("note", "is required: record the evidence")
	case actor(r).Name == "":
		return oncecall.Action{}, fault.Field("by", "is required: who resolved it")
	}
	a, err := store.ActionAnyTenant(ctx, id)
	if err != nil {
		return oncecall.Action{}, err
	}
	if a.State == oncecall.Completed && !a.NeedsOperator {
		return oncecall.Action{}, fault.New(fault.InvalidInput, "the action is already completed (%s)", a.Outcome)
	}
	owner := uuid.New()
	held, err := store.TakeLease(ctx, id, owner, operatorLease)
	if err != nil {
		return oncecall.Action{}, err
	}
	if !held {
		return oncecall.Action{}, fault.New(fault.InFlight, "the action is being worked on (a step may be in flight); look again and retry shortly")
	}
	// Read again under the lease: nothing changes it from here on.
	if a, err = store.ActionAnyTenant(ctx, id); err != nil {
		return oncecall.Action{}, err
	}
	steps, err := store.Steps(ctx, id)
	if err != nil {
		return oncecall.Action{}, err
	}
	if a.State == oncecall.Completed {
		err = resolveFollowUps(ctx, store, a, owner, steps, r)
	} else {
		err = resolveAction(ctx, store, ops, a, owner, steps, r)
	}
	if err != nil {
		// Let the action go; a running one is unknown from now on.
		store.ReleaseAction(context.WithoutCancel(ctx), id, owner, false) //nolint:errcheck // the lease expires anyway
		return oncecall.Action{}, err
	}
	return store.ActionAnyTenant(ctx, id)
}

// resolveAction completes an unfinished action with the operator's outcome.
func resolveAction(ctx context.Context, store *db.Store, ops *op.Registry, a oncecall.Action, owner uuid.UUID, steps []oncecall.Step, r Resolution) error {
	var res idem.Result
	var err error
	if r.Outcome == oncecall.Confirmed {
		res, err = ops.Confirmed(a, provider.Record{ID: r.ProviderRef, Status: "committed"})
	} else {
		res, err = op.Reject(cmp.Or(r.Reason, "OPERATOR_REJECTED"), map[string]string{"resolved_by": "operator"})
	}
	if err != nil {
		return err
	}
	err = store.InTx(ctx, func(tx *db.Tx) error {
		for _, s := range steps {
			if !s.Required || s.State == oncecall.StepSucceeded || s.State == oncecall.StepRejected {
				continue
			}
			if err := recordDecision(ctx, tx, a.ID, owner, s, r, res.Reason); err != nil {
				return err
			}
		}
		resolved, err := tx.ResolveAction(ctx, a.ID, owner, db.Completion{
			Outcome: res.Outcome, Reason: res.Reason, Status: res.Status, ResourceID: res.ResourceID, Result: res.Body,
		}, false)
		if err != nil {
			return err
		}
		if !resolved {
			return errLeaseLost
		}
		if err := ops.Settle(ctx, tx, a, res, r.ProviderRef); err != nil {
			return err
		}
		if err := addDecision(ctx, tx, a.ID, "", r, res.Reason); err != nil {
			return err
		}
		return audit(ctx, tx, a, "", r, res.Reason)
	})
	if err != nil {
		return fmt.Errorf("resolve action: %w", err)
	}
	return nil
}

// resolveFollowUps resolves the open steps of a completed action; its
// outcome stays as it is.
func resolveFollowUps(ctx context.Context, store *db.Store, a oncecall.Action, owner uuid.UUID, steps []oncecall.Step, r Resolution) error {
	reason := cmp.Or(r.Reason, "OPERATOR_REJECTED")
	err := store.InTx(ctx, func(tx *db.Tx) error {
		for _, s := range steps {
			if s.State == oncecall.StepSucceeded || s.State == oncecall.StepRejected {
				continue
			}
			if err := recordDecision(ctx, tx, a.ID, owner, s, r, reason); err != nil {
				return err
			}
			if err := addDecision(ctx, tx, a.ID, s.Name, r, reason); err != nil {
				return err
			}
			if err := audit(ctx, tx, a, s.Name, r, reason); err != nil {
				return err
			}
		}
		cleared, err := tx.ClearNeedsOperator(ctx, a.ID, owner)
		if err == nil && !cleared {
			err = errLeaseLost
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("resolve follow-up steps: %w", err)
	}
	return nil
}

// recordDecision gives step s the operator's outcome.
func recordDecision(ctx context.Context, tx *db.Tx, action, owner uuid.UUID, s oncecall.Step, r Resolution, reason string) error {
	u := db.StepUpdate{State: oncecall.StepSucceeded, ProviderRef: r.ProviderRef, Checks: s.Checks}
	if r.Outcome == oncecall.Rejected {
		u = db.StepUpdate{State: oncecall.StepRejected, RejectCode: reason, Checks: s.Checks}
	}
	ok, err := tx.RecordStep(ctx, action, s.Name, owner, s.Version, u)
	if err == nil && !ok {
		// The lease is held through the step's version: under it, nobody
		// else changes the step.
		err = errLeaseLost
	}
	return err
}

func addDecision(ctx context.Context, tx *db.Tx, action uuid.UUID, step string, r Resolution, reason string) error {
	return tx.AddEvent(ctx, action, "resolved_by_operator", step, map[string]string{
		"by": actor(r).Name, "outcome": string(r.Outcome), "provider_ref": r.ProviderRef, "reason": reason, "evidence": r.Note,
	})
}

// audit records the resolution in the audit trail, in its transaction:
// with the decision, or not at all.
func audit(ctx context.Context, tx *db.Tx, a oncecall.Action, step string, r Resolution, reason string) error {
	detail := map[string]string{"outcome": string(r.Outcome), "note": r.Note}
	if r.ProviderRef != "" {
		detail["provider_ref"] = r.ProviderRef
	}
	if r.Outcome == oncecall.Rejected {
		detail["reason"] = reason
	}
	if step != "" {
		detail["step"] = step
	}
	if r.Bulk != "" {
		detail["bulk"] = r.Bulk
	}
	return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: actor(r), TenantID: a.TenantID, ActionID: a.ID, Kind: "resolved"}, detail)
}
