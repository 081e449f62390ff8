package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Payment intent statuses.
const (
	IntentRequiresCapture = "requires_capture"
	IntentCaptured        = "captured"
	// IntentWithdrawn: the approval was withdrawn before any charge; its
	// hold, if any, is released.
	IntentWithdrawn = "withdrawn"
	// IntentExpired: the hold passed its capture deadline uncaptured.
	IntentExpired = "expired"
)

// Payment statuses.
const (
	PaymentSucceeded = "succeeded"
	PaymentDeclined  = "declined"
)

// PaymentIntent is an amount approved for a customer, charged at most once.
type PaymentIntent struct {
	ID         uuid.UUID
	CustomerID uuid.UUID
	// Amount is in minor units of Currency (ISO 4217, upper-case).
	Amount        int64
	Currency      string
	Description   string
	PaymentMethod string
	Status        string
	// CapturedAmount is the charged amount once captured, else nil.
	CapturedAmount *int64
	CreatedAt      time.Time
	// ChargingAction is the action whose remote charge of the intent is in
	// flight; uuid.Nil when none is.
	ChargingAction uuid.UUID
}

// Payment is one charge attempt of an intent that the provider answered.
type Payment struct {
	ID              uuid.UUID
	PaymentIntentID uuid.UUID
	Amount          int64
	Currency        string
	Status          string
	// DeclineCode is why the provider declined; empty unless declined.
	DeclineCode string
	// ProviderRef is the remote payments provider's reference of the charge.
	ProviderRef string
	CreatedAt   time.Time
}
