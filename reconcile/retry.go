package reconcile

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

// Retry gives an action waiting for an operator back to the reconciler:
// its open steps are due now with their checks counted from zero, and it
// leaves the operator's queue. The reconciler then looks the writes up
// again (or re-sends one whose provider still protects its key) as it did
// at first, and sends the action back to the queue if the evidence still
// does not decide it. Nothing is sent from here: a retry is never a second
// effect, only another round of evidence.
//
// Like a resolution it takes the action's lease first, is refused while a
// request or the reconciler holds it (ACTION_IN_FLIGHT), changes the steps
// only at the version it read, and is recorded in the timeline and the
// audit trail with who asked for it.
func Retry(ctx context.Context, store *db.Store, id uuid.UUID, who oncecall.Actor, bulk string) (oncecall.Action, error) {
	if who.Name == "" {
		return oncecall.Action{}, fault.Field("by", "is required: who retried it")
	}
	a, err := store.ActionAnyTenant(ctx, id)
	if err != nil {
		return oncecall.Action{}, err
	}
	if !a.NeedsOperator {
		return oncecall.Action{}, fault.New(fault.InvalidInput, "the action is not waiting for an operator: the reconciler is already on it")
	}
	owner := uuid.New()
	held, err := store.TakeLease(ctx, id, owner, operatorLease)
	if err != nil {
		return oncecall.Action{}, err
	}
	if !held {
		return oncecall.Action{}, fault.New(fault.InFlight, "the action is being worked on (a step may be in flight); look again and retry shortly")
	}
	steps, err := store.Steps(ctx, id)
	if err == nil {
		err = store.InTx(ctx, func(tx *db.Tx) error {
			var open []string
			for _, s := range steps {
				if s.State != oncecall.StepPending && s.State != oncecall.StepUnknown {
					continue
				}
				ok, err := tx.RecordStep(ctx, id, s.Name, owner, s.Version, db.StepUpdate{State: s.State})
				if err != nil {
					return err
				}
				if !ok {
					return errLeaseLost
				}
				open = append(open, s.Name)
			}
			cleared, err := tx.ClearNeedsOperator(ctx, id, owner)
			if err != nil {
				return err
			}
			if !cleared {
				return errLeaseLost
			}
			if err := tx.AddEvent(ctx, id, "retried_by_operator", "", map[string]any{"by": who.Name, "steps": open}); err != nil {
				return err
			}
			detail := map[string]any{"steps": open}
			if bulk != "" {
				detail["bulk"] = bulk
			}
			return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: who, TenantID: a.TenantID, ActionID: id, Kind: "retried"}, detail)
		})
	}
	if err != nil {
		store.ReleaseAction(context.WithoutCancel(ctx), id, owner, false) //nolint:errcheck // the lease expires anyway
		return oncecall.Action{}, fmt.Errorf("retry action: %w", err)
	}
	return store.ActionAnyTenant(ctx, id)
}

// MaxNote is the longest operator note, in characters.
const MaxNote = 2000

// Note adds an operator's note to an action's timeline, with who wrote
// it, and to the audit trail. It changes nothing else, so it needs no
// lease.
func Note(ctx context.Context, store *db.Store, id uuid.UUID, who oncecall.Actor, text string) error {
	switch {
	case who.Name == "":
		return fault.Field("by", "is required: who wrote it")
	case text == "":
		return fault.Field("note", "is required")
	case utf8.RuneCountInString(text) > MaxNote || !utf8.ValidString(text):
		return fault.Field("note", "must be at most %d characters", MaxNote)
	}
	a, err := store.ActionAnyTenant(ctx, id)
	if err != nil {
		return err
	}
	return store.InTx(ctx, func(tx *db.Tx) error {
		if err := tx.AddEvent(ctx, id, "operator_note", "", map[string]string{"by": who.Name, "note": text}); err != nil {
			return err
		}
		return tx.AddAudit(ctx, oncecall.AuditEntry{Actor: who, TenantID: a.TenantID, ActionID: id, Kind: "noted"}, map[string]string{"note": text})
	})
}
