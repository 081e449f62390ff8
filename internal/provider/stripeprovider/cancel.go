package stripeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/oncecall/oncecall/internal/provider"
)

// CancelOperation withdraws an approved intent: its hold (a PaymentIntent
// with manual capture) is cancelled, under a key derived from the step's
// (the <key>/cancel convention of every cancel the adapter sends).
const CancelOperation = "payment_intent.cancel"

// AlreadyCaptured: the hold to cancel was captured.
const AlreadyCaptured = "INTENT_ALREADY_CAPTURED"

// cancelRequest is the payload of a withdrawal's step
// (payment.CancelRequest).
type cancelRequest struct {
	IntentID string `json:"payment_intent_id"`
	Hold     string `json:"hold"`
	Account  string `json:"account"`
}

func parseCancel(w provider.Write) (cancelRequest, error) {
	var c cancelRequest
	if err := json.Unmarshal(w.Payload, &c); err != nil || !strings.HasPrefix(c.Hold, "pi_") {
		return c, &provider.Rejected{Code: "INVALID_CANCEL", Message: "the step names no PaymentIntent to cancel"}
	}
	return c, nil
}

// cancelHold cancels the hold of a withdrawn intent. A hold Stripe has
// cancelled already (released at its capture deadline, or in the
// dashboard) is as good: nothing can be captured from it.
func (p *Provider) cancelHold(ctx context.Context, w provider.Write) (provider.Record, error) {
	c, err := parseCancel(w)
	if err != nil {
		return provider.Record{}, err
	}
	pi, err := p.sc.V1PaymentIntents.Cancel(ctx, c.Hold, &stripe.PaymentIntentCancelParams{Params: p.params(w.Key+cancelKeySuffix, c.Account)})
	if err == nil && pi.Status == stripe.PaymentIntentStatusCanceled {
		return provider.Record{ID: pi.ID, ExternalRef: w.ExternalRef, Status: "committed"}, nil
	}
	// Refused (the hold is in another state), or not answered: the
	// PaymentIntent itself says what became of the hold.
	rec, found, lerr := p.lookupCancel(ctx, w, c)
	if lerr == nil && found {
		if rec.Status == "rejected" {
			return provider.Record{}, &provider.Rejected{Code: rec.Code, Message: "payment intent " + c.Hold + " was captured"}
		}
		return rec, nil
	}
	if err == nil {
		return provider.Record{}, fmt.Errorf("%w: payment intent %s is %s after its cancel", provider.ErrAmbiguous, pi.ID, pi.Status)
	}
	err = classify(err)
	if _, rejected := errors.AsType[*provider.Rejected](err); rejected {
		// Stripe refused the cancel of a hold it still holds: unknown
		// until the PaymentIntent can be read.
		return provider.Record{}, fmt.Errorf("%w: the cancel of %s was refused: %w", provider.ErrAmbiguous, c.Hold, err)
	}
	return provider.Record{}, err
}

// lookupCancel reads the hold: cancelled is the withdrawal's evidence,
// captured refuses it, still held means the cancel did not happen.
func (p *Provider) lookupCancel(ctx context.Context, w provider.Write, c cancelRequest) (provider.Record, bool, error) {
	pi, err := p.sc.V1PaymentIntents.Retrieve(ctx, c.Hold, &stripe.PaymentIntentRetrieveParams{Params: p.params("", c.Account)})
	if err != nil {
		return provider.Record{}, false, classify(err)
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusCanceled:
		return provider.Record{ID: pi.ID, ExternalRef: w.ExternalRef, Status: "committed"}, true, nil
	case stripe.PaymentIntentStatusSucceeded:
		return provider.Record{ID: pi.ID, Status: "rejected", Code: AlreadyCaptured}, true, nil
	}
	return provider.Record{}, false, nil
}
