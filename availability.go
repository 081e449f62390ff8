package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// OpenSlot is a slot as find_available_slots offers it: with whose it is,
// where, and the timezone it is spoken in (its location's, or the tenant's
// for a slot of the single calendar).
type OpenSlot struct {
	Slot
	// Practitioner and Location are the names of the slot's
	// PractitionerID and LocationID; empty for the single calendar.
	Practitioner string
	Location     string
	// Address is the location's address as it is spoken; may be empty.
	Address string
	// Timezone is the IANA name the slot is spoken in.
	Timezone string
}

// Catalog reports whether the slot belongs to a practitioner at a location.
func (s OpenSlot) Catalog() bool { return s.PractitionerID != uuid.Nil }

// OpenSlotQuery selects the free slots to offer.
type OpenSlotQuery struct {
	// From and To bound the start (To exclusive; zero: no bound).
	From, To time.Time
	// FromDate and ToDate bound the start's local date, YYYY-MM-DD, in the
	// slot's own timezone (empty: no bound).
	FromDate, ToDate string
	// FromLocal bounds the start's local wall-clock time from below,
	// YYYY-MM-DDTHH:MM:SS (empty: no bound).
	FromLocal string
	// MinMinute and MaxMinute bound the start's local minute of the day
	// (MaxMinute exclusive; negative: no bound).
	MinMinute, MaxMinute int
	ServiceID            uuid.UUID
	PractitionerID       uuid.UUID
	LocationID           uuid.UUID
	// After is the slot after which to continue (uuid.Nil: from the first).
	After uuid.UUID
	// OnlyAvailable lists only slots without an active booking.
	OnlyAvailable bool
	// TenantZone is the zone of slots without a location.
	TenantZone string
	Limit      int
}
