// Package payment declares the payment operations: approving an amount for
// a customer (a payment intent, recorded in oncecall's own tables, or held
// on a card through Stripe), and charging it through the payments provider.
// oncecall's tables are no card processor: without a payments provider a
// charge is refused (PAYMENTS_NOT_CONFIGURED) and nothing is said to be
// charged. An intent is charged at most once whatever idempotency keys the
// charges use: the intent is held for one charging action at a time and a
// partial unique index allows one succeeded payment per intent.
package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/wire"
)

// Rejection reasons.
const (
	CustomerNotFound    = "CUSTOMER_NOT_FOUND"
	IntentNotFound      = "PAYMENT_INTENT_NOT_FOUND"
	AlreadyCaptured     = "INTENT_ALREADY_CAPTURED"
	Declined            = "PAYMENT_DECLINED"
	AmountExceedsIntent = "AMOUNT_EXCEEDS_INTENT"
	ChargeInProgress    = "INTENT_CHARGE_IN_PROGRESS"
	// AuthenticationRequired: the saved card's bank wants the cardholder to
	// authenticate, which an off-session hold cannot ask for.
	AuthenticationRequired = "AUTHENTICATION_REQUIRED"
	// SavedCardsNeedStripe: a saved card is held only through Stripe.
	SavedCardsNeedStripe = "SAVED_CARDS_NEED_STRIPE"
	// Withdrawn: the approval was withdrawn (payment_intent.cancel); its
	// hold, if any, is released.
	Withdrawn = "INTENT_WITHDRAWN"
	// HoldExpired: the intent's hold passed its capture deadline uncaptured
	// and was released by the provider.
	HoldExpired = "INTENT_HOLD_EXPIRED"
	// NotConfigured: no payments provider is configured, so nothing can
	// charge a card; oncecall's own tables only record approvals.
	NotConfigured = "PAYMENTS_NOT_CONFIGURED"
)

// Test payment methods: the provider simulator charges pm_card_ok and
// declines pm_card_declined (docs/provider-protocol.md).
const (
	MethodOK       = "pm_card_ok"
	MethodDeclined = "pm_card_declined"
)

const maxDescription = 500

// A saved card and its owner at Stripe.
var (
	savedCard      = regexp.MustCompile(`^pm_[A-Za-z0-9_]{1,250}$`)
	stripeCustomer = regexp.MustCompile(`^cus_[A-Za-z0-9]{1,250}$`)
)

// Operations returns the payment operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// IntentInput is the input of payment_intent.create.
type IntentInput struct {
	CustomerID    string     `json:"customer_id" required:"true" format:"uuid" desc:"The customer who approved the payment."`
	Amount        op.Integer `json:"amount" required:"true" minimum:"1" maximum:"9007199254740991" desc:"The approved amount in minor units of the currency, e.g. 1050 for 10.50 EUR."`
	Currency      string     `json:"currency" required:"true" maxLength:"3" desc:"ISO 4217 currency code, e.g. EUR."`
	Description   string     `json:"description" maxLength:"500" desc:"Optional: what the payment is for."`
	PaymentMethod string     `json:"payment_method" maxLength:"255" desc:"Optional: pm_card_ok (default) or pm_card_declined, the test methods (pm_card_declined makes every charge decline), payment_link (the customer pays by a payment link sent by SMS; nothing is held), or with stripe_customer a card the customer saved at Stripe (pm_...)."`
	// StripeCustomer is omitted when empty, so requests without it keep
	// the fingerprint they had before it existed.
	StripeCustomer string `json:"stripe_customer,omitempty" maxLength:"255" desc:"Optional: the Stripe customer (cus_...) whose saved card payment_method is. The hold is then made off-session: the caller is not there to authenticate. Only with payments through Stripe."`
}

// CreateIntent approves an amount for a customer. It is not offered to voice
// agents: an intent is approved by the business, then charged by the agent.
var CreateIntent = family.Add(op.Define(op.Spec[IntentInput]{
	Name:    "payment_intent.create",
	Label:   "Payment approval",
	Version: 1,
	Logic:   createIntentOp{},
	Remote:  holdRemote{},
	Say: op.Phrases{
		Confirmed: "The payment is approved but not charged yet.",
		Rejected: map[string]string{
			CustomerNotFound:       "The customer record was not found; no payment was approved.",
			Declined:               "The card was declined; nothing was held or charged.",
			AuthenticationRequired: "The saved card needs the cardholder to confirm the payment with their bank, which cannot be done on this call; nothing was held or charged.",
			SavedCardsNeedStripe:   "Saved cards can only be used with payments through Stripe; no payment was approved.",
			"":                     "The payment was not approved.",
		},
		Pending: "The payment approval is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed.",
	},
}))

