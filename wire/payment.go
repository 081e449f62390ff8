package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

// PaymentIntent is an amount approved for a customer (openapi.yaml:
// PaymentIntent); captured_amount is null until it is captured. Whether a
// charge is in flight is not part of it.
type PaymentIntent struct {
	ID             uuid.UUID `json:"id"`
	CustomerID     uuid.UUID `json:"customer_id"`
	Amount         int64     `json:"amount"`
	Currency       string    `json:"currency"`
	Description    string    `json:"description"`
	PaymentMethod  string    `json:"payment_method"`
	Status         string    `json:"status"`
	CapturedAmount *int64    `json:"captured_amount"`
	CreatedAt      time.Time `json:"created_at"`
	// ProviderRef is the provider's reference of the hold an approval made
	// (Stripe's PaymentIntent id), in the approval's answer; empty without one.
	ProviderRef string `json:"provider_ref,omitempty"`
}

// FromPaymentIntent is the wire shape of a payment intent.
func FromPaymentIntent(pi oncecall.PaymentIntent) PaymentIntent {
	return PaymentIntent{
		ID: pi.ID, CustomerID: pi.CustomerID, Amount: pi.Amount, Currency: pi.Currency, Description: pi.Description,
		PaymentMethod: pi.PaymentMethod, Status: pi.Status, CapturedAmount: pi.CapturedAmount, CreatedAt: pi.CreatedAt,
	}
}

// Payment is one charge attempt of a payment intent (openapi.yaml: Payment).
type Payment struct {
	ID              uuid.UUID `json:"id"`
	PaymentIntentID uuid.UUID `json:"payment_intent_id"`
	Amount          int64     `json:"amount"`
	Currency        string    `json:"currency"`
	Status          string    `json:"status"`
	DeclineCode     string    `json:"decline_code,omitempty"`
	ProviderRef     string    `json:"provider_ref,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// FromPayment is the wire shape of a payment.
func FromPayment(p oncecall.Payment) Payment {
	return Payment{
		ID: p.ID, PaymentIntentID: p.PaymentIntentID, Amount: p.Amount, Currency: p.Currency, Status: p.Status,
		DeclineCode: p.DeclineCode, ProviderRef: p.ProviderRef, CreatedAt: p.CreatedAt,
	}
}

// FromPayments is FromPayment of each payment.
func FromPayments(p []oncecall.Payment) []Payment { return list(p, FromPayment) }

// PaidPaymentLink is the answer of payment.link once the customer has paid the
// link: the intent it paid, the Checkout Session and the payments
// provider's reference of the payment (Stripe's PaymentIntent id).
type PaidPaymentLink struct {
	PaymentIntentID uuid.UUID `json:"payment_intent_id"`
	CheckoutSession string    `json:"checkout_session"`
	ProviderRef     string    `json:"provider_ref"`
	Amount          int64     `json:"amount"`
	Currency        string    `json:"currency"`
	Status          string    `json:"status"`
}

// WithdrawnPaymentIntent is the answer of payment_intent.cancel: the
// intent, now withdrawn, and the provider's reference of the hold that was
// cancelled (empty for an intent without one).
type WithdrawnPaymentIntent struct {
	ID          uuid.UUID `json:"id"`
	Status      string    `json:"status"`
	ProviderRef string    `json:"provider_ref"`
}
