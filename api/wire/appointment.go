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
}

// FromSlot is the wire shape of a slot.
func FromSlot(s oncecall.Slot) Slot {
	return Slot{ID: s.ID, StartsAt: s.StartsAt, EndsAt: s.EndsAt, Resource: s.Resource, Available: s.Available}
}

// FromSlots is FromSlot of each slot.
func FromSlots(s []oncecall.Slot) []Slot { return list(s, FromSlot) }

// Appointment is a booking of one slot by one customer (openapi.yaml:
// Appointment).
type Appointment struct {
	ID         uuid.UUID `json:"id"`
	CustomerID uuid.UUID `json:"customer_id"`
	SlotID     uuid.UUID `json:"slot_id"`
	Service    string    `json:"service"`
	Status     string    `json:"status"`
	StartsAt   time.Time `json:"starts_at"`
	EndsAt     time.Time `json:"ends_at"`
}

// FromAppointment is the wire shape of an appointment.
func FromAppointment(a oncecall.Appointment) Appointment {
	return Appointment{
		ID: a.ID, CustomerID: a.CustomerID, SlotID: a.SlotID, Service: a.Service, Status: a.Status,
		StartsAt: a.StartsAt, EndsAt: a.EndsAt,
	}
}

// FromAppointments is FromAppointment of each appointment.
func FromAppointments(a []oncecall.Appointment) []Appointment { return list(a, FromAppointment) }
