package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

// Slot is a bookable time (openapi.yaml: Slot).
type Slot struct {
	ID        uuid.UUID `json:"id"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	Resource  string    `json:"resource"`
	Available bool      `json:"available"`
	// PractitionerID and LocationID are absent for a slot of the single
	// calendar.
	PractitionerID string `json:"practitioner_id,omitempty"`
	LocationID     string `json:"location_id,omitempty"`
}

// FromSlot is the wire shape of a slot.
func FromSlot(s oncecall.Slot) Slot {
	out := Slot{ID: s.ID, StartsAt: s.StartsAt, EndsAt: s.EndsAt, Resource: s.Resource, Available: s.Available}
	if s.PractitionerID != uuid.Nil && s.LocationID != uuid.Nil {
		out.PractitionerID, out.LocationID = s.PractitionerID.String(), s.LocationID.String()
	}
	return out
}

// FromSlots is FromSlot of each slot.
func FromSlots(s []oncecall.Slot) []Slot { return list(s, FromSlot) }

// Appointment is a booking of one slot by one customer (openapi.yaml:
// Appointment).
type Appointment struct {
	ID         uuid.UUID `json:"id"`
	CustomerID uuid.UUID `json:"customer_id"`
	// SlotID is nil when the appointment is at no slot of oncecall's: a
	// person moved it in the business's calendar to another time.
	SlotID *uuid.UUID `json:"slot_id"`
	Service    string    `json:"service"`
	Status     string    `json:"status"`
	StartsAt   time.Time `json:"starts_at"`
	EndsAt     time.Time `json:"ends_at"`
}

// FromAppointment is the wire shape of an appointment.
func FromAppointment(a oncecall.Appointment) Appointment {
	return Appointment{
		ID: a.ID, CustomerID: a.CustomerID, SlotID: slotOf(a.SlotID), Service: a.Service, Status: a.Status,
		StartsAt: a.StartsAt, EndsAt: a.EndsAt,
	}
}

func slotOf(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// FromAppointments is FromAppointment of each appointment.
func FromAppointments(a []oncecall.Appointment) []Appointment { return list(a, FromAppointment) }
