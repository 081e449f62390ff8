package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// CallbackStatus is where a callback stands.
type CallbackStatus string

// Callback statuses.
const (
	// CallbackRequested: the business is to call back within the window.
	CallbackRequested CallbackStatus = "requested"
	// CallbackCancelled: the caller no longer wants the call.
	CallbackCancelled CallbackStatus = "cancelled"
)

// Callback is a caller's request to be called back by the business: who
// (a customer, a phone number, or both), when (a window the caller chose on
// the business's wall clock), and why. A voice call keeps one callback per
// subject and CallbackRef: a later request in the same call amends it.
type Callback struct {
	ID       uuid.UUID
	TenantID uuid.UUID
	// CustomerID is the customer to call back; uuid.Nil when the caller
	// gave only a phone number.
	CustomerID uuid.UUID
	// Phone is the number to call, E.164; empty when the customer's own
	// record says how to reach them.
	Phone string
	// WindowStart and WindowEnd bound when to call, as instants; Timezone
	// is the IANA zone whose wall clock the caller named them on.
	WindowStart time.Time
	WindowEnd   time.Time
	Timezone    string
	// Reason is what the caller wants to talk about.
	Reason string
	// CallPlatform and CallID are the voice call the callback was
	// requested in (see Action); empty outside one. CallbackRef tells apart
	// callbacks a call requests on purpose.
	CallPlatform string
	CallID       string
	CallbackRef  string
	Status       CallbackStatus
	CreatedAt    time.Time
	// AmendedAt is when a later request of the same call last changed the
	// callback; zero when none did.
	AmendedAt time.Time
	// CancelledAt is when it was cancelled; zero unless Status is
	// CallbackCancelled.
	CancelledAt time.Time
}

// NewCallback is a callback to request: a Callback without what the store
// assigns (id, status, times). ActionID is the action requesting it.
type NewCallback struct {
	TenantID     uuid.UUID
	ActionID     uuid.UUID
	CustomerID   uuid.UUID
	Phone        string
	WindowStart  time.Time
	WindowEnd    time.Time
	Timezone     string
	Reason       string
	CallPlatform string
	CallID       string
	CallbackRef  string
}
