package reconcile

import (
	"cmp"
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// Resolution is an operator's decision on a stuck action, with the evidence.
type Resolution struct {
	Outcome     db.Outcome // confirmed or rejected
	ProviderRef string     // the provider's reference of the write (required to confirm)
	Reason      string     // the rejection code; default OPERATOR_REJECTED
	Note        string     // the evidence, in the operator's words
	By          string     // who resolved it
}

// Detail is an action with its steps and timeline, for operators.
type Detail struct {
	Action db.Action
	Steps  []db.Step
	Events []db.Event
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

// Resolve records an operator's resolution of an unfinished action: its
// unresolved required step takes the given outcome, the action completes,
// and the decision stays in the timeline with who, when and the evidence.
func Resolve(ctx context.Context, store *db.Store, ops *op.Registry, id uuid.UUID, r Resolution) (db.Action, error) {
	switch {
	case r.Outcome != db.Confirmed && r.Outcome != db.Rejected:
		return db.Action{}, fault.Field("outcome", "must be confirmed or rejected")
	case r.Outcome == db.Confirmed && r.ProviderRef == "":
		return db.Action{}, fault.Field("provider_ref", "is required to confirm: the provider's reference of the write is the evidence")
	case r.Note == "":
		return db.Action{}, fault.Field("note", "is required: record the evidence")
	case r.By == "":
		return db.Action{}, fault.Field("by", "is required: who resolved it")
	}
	a, err := store.ActionAnyTenant(ctx, id)
	if err != nil {
		return db.Action{}, err
	}
	if a.State == db.Completed {
		return db.Action{}, fault.New(fault.InvalidInput, "the action is already completed (%s)", a.Outcome)
	}
	var res idem.Result
	if r.Outcome == db.Confirmed {
		res, err = ops.Confirmed(a, provider.Record{ID: r.ProviderRef, Status: "committed"})
	} else {
		res, err = op.Reject(cmp.Or(r.Reason, "OPERATOR_REJECTED"), map[string]string{"resolved_by": "operator"})
	}
	if err != nil {
		return db.Action{}, err
	}
	steps, err := store.Steps(ctx, id)
	if err != nil {
		return db.Action{}, err
	}
	err = store.InTx(ctx, func(tx *db.Tx) error {
		for _, s := range steps {
			if !s.Required || s.State == db.StepSucceeded || s.State == db.StepRejected {
				continue
			}
			u := db.StepUpdate{State: db.StepSucceeded, ProviderRef: r.ProviderRef, Checks: s.Checks, NextCheckAt: s.NextCheckAt}
			if r.Outcome == db.Rejected {
				u = db.StepUpdate{State: db.StepRejected, RejectCode: res.Reason, Checks: s.Checks, NextCheckAt: s.NextCheckAt}
			}
			if err := tx.RecordStep(ctx, id, s.Name, u); err != nil {
				return err
			}
		}
		if err := tx.ResolveAction(ctx, id, db.Completion{
			Outcome: res.Outcome, Reason: res.Reason, Status: res.Status, ResourceID: res.ResourceID, Result: res.Body,
		}); err != nil {
			return err
		}
		return tx.AddEvent(ctx, id, "resolved_by_operator", "", map[string]string{
			"by": r.By, "outcome": string(r.Outcome), "provider_ref": r.ProviderRef, "reason": res.Reason, "evidence": r.Note,
		})
	})
	if err != nil {
		return db.Action{}, fmt.Errorf("resolve action: %w", err)
	}
	return store.ActionAnyTenant(ctx, id)
}
