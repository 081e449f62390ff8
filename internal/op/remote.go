package op

import (
	"context"
	"fmt"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/provider"
)

// remoteResult is the result of a write held by a remote provider: its
// reference there and the request it carried out.
type remoteResult[In any] struct {
	ID          string `json:"id"`
	ProviderRef string `json:"provider_ref"`
	Request     In     `json:"request"`
}

// Send is a Remote whose payload is the normalised input and whose result
// is the provider's reference of it, answered with Status. An operation's
// remote type may embed it and add the optional interfaces (Reserver,
// FollowUpper, ...).
type Send[In any] struct {
	Cap    string
	Status int
}

// SendInput declares a remote write of capability whose payload is the
// normalised input and whose result is the provider's reference of it,
// answered with status.
func SendInput[In any](capability string, status int) Send[In] {
	return Send[In]{Cap: capability, Status: status}
}

// Capability is the capability of the write.
func (s Send[In]) Capability() string { return s.Cap }

// Payload is the normalised input.
func (s Send[In]) Payload(in In) any { return in }

// Confirmed is the provider's reference of the write, with the request.
func (s Send[In]) Confirmed(in In, rec provider.Record) (idem.Result, error) {
	return Confirm(s.Status, rec.ID, remoteResult[In]{ID: rec.ID, ProviderRef: rec.ID, Request: in})
}

// prepared rebuilds an action's prepared request from the normalised input
// it was claimed with.
func (r *Registry) prepared(a oncecall.Action) (*Prepared, error) {
	o, ok := r.Get(a.Operation)
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", a.Operation)
	}
	p, err := o.Prepare(a.Request, nil)
	if err != nil {
		return nil, fmt.Errorf("re-prepare %s: %w", a.Operation, err)
	}
	return p, nil
}

// Confirmed is the result of an action whose required remote write the
// provider holds as rec: the operation's own remote result, rebuilt from the
// normalised request the action was claimed with. Used when the answer
// arrives later than the request (the reconciler, an operator).
func (r *Registry) Confirmed(a oncecall.Action, rec provider.Record) (idem.Result, error) {
	p, err := r.prepared(a)
	if err != nil {
		return idem.Result{}, err
	}
	if rec.ExternalRef == "" {
		// An operator's evidence names the write only: its reference is
		// the required step's, named after the capability.
		rec.ExternalRef = a.ID.String() + "/" + p.Capability
	}
	return p.Confirmed(rec)
}

// Settle records locally the outcome res of a remote action (the intent a
// charge captured or released), in the transaction that completes it.
func (r *Registry) Settle(ctx context.Context, tx *db.Tx, a oncecall.Action, res idem.Result, providerRef string) error {
	p, err := r.prepared(a)
	if err != nil {
		return err
	}
	return p.Settle(ctx, tx, idem.Exec{TenantID: a.TenantID, ActionID: a.ID}, res, providerRef)
}

// Standing tells what became of the object a completed action describes
// ("" while its answer holds; see op.Stander). An action whose request
// was pruned, or whose operation declares nothing, holds.
func (r *Registry) Standing(ctx context.Context, s *db.Store, a oncecall.Action) (string, error) {
	o, ok := r.Get(a.Operation)
	if !ok {
		return "", nil
	}
	p, err := o.Prepare(a.Request, nil)
	if err != nil {
		// A pruned request: what the resource id alone tells, if anything.
		if by, ok := o.(interface {
			standingByResource(context.Context, *db.Store, oncecall.Action) (string, error)
		}); ok {
			return by.standingByResource(ctx, s, a)
		}
		return "", nil
	}
	return p.Standing(ctx, s, a)
}