// createIntentOp is the logic of CreateIntent.
type createIntentOp struct{}

func (createIntentOp) Normalize(in *IntentInput) error {
	if err := op.First(op.ID("customer_id", &in.CustomerID), op.Amount("amount", &in.Amount, true),
		op.Currency("currency", &in.Currency), op.Text("description", &in.Description, maxDescription, false)); err != nil {
		return err
	}
	in.StripeCustomer = strings.TrimSpace(in.StripeCustomer)
	switch in.PaymentMethod = strings.TrimSpace(in.PaymentMethod); in.PaymentMethod {
	case "":
		in.PaymentMethod = MethodOK
	case MethodOK, MethodDeclined, MethodLink:
	default:
		if in.StripeCustomer == "" || !savedCard.MatchString(in.PaymentMethod) {
			return fault.Field("payment_method", "must be %s, %s, %s, or a saved card (pm_...) with stripe_customer", MethodOK, MethodDeclined, MethodLink)
		}
	}
	switch {
	case in.StripeCustomer == "":
	case !stripeCustomer.MatchString(in.StripeCustomer):
		return fault.Field("stripe_customer", "must be a Stripe customer id (cus_...)")
	case in.PaymentMethod == MethodOK || in.PaymentMethod == MethodDeclined || in.PaymentMethod == MethodLink:
		return fault.Field("stripe_customer", "is only for a saved card (payment_method pm_...)")
	}
	return nil
}

func (createIntentOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in IntentInput) (idem.Result, error) {
	customer := op.MustUUID(in.CustomerID)
	ok, err := tx.CustomerExists(ctx, x.TenantID, customer)
	if err != nil {
		return idem.Result{}, err
	}
	if !ok {
		return op.Reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
	}
	if in.StripeCustomer != "" {
		// oncecall's own tables cannot charge a card saved at Stripe.
		return op.Reject(SavedCardsNeedStripe, map[string]string{"payment_method": in.PaymentMethod})
	}
	pi, err := tx.CreatePaymentIntent(ctx, db.NewPaymentIntent{
		TenantID: x.TenantID, ActionID: x.ActionID, CustomerID: customer, Amount: in.Amount.Int64(),
		Currency: in.Currency, Description: in.Description, PaymentMethod: in.PaymentMethod,
	})
	if err != nil {
		return idem.Result{}, err
	}
	return op.Confirm(http.StatusCreated, pi.ID.String(), wire.FromPaymentIntent(pi))
}

// ChargeInput is the input of payment.charge.
type ChargeInput struct {
	PaymentIntentID string     `json:"payment_intent_id" required:"true" format:"uuid" desc:"The id of the payment intent the caller approved."`
	Amount          op.Integer `json:"amount,omitzero" minimum:"1" maximum:"9007199254740991" desc:"Optional: the amount to charge in minor units, at most the intent's amount. Default: the intent's amount."`
}

// Charge charges an approved payment intent through the payments provider,
// at most once.
var Charge = family.Add(op.Define(op.Spec[ChargeInput]{
	Name:    "payment.charge",
	Label:   "Charge",
	Version: 1,
	Tool:    "charge_payment",
	Description: "Charge a payment the caller has approved (a payment intent), once. " +
		"If the answer is pending, the charge is not confirmed: never say it went through.",
	Logic:  chargeOp{},
	Remote: newChargeRemote(),
	Say: op.Phrases{
		Confirmed: "The payment went through. You may tell the caller they have been charged the amount in details (amount_spoken says it).",
		Rejected: map[string]string{
			Declined:            "The card was declined; nothing was charged. Ask the caller for another way to pay.",
			AlreadyCaptured:     "This payment was already charged earlier; do not charge again. You may tell the caller it is already paid.",
			AmountExceedsIntent: "The amount is more than the caller approved; nothing was charged. Confirm the amount with the caller.",
			ChargeInProgress:    "An earlier charge of this payment is still being processed; this request charged nothing. Do not charge again and do not say it went through: tell the caller it is still being processed.",
			IntentNotFound:      "The approved payment was not found; nothing was charged.",
			PaidByLinkOnly:      "This payment is paid by a payment link, not by card; send one with send_payment_link. Nothing was charged.",
			Withdrawn:           "This payment approval was withdrawn; nothing was charged. Do not charge it.",
			HoldExpired:         "The card hold of this payment expired before it was charged; nothing was charged.",
			NotConfigured: "No payment can be taken on this call: no payment processor is connected, so nothing was charged. " +
				"Tell the caller that, and that their payment stays approved to be paid another way; do not ask for card " +
				"details. You may offer a callback from the business about it (request_callback).",
			"": "The payment did not go through; nothing was charged.",
		},
		Pending: "The payment is NOT confirmed yet and its result is unknown. Tell the caller only that it is still being processed; " +
			"say nothing about whether they will be billed, and do not ask for another way to pay.",
	},
}))

