package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/message"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// Rejection reasons of payment.link.
const (
	// LinksNeedStripe: payment links are Stripe Checkout Sessions.
	LinksNeedStripe = "PAYMENT_LINKS_NEED_STRIPE"
	// LinkExpired: the customer did not pay before the link expired.
	LinkExpired = "PAYMENT_LINK_EXPIRED"
	// IntentHeldOnCard: the intent's amount is held on a card at Stripe;
	// it is charged with payment.charge, not by a link.
	IntentHeldOnCard = "INTENT_HELD_ON_CARD"
	// CustomerHasNoPhone: the link goes by SMS to the intent's customer.
	CustomerHasNoPhone = "CUSTOMER_HAS_NO_PHONE"
	// PaidByLinkOnly: an intent approved with payment_method payment_link
	// has no card to charge.
	PaidByLinkOnly = "INTENT_PAID_BY_LINK"
	// MessagingNotConfigured: no messaging provider would send the link's
	// SMS (oncecall's outbox sends nothing), so no link is made.
	MessagingNotConfigured = "MESSAGING_NOT_CONFIGURED"
)

// MethodLink is the payment method of an intent the customer pays by a
// payment link: nothing is held when it is approved.
const MethodLink = "payment_link"

// The steps of payment.link, in order: the Checkout Session is made, its
// URL is sent by SMS, and the action waits for the payment.
const (
	SessionStep = provider.Links + ".session"
	SMSStep     = provider.Messaging + ".link"
	// LinkCreateOperation is the session's write; the required step's is
	// payment.link itself.
	LinkCreateOperation = "payment.link.create"
)

// LinkTTL is how long a payment link can be paid: Stripe expires the
// Checkout Session then (Stripe allows 30 minutes to 24 hours).
const LinkTTL = time.Hour

// LinkInput is the input of payment.link.
type LinkInput struct {
	PaymentIntentID string `json:"payment_intent_id" required:"true" format:"uuid" desc:"The id of the payment intent the customer pays by the link: approved, not charged, not held on a card."`
}

