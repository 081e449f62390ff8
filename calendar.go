package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// The calendar providers a tenant can connect.
const (
	CalendarGoogle    = "google"
	CalendarMicrosoft = "microsoft"
	CalendarCalcom    = "calcom"
)

// CalendarConnection is the calendar a tenant's appointments live in, when
// it is not oncecall's own tables: its provider, where this server reads
// the secret (never the secret itself) and what else the provider needs.
type CalendarConnection struct {
	TenantID uuid.UUID
	// ID names the connection in the steps planned for it; it stays the
	// same while the provider does.
	ID       uuid.UUID
	Provider string
	// Credentials is "file:<path>" or "env:<NAME>".
	Credentials string
	// BaseURL is the provider's API base when it is not the provider's own.
	BaseURL string
	// Settings are the provider's other, non-secret settings: "subject"
	// (Google), "directory_id", "client_id", "authority_url" (Microsoft).
	Settings  map[string]string
	UpdatedAt time.Time
}

// CalendarMapping names the calendar that holds a practitioner's
// appointments (at one location, or at every one when LocationID is
// uuid.Nil); a mapping without a practitioner is the tenant's single
// calendar.
type CalendarMapping struct {
	PractitionerID uuid.UUID
	LocationID     uuid.UUID
	CalendarID     string
	// Practitioner and Location are the names, for display.
	Practitioner, Location string
}

// Statuses of a CalendarAppointment.
const (
	CalendarBooking   = "booking"
	CalendarActive    = "active"
	CalendarCancelled = "cancelled"
)

// CalendarAppointment is an appointment oncecall booked in a remote
// calendar, as it last knew it: its id (the booking action's), who and
// what, and the provider's event.
type CalendarAppointment struct {
	ID             uuid.UUID
	CustomerID     uuid.UUID
	SlotID         uuid.UUID
	PractitionerID uuid.UUID
	LocationID     uuid.UUID
	ServiceID      uuid.UUID
	Service        string
	// Provider is google, microsoft, calcom or http.
	Provider   string
	CalendarID string
	// EventID is empty until the calendar answered the booking.
	EventID  string
	ETag     string
	StartsAt time.Time
	EndsAt   time.Time
	// Status is CalendarBooking, CalendarActive or CalendarCancelled.
	Status string
	// HeldBy is the action moving or cancelling it, uuid.Nil when none.
	HeldBy uuid.UUID
	// ReadAt is when a read of the calendar last showed it; zero when none
	// has since oncecall wrote it.
	ReadAt time.Time
	// WrittenAt is when oncecall last wrote it (booked, moved, held).
	WrittenAt time.Time
	// BookingRef is the booking_ref it was booked under in a voice call.
	BookingRef string
}

// CalendarFor is the calendar that holds the appointments of a practitioner
// at a location among maps: the mapping for both, else the practitioner's
// for every location; uuid.Nil practitioner is the single calendar.
func CalendarFor(maps []CalendarMapping, practitioner, location uuid.UUID) (string, bool) {
	var every string
	for _, m := range maps {
		if m.PractitionerID != practitioner {
			continue
		}
		if m.LocationID == location && location != uuid.Nil {
			return m.CalendarID, true
		}
		if m.LocationID == uuid.Nil {
			every = m.CalendarID
		}
	}
	return every, every != ""
}
