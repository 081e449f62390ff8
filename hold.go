package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Hold is an amount a payments provider reserves on the customer's card when
// a payment intent is approved (Stripe: a PaymentIntent with manual
// capture). A charge of the intent captures it; the provider releases it
// uncaptured after CaptureBefore.
type Hold struct {
	// IntentID is oncecall's payment intent, ActionID the action that
	// approved it.
	IntentID uuid.UUID
	TenantID uuid.UUID
	ActionID uuid.UUID
	// Ref is the provider's reference of the hold (pi_...), Account the
	// connected account it was made on ("" for the platform's own).
	Ref     string
	Account string
	// CaptureBefore is when the provider releases the hold uncaptured.
	CaptureBefore time.Time
}

// NewHeldIntent is an intent whose approval made a hold: it is recorded
// once the hold is confirmed.
type NewHeldIntent struct {
	TenantID, ActionID, CustomerID uuid.UUID
	Amount                         int64
	Currency, Description          string
	PaymentMethod                  string
	// HoldRef and HoldAccount are the provider's hold and the account it
	// was made on.
	HoldRef, HoldAccount string
	// CreatedAt is the approval's time as its answer states it.
	CreatedAt time.Time
}
