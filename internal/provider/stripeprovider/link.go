package stripeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/oncecall/oncecall/internal/provider"
)

// Payment links (provider.Links): a Checkout Session in payment mode whose
// URL the customer opens from an SMS, and the wait for its payment.
const (
	// LinkCreateOperation makes the Checkout Session under the step's key.
	LinkCreateOperation = "payment.link.create"
	// LinkOperation waits for the session's payment: a check, not a write.
	LinkOperation = "payment.link"
	// LinkExpired: the session expired unpaid.
	LinkExpired = "PAYMENT_LINK_EXPIRED"
	// MetaSessionStep names the step that made a Checkout Session; its
	// oncecall_step names the step that waits for its payment, which
	// Stripe's events about it (and about its PaymentIntent) concern.
	MetaSessionStep = "oncecall_session_step"
	// maxLinkTTL is the longest Stripe keeps a Checkout Session open: a
	// session made for a step is no older than its expiry minus this.
	maxLinkTTL = 24 * time.Hour
)

// link is the payload of a session's step (payment.LinkRequest).
type link struct {
	IntentID    string `json:"payment_intent_id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description"`
	Account     string `json:"account"`
	ExpiresAt   int64  `json:"expires_at"`
	AwaitStep   string `json:"await_step"`
}

// linkPaid is the payload of the step that waits for the payment
// (payment.LinkPaid).
type linkPaid struct {
	IntentID string `json:"payment_intent_id"`
	Session  string `json:"session"`
	Account  string `json:"account"`
}

// writeLink performs the payment link's steps.
func (p *Provider) writeLink(ctx context.Context, w provider.Write) (provider.Record, error) {
	if w.Operation == LinkOperation {
		var l linkPaid
		if err := json.Unmarshal(w.Payload, &l); err != nil || !strings.HasPrefix(l.Session, "cs_") {
			return provider.Record{}, &provider.Rejected{Code: "INVALID_LINK", Message: "the step names no Checkout Session"}
		}
		return p.paid(ctx, l)
	}
	var l link
	if err := json.Unmarshal(w.Payload, &l); err != nil || l.Amount <= 0 || l.Currency == "" || l.ExpiresAt == 0 {
		return provider.Record{}, &provider.Rejected{Code: "INVALID_LINK", Message: "the link payload has no amount, currency or expiry"}
	}
	return p.createSession(ctx, w, l)
}

// createSession makes the Checkout Session under the step's key: the
// intent's amount as one line, payable until the expiry fixed at the claim,
// with oncecall's ids in its metadata and in its PaymentIntent's.
func (p *Provider) createSession(ctx context.Context, w provider.Write, l link) (provider.Record, error) {
	action, stepName, _ := strings.Cut(w.ExternalRef, "/")
	name := l.Description
	if name == "" {
		name = "Payment"
	}
	params := &stripe.CheckoutSessionCreateParams{
		Params: p.params(w.Key, l.Account),
		Mode:   stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String(strings.ToLower(l.Currency)),
				UnitAmount:  stripe.Int64(l.Amount),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(name)},
			},
		}},
		ExpiresAt:         stripe.Int64(l.ExpiresAt),
		ClientReferenceID: stripe.String(action),
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: map[string]string{
			MetaAction: action, MetaStep: l.AwaitStep, MetaIntent: l.IntentID,
		}},
	}
	if p.cfg.LinkReturnURL != "" {
		params.SuccessURL = stripe.String(p.cfg.LinkReturnURL)
	}
	params.AddMetadata(MetaKey, w.Key)
	params.AddMetadata(MetaAction, action)
	params.AddMetadata(MetaStep, l.AwaitStep)
	params.AddMetadata(MetaSessionStep, stepName)
	params.AddMetadata(MetaIntent, l.IntentID)
	cs, err := p.sc.V1CheckoutSessions.Create(ctx, params)
	if err == nil {
		return sessionRecord(cs, w.ExternalRef), nil
	}
	err = classify(err)
	if provider.Classify(err) != "ambiguous" {
		return provider.Record{}, err
	}
	// Stripe replays a 500 under its key for good: a session made before
	// the failure is found by its key in metadata.
	if found, ferr := p.findSession(ctx, w.Key, l); ferr == nil && found != nil {
		return sessionRecord(found, w.ExternalRef), nil
	}
	return provider.Record{}, err
}

