package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// WaitlistStatus is where a waitlist entry stands.
type WaitlistStatus string

// Waitlist statuses.
const (
	// WaitlistActive: the business is to offer the customer an earlier time
	// when one frees up.
	WaitlistActive WaitlistStatus = "active"
	// WaitlistCancelled: the caller no longer wants to be offered one.
	WaitlistCancelled WaitlistStatus = "cancelled"
)

// WaitlistEntry is a caller's request to be offered an earlier time with a
// practitioner, for a service, or both: a customer of the business, what
// they want, and optionally the date they want a time before. A voice call
// keeps one entry per customer: a later request in the same call amends it.
type WaitlistEntry struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	CustomerID uuid.UUID
	// ServiceID and PractitionerID say what the earlier time is for; at
	// least one is set, uuid.Nil for the other.
	ServiceID      uuid.UUID
	PractitionerID uuid.UUID
	// Before is the local date (YYYY-MM-DD, on the business's clock) the
	// caller wants a time before; empty for any earlier time.
	Before string
	Note   string
	// CallPlatform and CallID are the voice call the entry was made in (see
	// Action); empty outside one.
	CallPlatform string
	CallID       string
	Status       WaitlistStatus
	CreatedAt    time.Time
	// AmendedAt is when a later request of the same call last changed the
	// entry; zero when none did.
	AmendedAt time.Time
	// CancelledAt is when it was cancelled; zero unless Status is
	// WaitlistCancelled.
	CancelledAt time.Time
}

// NewWaitlistEntry is an entry to add: a WaitlistEntry without what the
// store assigns (id, status, times). ActionID is the action adding it.
type NewWaitlistEntry struct {
	TenantID       uuid.UUID
	ActionID       uuid.UUID
	CustomerID     uuid.UUID
	ServiceID      uuid.UUID
	PractitionerID uuid.UUID
	Before         string
	Note           string
	CallPlatform   string
	CallID         string
}
