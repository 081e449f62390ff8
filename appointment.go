package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Slot is a bookable time of a tenant. A slot holds one booking.
type Slot struct {
	ID       uuid.UUID
	StartsAt time.Time
	EndsAt   time.Time
	// Resource is who or what the slot is with; may be empty.
	Resource string
	// Available: not booked and not past.
	Available bool
	// PractitionerID and LocationID are whose slot it is and where;
	// uuid.Nil for a slot of the tenant's single calendar.
	PractitionerID uuid.UUID
	LocationID     uuid.UUID
}

// Appointment is a booking of one slot by one customer.
type Appointment struct {
	ID         uuid.UUID
	CustomerID uuid.UUID
	SlotID     uuid.UUID
	// Service is the service booked; may be empty.
	Service string
	// Status is active or cancelled.
	Status   string
	StartsAt time.Time
	EndsAt   time.Time
}

// PlacedAppointment is an appointment with its slot's place: whose slot it
// is, where, and the timezone its times are said in (Place.Slot is the
// slot, with the appointment's times).
type PlacedAppointment struct {
	Appointment
	Place OpenSlot
}