// chargeOp is the logic of Charge.
type chargeOp struct{}

func (chargeOp) Normalize(in *ChargeInput) error {
	return op.First(op.ID("payment_intent_id", &in.PaymentIntentID), op.Amount("amount", &in.Amount, false))
}

func (chargeOp) Identity(in ChargeInput) []string { return []string{in.PaymentIntentID} }

// An amount equal to the intent's restates the default: the same charge.
func (chargeOp) Restates(ctx context.Context, s *db.Store, tenant uuid.UUID, stored, in ChargeInput) (bool, error) {
	if stored.PaymentIntentID != in.PaymentIntentID {
		return false, nil
	}
	pi, err := s.PaymentIntentByID(ctx, tenant, op.MustUUID(in.PaymentIntentID))
	if errors.Is(err, db.ErrNotFound) {
		return false, nil
	}
	return err == nil && stored.amountOf(pi) == in.amountOf(pi), err
}

// Without a payments provider nothing can charge the card: the intent
// is checked as for a remote charge (a withdrawn or unknown intent is
// said so), then the charge is refused and nothing is written.
func (chargeOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in ChargeInput) (idem.Result, error) {
	if _, _, rejected, err := chargeable(ctx, tx, x, in, false); err != nil || rejected != nil {
		return derefResult(rejected), err
	}
	return op.Reject(NotConfigured, map[string]string{"payment_intent_id": in.PaymentIntentID})
}

// amountOf is the amount a charge asks of intent pi: its own, or the
// intent's whole amount.
func (in ChargeInput) amountOf(pi oncecall.PaymentIntent) int64 {
	if in.Amount != "" {
		return in.Amount.Int64()
	}
	return pi.Amount
}

// chargeable locks the tenant's intent (charges of one intent take turns)
// and checks that it may be charged the requested amount: approved, not
// captured, no remote charge of it in flight, the amount within the
// approval. An intent approved to be paid by a link is charged only by one
// (byLink). It returns the intent and the amount, or the rejection.
func chargeable(ctx context.Context, tx *db.Tx, x idem.Exec, in ChargeInput, byLink bool) (oncecall.PaymentIntent, int64, *idem.Result, error) {
	intentID := op.MustUUID(in.PaymentIntentID)
	reject := func(reason string, details any) (oncecall.PaymentIntent, int64, *idem.Result, error) {
		res, err := op.Reject(reason, details)
		return oncecall.PaymentIntent{}, 0, &res, err
	}
	pi, err := tx.LockPaymentIntent(ctx, x.TenantID, intentID)
	if errors.Is(err, db.ErrNotFound) {
		return reject(IntentNotFound, map[string]string{"payment_intent_id": in.PaymentIntentID})
	}
	if err != nil {
		return oncecall.PaymentIntent{}, 0, nil, err
	}
	switch {
	case pi.Status == oncecall.IntentCaptured:
		p, err := tx.SucceededPayment(ctx, x.TenantID, intentID)
		if err != nil {
			return oncecall.PaymentIntent{}, 0, nil, err
		}
		return reject(AlreadyCaptured, map[string]string{"payment_intent_id": in.PaymentIntentID, "payment_id": p.ID.String()})
	case pi.Status == oncecall.IntentWithdrawn:
		return reject(Withdrawn, map[string]string{"payment_intent_id": in.PaymentIntentID})
	case pi.Status == oncecall.IntentExpired:
		return reject(HoldExpired, map[string]string{"payment_intent_id": in.PaymentIntentID})
	case pi.PaymentMethod == MethodLink && !byLink:
		return reject(PaidByLinkOnly, map[string]string{"payment_intent_id": in.PaymentIntentID})
	case pi.ChargingAction != uuid.Nil && pi.ChargingAction != x.ActionID:
		return reject(ChargeInProgress, map[string]string{"payment_intent_id": in.PaymentIntentID, "charging_action_id": pi.ChargingAction.String()})
	}
	amount := in.amountOf(pi)
	if amount > pi.Amount {
		return reject(AmountExceedsIntent, map[string]any{
			"payment_intent_id": in.PaymentIntentID, "intent_amount": pi.Amount, "currency": pi.Currency,
		})
	}
	return pi, amount, nil, nil
}

