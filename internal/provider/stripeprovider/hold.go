package stripeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/oncecall/oncecall/internal/provider"
)

// holdAtApproval makes the hold of an approved payment intent: a
// PaymentIntent with manual capture, created and confirmed under the step's
// key. Its record carries the capture deadline. A refused hold (declined,
// needing the cardholder) is cancelled and rejects the approval.
func (p *Provider) holdAtApproval(ctx context.Context, w provider.Write, c charge) (provider.Record, error) {
	pi, err := p.hold(ctx, w, c)
	if err != nil {
		return provider.Record{}, err
	}
	rec, err := holdEvidence(pi)
	if rej, ok := err.(*provider.Rejected); ok {
		p.cancel(ctx, w.Key, c.Account, pi.ID)
		return provider.Record{}, rej
	}
	return rec, err
}

// captureHold charges an intent held at approval: it captures the hold
// (amount_to_capture: the charged amount, at most the held one).
func (p *Provider) captureHold(ctx context.Context, w provider.Write, c charge) (provider.Record, error) {
	return p.captureOrRelease(ctx, w, c, c.Hold, false)
}

// LookupWrite finds what became of a step's write on the account it was
// made on (the step's payload names it): a hold by its key in metadata
// (Stripe's search), the capture of a hold made at approval by the
// PaymentIntent itself, any other charge by its key; a captured
// PaymentIntent is a charge's only if its capture names that charge, for
// its amount (captureEvidence).
func (p *Provider) LookupWrite(ctx context.Context, w provider.Write) (provider.Record, bool, error) {
	switch w.Operation {
	case LinkCreateOperation, LinkOperation:
		return p.lookupLink(ctx, w)
	case CancelOperation:
		c, err := parseCancel(w)
		if err != nil {
			return provider.Record{}, false, err
		}
		return p.lookupCancel(ctx, w, c)
	}
	var c charge
	if err := json.Unmarshal(w.Payload, &c); err != nil {
		return provider.Record{}, false, fmt.Errorf("read the step's payload: %w", err)
	}
	switch {
	case w.Operation == HoldOperation:
		pi, err := p.searchPI(ctx, c.Account, fmt.Sprintf("metadata['%s']:'%s'", MetaKey, w.Key))
		if err != nil || pi == nil {
			return provider.Record{}, false, err
		}
		rec, err := holdEvidence(pi)
		if rej, ok := err.(*provider.Rejected); ok {
			return provider.Record{ID: pi.ID, Status: "rejected", Code: rej.Code}, true, nil
		}
		return rec, err == nil, err
	case c.Hold != "":
		pi, err := p.sc.V1PaymentIntents.Retrieve(ctx, c.Hold, &stripe.PaymentIntentRetrieveParams{Params: p.params("", c.Account)})
		if err != nil {
			return provider.Record{}, false, err
		}
		return chargeLookup(pi, w, c)
	}
	pi, err := p.searchPI(ctx, c.Account, fmt.Sprintf("metadata['%s']:'%s'", MetaKey, w.Key))
	if err != nil || pi == nil {
		return provider.Record{}, false, err
	}
	return chargeLookup(pi, w, c)
}

// holdEvidence is what a PaymentIntent says about a hold: made (awaiting
// capture, or already captured), refused (a *provider.Rejected), or not
// settled yet.
func holdEvidence(pi *stripe.PaymentIntent) (provider.Record, error) {
	switch pi.Status {
	case stripe.PaymentIntentStatusRequiresCapture, stripe.PaymentIntentStatusSucceeded:
		rec := record(pi)
		rec.Until = CaptureBefore(pi)
		return rec, nil
	case stripe.PaymentIntentStatusProcessing:
		return provider.Record{}, fmt.Errorf("%w: payment intent %s is still processing", provider.ErrAmbiguous, pi.ID)
	case stripe.PaymentIntentStatusRequiresAction:
		return provider.Record{}, &provider.Rejected{Code: AuthenticationRequired, Message: "payment intent " + pi.ID + " needs the cardholder to authenticate"}
	}
	return provider.Record{}, &provider.Rejected{Code: Declined, Message: "payment intent " + pi.ID + " is " + string(pi.Status)}
}

// CaptureBefore is until when a hold can be captured: its latest charge's
// payment_method_details.card.capture_before, or 7 days from its creation
// when Stripe does not say.
func CaptureBefore(pi *stripe.PaymentIntent) time.Time {
	if ch := pi.LatestCharge; ch != nil && ch.PaymentMethodDetails != nil && ch.PaymentMethodDetails.Card != nil &&
		ch.PaymentMethodDetails.Card.CaptureBefore > 0 {
		return time.Unix(ch.PaymentMethodDetails.Card.CaptureBefore, 0).UTC()
	}
	return time.Unix(pi.Created, 0).UTC().Add(HoldWindow)
}
