package oncecall

import (
	"context"

	"github.com/google/uuid"
)

// Resolution is an operator's decision on a stuck action, with the evidence.
type Resolution struct {
	Outcome     Outcome // confirmed or rejected
	ProviderRef string  // the provider's reference of the write (required to confirm)
	Reason      string  // the rejection code; default OPERATOR_REJECTED
	Note        string  // the evidence, in the operator's words
	By          string  // who resolved it, when Actor is not given
	// Actor is who resolved it: the signed-in person, or the holder of the
	// operator token or of the database, by name. Default: By, through
	// the operator API.
	Actor Actor
	// Bulk names the bulk run the resolution is part of, in the audit trail.
	Bulk string
}

// ActionDetail is an action with its steps and timeline, for operators.
type ActionDetail struct {
	Action Action
	Steps  []Step
	Events []Event
}

// OperatorService is what operators do to the actions of every tenant. The
// operator API (/v1/ops) and the console call the same one, so a decision
// takes one path whoever makes it (package reconcile implements it).
type OperatorService interface {
	// Show returns an action with its steps and timeline.
	Show(ctx context.Context, id uuid.UUID) (ActionDetail, error)
	// Resolve records an operator's resolution of an action waiting for one.
	Resolve(ctx context.Context, id uuid.UUID, r Resolution) (Action, error)
	// Retry gives an action waiting for an operator back to the reconciler;
	// bulk names the bulk run it is part of, if any.
	Retry(ctx context.Context, id uuid.UUID, who Actor, bulk string) (Action, error)
	// Note adds an operator's note to the action's timeline.
	Note(ctx context.Context, id uuid.UUID, who Actor, text string) error
}
