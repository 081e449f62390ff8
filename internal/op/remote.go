package op

import (
	"fmt"

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

// SendInput declares a remote write whose payload is the normalised input and
// whose result is the provider's reference of it, answered with status.
func SendInput[In any](capability string, status int) *Remote[In] {
	return &Remote[In]{
		Capability: capability,
		Payload:    func(in In) any { return in },
		Confirmed: func(in In, rec provider.Record) (idem.Result, error) {
			return Confirm(status, rec.ID, remoteResult[In]{ID: rec.ID, ProviderRef: rec.ID, Request: in})
		},
	}
}

// Confirmed is the result of an action whose required remote write the
// provider holds as rec: the operation's own remote result, rebuilt from the
// normalised request the action was claimed with. Used when the answer
// arrives later than the request (the reconciler, an operator).
func (r *Registry) Confirmed(a db.Action, rec provider.Record) (idem.Result, error) {
	o, ok := r.Get(a.Operation)
	if !ok {
		return idem.Result{}, fmt.Errorf("unknown operation %q", a.Operation)
	}
	p, err := o.Prepare(a.Request, nil)
	if err != nil {
		return idem.Result{}, fmt.Errorf("re-prepare %s: %w", a.Operation, err)
	}
	if p.Confirmed == nil {
		return Confirm(200, rec.ID, map[string]string{"id": rec.ID, "provider_ref": rec.ID})
	}
	return p.Confirmed(rec)
}