// LinkRequest is the payload of the step that makes the Checkout Session:
// the intent's amount, on the tenant's Stripe account, payable until
// ExpiresAt (Unix seconds, fixed at the claim so every re-send under the
// step's key asks for the same session). AwaitStep is the step that waits
// for the payment: Stripe's events about the session name it.
type LinkRequest struct {
	IntentID    string `json:"payment_intent_id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
	Account     string `json:"account,omitempty"`
	ExpiresAt   int64  `json:"expires_at"`
	AwaitStep   string `json:"await_step"`
}

// LinkPaid is the payload of the step that waits for the payment: the
// Checkout Session (a reference to the session step's result) on its
// account.
type LinkPaid struct {
	IntentID string `json:"payment_intent_id"`
	Session  string `json:"session"`
	Account  string `json:"account,omitempty"`
}

// Link sends a payment link for an approved intent to its customer by SMS
// and answers once they have paid it.
var Link = family.Add(op.Define(op.Spec[LinkInput]{
	Name:    "payment.link",
	Label:   "Payment link",
	Version: 1,
	Tool:    "send_payment_link",
	Description: "Send the customer a payment link by text message for a payment they approved (a payment intent); " +
		"they pay on the card page it opens, never on this call. The answer is pending until they pay: never say the payment went through before check_action_status confirms it.",
	Logic:  linkOp{},
	Remote: linkRemote{},
	Say: op.Phrases{
		Confirmed: "The customer paid the payment link; the payment went through. You may tell the caller they have been charged the amount in details (amount_spoken says it).",
		Rejected: map[string]string{
			LinksNeedStripe:    "Payment links are not available for this business; nothing was sent or charged.",
			LinkExpired:        "The payment link expired before it was paid; nothing was charged. Offer to send a new link.",
			Declined:           "The payment by the link did not go through; nothing was charged.",
			IntentHeldOnCard:   "This payment is already held on the caller's card; charge it with charge_payment instead of sending a link.",
			PaidByLinkOnly:     "This payment is paid by a payment link; send one with send_payment_link instead of charging a card.",
			CustomerHasNoPhone: "There is no phone number on file for this customer; no link was sent and nothing was charged.",
			MessagingNotConfigured: "Payment links cannot be texted from this line: no messaging service is connected, so no " +
				"link was sent and nothing was charged. Tell the caller that, and that their payment stays approved to be paid " +
				"another way; you may offer a callback from the business about it (request_callback).",
			AlreadyCaptured:  "This payment was already charged earlier; do not send a link. You may tell the caller it is already paid.",
			ChargeInProgress: "An earlier charge or link of this payment is still being processed; nothing new was sent. Tell the caller it is still being processed.",
			IntentNotFound:   "The approved payment was not found; nothing was sent or charged.",
			Withdrawn:        "This payment approval was withdrawn; no link was sent and nothing was charged.",
			HoldExpired:      "This payment's card hold expired; no link was sent and nothing was charged.",
			"":               "The payment link could not be sent; nothing was charged.",
		},
		Pending: "A payment link is being sent to the caller's phone by text message. The payment is NOT confirmed and its result is unknown until " +
			"the caller pays on the page the link opens; do not tell the caller it is paid. Tell the caller to open the link in the text message to pay.",
	},
}))

// linkOp is the logic of Link.
type linkOp struct{}

func (linkOp) Normalize(in *LinkInput) error { return op.ID("payment_intent_id", &in.PaymentIntentID) }

func (linkOp) Identity(in LinkInput) []string { return []string{in.PaymentIntentID} }

func (linkOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in LinkInput) (idem.Result, error) {
	// oncecall's own tables have no page to pay on.
	return op.Reject(LinksNeedStripe, map[string]string{"payment_intent_id": in.PaymentIntentID})
}

// linkRemote makes the link through the provider that serves provider.Links
// (Stripe): in the claim's transaction the intent is checked and held for
// the action like a charge (no other charge or link of it can start), and
// the customer's phone and the tenant's account are read; then the steps
// make the Checkout Session (its key is the session's Idempotency-Key),
// send its URL by SMS through the messaging provider, and wait for the
// payment, which Stripe's signed events make due for a check. The outcome
// is recorded on the intent like a charge's. Without a messaging provider
// the link is refused (MESSAGING_NOT_CONFIGURED) before anything is made.
type linkRemote struct{}

func (linkRemote) Capability() string { return provider.Links }

func (linkRemote) Payload(in LinkInput) any { return in }

func (linkRemote) Before(in LinkInput) []op.FollowUp {
	return []op.FollowUp{
		{Name: SessionStep, Capability: provider.Links, Operation: LinkCreateOperation, Payload: in},
		{Name: SMSStep, Capability: provider.Messaging, Operation: message.Send.Name(), Payload: in},
	}
}

func (linkRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in LinkInput) (op.Reservation, error) {
	reject := func(reason string) (op.Reservation, error) {
		res, err := op.Reject(reason, map[string]string{"payment_intent_id": in.PaymentIntentID})
		return op.Reservation{Reject: &res}, err
	}
	pi, _, rejected, err := chargeable(ctx, tx, x, ChargeInput{PaymentIntentID: in.PaymentIntentID}, true)
	if err != nil || rejected != nil {
		return op.Reservation{Reject: rejected}, err
	}
	if !x.IsRemote(provider.Messaging) {
		// The link would wait in oncecall's outbox, which nothing
		// sends, while the caller is told to open it.
		return reject(MessagingNotConfigured)
	}
	hold, err := tx.PaymentIntentHold(ctx, x.TenantID, pi.ID)
	if err != nil {
		return op.Reservation{}, err
	}
	if hold.Ref != "" {
		return reject(IntentHeldOnCard)
	}
	c, err := tx.CustomerByID(ctx, x.TenantID, pi.CustomerID)
	if errors.Is(err, db.ErrNotFound) {
		return reject(CustomerNotFound)
	}
	if err != nil {
		return op.Reservation{}, err
	}
	if c.Phone == "" {
		return reject(CustomerHasNoPhone)
	}
	held, err := tx.HoldPaymentIntent(ctx, x.TenantID, pi.ID, x.ActionID)
	if err != nil {
		return op.Reservation{}, err
	}
	if !held {
		return op.Reservation{}, fmt.Errorf("hold payment intent %s: held by another action under its lock", pi.ID)
	}
	account, err := tx.TenantStripeAccount(ctx, x.TenantID)
	if err != nil {
		return op.Reservation{}, err
	}
	sender, err := tx.TenantTwilioSender(ctx, x.TenantID)
	if err != nil {
		return op.Reservation{}, err
	}
	body := "Your payment link for " + op.SpokenAmount(pi.Amount, pi.Currency)
	if pi.Description != "" {
		body += " (" + pi.Description + ")"
	}
	body += ": {{step:" + SessionStep + ".url}}"
	return op.Reservation{
		Payload: LinkPaid{IntentID: in.PaymentIntentID, Session: "{{step:" + SessionStep + ".id}}", Account: account},
		FollowUps: map[string]any{
			SessionStep: LinkRequest{
				IntentID: in.PaymentIntentID, Amount: pi.Amount, Currency: pi.Currency, Description: pi.Description,
				Account: account, ExpiresAt: time.Now().Add(LinkTTL).Unix(), AwaitStep: provider.Links,
			},
			SMSStep: message.LinkSMS(pi.CustomerID.String(), c.Phone, body, in.PaymentIntentID, sender),
		},
	}, nil
}

func (linkRemote) Confirmed(in LinkInput, rec provider.Record) (idem.Result, error) {
	intent := op.MustUUID(in.PaymentIntentID)
	amount, _ := strconv.ParseInt(rec.Data["amount"], 10, 64)
	return op.Confirm(http.StatusCreated, in.PaymentIntentID, wire.PaidPaymentLink{
		PaymentIntentID: intent, CheckoutSession: rec.Data["session"], ProviderRef: rec.ID,
		Amount: amount, Currency: rec.Data["currency"], Status: "paid",
	})
}

func (linkRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in LinkInput, res idem.Result, providerRef string) error {
	return settleCharge(ctx, tx, x, ChargeInput{PaymentIntentID: in.PaymentIntentID}, res, providerRef)
}