func sessionRecord(cs *stripe.CheckoutSession, ref string) provider.Record {
	return provider.Record{ID: cs.ID, ExternalRef: ref, Status: "committed", Data: map[string]string{"id": cs.ID, "url": cs.URL}}
}

// findSession finds the Checkout Session made under a step's key: Stripe
// has no search for Checkout Sessions, so the sessions of the account made
// since the longest a session lives before its expiry are listed (a list
// sees a new session at once) and matched by the key in metadata.
func (p *Provider) findSession(ctx context.Context, key string, l link) (*stripe.CheckoutSession, error) {
	lp := &stripe.CheckoutSessionListParams{CreatedRange: &stripe.RangeQueryParams{
		GreaterThanOrEqual: time.Unix(l.ExpiresAt, 0).Add(-maxLinkTTL).Unix(),
	}}
	lp.Limit = stripe.Int64(100)
	if acct := p.account(l.Account); acct != "" {
		lp.SetStripeAccount(acct)
	}
	for cs, err := range p.sc.V1CheckoutSessions.List(ctx, lp) {
		if err != nil {
			return nil, err
		}
		if cs.Metadata[MetaKey] == key {
			return cs, nil
		}
	}
	return nil, nil
}

// paid asks Stripe whether the session was paid: the payment's record (its
// PaymentIntent), a rejection (expired, or its payment failed), or
// provider.ErrWaiting while the customer has not paid.
func (p *Provider) paid(ctx context.Context, l linkPaid) (provider.Record, error) {
	rp := &stripe.CheckoutSessionRetrieveParams{Params: p.params("", l.Account)}
	rp.AddExpand("payment_intent")
	cs, err := p.sc.V1CheckoutSessions.Retrieve(ctx, l.Session, rp)
	if err != nil {
		err = classify(err)
		if provider.Classify(err) == "rejected" {
			// A session that cannot be read is not news of a payment.
			return provider.Record{}, fmt.Errorf("%w: checkout session %s cannot be read: %w", provider.ErrAmbiguous, l.Session, err)
		}
		return provider.Record{}, err
	}
	piStatus := stripe.PaymentIntentStatus("")
	ref := cs.ID
	if cs.PaymentIntent != nil {
		piStatus, ref = cs.PaymentIntent.Status, nonEmpty(cs.PaymentIntent.ID, cs.ID)
	}
	switch {
	case cs.Status == stripe.CheckoutSessionStatusComplete &&
		(cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid || cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired):
		return provider.Record{ID: ref, Status: "committed", Data: map[string]string{
			"session": cs.ID, "amount": strconv.FormatInt(cs.AmountTotal, 10), "currency": strings.ToUpper(string(cs.Currency)),
		}}, nil
	case cs.Status == stripe.CheckoutSessionStatusExpired:
		return provider.Record{}, &provider.Rejected{Code: LinkExpired, Message: "checkout session " + cs.ID + " expired unpaid"}
	case cs.Status == stripe.CheckoutSessionStatusComplete &&
		(piStatus == stripe.PaymentIntentStatusCanceled || piStatus == stripe.PaymentIntentStatusRequiresPaymentMethod):
		// Completed with a delayed payment method whose payment failed.
		return provider.Record{}, &provider.Rejected{Code: Declined, Message: "the payment of checkout session " + cs.ID + " failed"}
	}
	return provider.Record{}, fmt.Errorf("%w: checkout session %s is %s, payment %s", provider.ErrWaiting, cs.ID, cs.Status, cs.PaymentStatus)
}

// lookupLink finds what became of a payment link's step: its session by
// its key, or the session's payment.
func (p *Provider) lookupLink(ctx context.Context, w provider.Write) (provider.Record, bool, error) {
	if w.Operation == LinkOperation {
		rec, err := p.writeLink(ctx, w)
		if rej, ok := err.(*provider.Rejected); ok {
			return provider.Record{ID: rec.ID, Status: "rejected", Code: rej.Code}, true, nil
		}
		return rec, err == nil, err
	}
	var l link
	if err := json.Unmarshal(w.Payload, &l); err != nil {
		return provider.Record{}, false, fmt.Errorf("read the step's payload: %w", err)
	}
	cs, err := p.findSession(ctx, w.Key, l)
	if err != nil || cs == nil {
		return provider.Record{}, false, err
	}
	return sessionRecord(cs, w.ExternalRef), true, nil
}