// remoteCharge is what the payments provider is asked to charge.
type remoteCharge struct {
	PaymentIntentID string `json:"payment_intent_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	// PaymentMethod is the intent's payment method (a Stripe adapter
	// charges it; see docs/providers/stripe.md).
	PaymentMethod string `json:"payment_method,omitempty"`
	// Hold is the provider's hold made when the intent was approved (a
	// Stripe PaymentIntent): the charge captures it. Empty: the charge
	// holds and captures at once.
	Hold string `json:"hold,omitempty"`
	// Account is the connected account the charge is made on: the hold's,
	// or the tenant's for a charge without one.
	Account string `json:"account,omitempty"`
}

// chargeRemote charges through a remote payments provider. The intent is
// checked exactly as for a local charge and held for the action in the
// claim's transaction, before anything is sent: while the provider's
// outcome is unknown no other charge of the intent can start, so each
// charge has its own provider key and the provider's key retention only
// ever protects one action's re-sends. The outcome is recorded on the
// intent when the action completes.
type chargeRemote struct{ op.Send[ChargeInput] }

func newChargeRemote() chargeRemote {
	return chargeRemote{op.SendInput[ChargeInput](provider.Payments, http.StatusCreated)}
}

// Reserve checks the intent exactly as a local charge does and holds it for
// the action.
func (chargeRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in ChargeInput) (op.Reservation, error) {
	pi, amount, rejected, err := chargeable(ctx, tx, x, in, false)
	if err != nil || rejected != nil {
		return op.Reservation{Reject: rejected}, err
	}
	held, err := tx.HoldPaymentIntent(ctx, x.TenantID, pi.ID, x.ActionID)
	if err != nil {
		return op.Reservation{}, err
	}
	if !held {
		return op.Reservation{}, fmt.Errorf("hold payment intent %s: held by another action under its lock", pi.ID)
	}
	charge := remoteCharge{PaymentIntentID: in.PaymentIntentID, Amount: amount, Currency: pi.Currency, PaymentMethod: pi.PaymentMethod}
	hold, err := tx.PaymentIntentHold(ctx, x.TenantID, pi.ID)
	if err != nil {
		return op.Reservation{}, err
	}
	charge.Hold, charge.Account = hold.Ref, hold.Account
	if hold.Ref == "" {
		if charge.Account, err = tx.TenantStripeAccount(ctx, x.TenantID); err != nil {
			return op.Reservation{}, err
		}
	}
	return op.Reservation{Payload: charge}, nil
}

// Settle records the charge's outcome on the intent (settleCharge).
func (chargeRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in ChargeInput, res idem.Result, providerRef string) error {
	return settleCharge(ctx, tx, x, in, res, providerRef)
}

// settleCharge records the outcome of a remote charge of an intent (or of
// a payment link, which charges it): the succeeded payment with the
// provider's reference, or the intent released for another charge.
func settleCharge(ctx context.Context, tx *db.Tx, x idem.Exec, in ChargeInput, res idem.Result, providerRef string) error {
	intentID := op.MustUUID(in.PaymentIntentID)
	pi, err := tx.LockPaymentIntent(ctx, x.TenantID, intentID)
	if err != nil {
		return err
	}
	if pi.ChargingAction != x.ActionID {
		return nil // recorded already
	}
	amount := in.amountOf(pi)
	p := db.NewPayment{
		TenantID: x.TenantID, ActionID: x.ActionID, IntentID: intentID, Amount: amount, Currency: pi.Currency,
		Status: oncecall.PaymentSucceeded, ProviderRef: providerRef,
	}
	if res.Outcome != idem.Confirmed {
		// Refused by the provider or an operator: nothing was charged,
		// and the intent may be charged again.
		return tx.ReleasePaymentIntent(ctx, x.TenantID, intentID, x.ActionID)
	}
	if _, err := tx.CapturePaymentIntent(ctx, x.TenantID, intentID, amount); err != nil {
		return fmt.Errorf("capture intent %s: %w", intentID, err)
	}
	_, err = tx.CreatePayment(ctx, p)
	return err
}
