package op

import (
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
