package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// NewSlot is a slot to create.
type NewSlot struct {
	TenantID uuid.UUID
	StartsAt time.Time
	EndsAt   time.Time
	Resource string
}

// SlotFilter selects slots to list.
type SlotFilter struct {
	From          time.Time
	OnlyAvailable bool
	Limit         int
}

// Booking is an appointment to create.
type Booking struct {
	TenantID   uuid.UUID
	ActionID   uuid.UUID
	CustomerID uuid.UUID
	SlotID     uuid.UUID
	Service    string
}

// CreateSlot inserts a slot.
func (q queries) CreateSlot(ctx context.Context, s NewSlot) (oncecall.Slot, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Slot{}, err
	}
	row, err := q.q.CreateSlot(ctx, dbsqlc.CreateSlotParams{
		ID: id, TenantID: s.TenantID, StartsAt: s.StartsAt, EndsAt: s.EndsAt, Resource: s.Resource,
	})
	if err != nil {
		return oncecall.Slot{}, err
	}
	return oncecall.Slot{ID: row.ID, StartsAt: row.StartsAt.UTC(), EndsAt: row.EndsAt.UTC(), Resource: row.Resource, Available: true}, nil
}

// ListSlots lists the tenant's slots in start order.
func (q queries) ListSlots(ctx context.Context, tenant uuid.UUID, f SlotFilter) ([]oncecall.Slot, error) {
	rows, err := q.q.ListSlots(ctx, dbsqlc.ListSlotsParams{
		TenantID: tenant, FromTime: f.From, OnlyAvailable: f.OnlyAvailable, MaxRows: int32(f.Limit),
	})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Slot, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Slot{ID: r.ID, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(), Resource: r.Resource, Available: r.Available}
	}
	return out, nil
}

// Booked says what BookSlot did.
type Booked int

// What BookSlot did.
const (
	BookedOK          Booked = iota // the appointment was created
	BookedNoCustomer                // the customer does not exist in the tenant
	BookedSlotNotFree               // the slot is missing, past or taken
)

// BookSlot creates an appointment unless the customer is missing or the slot
// is missing, past or taken, in one statement.
func (q queries) BookSlot(ctx context.Context, b Booking) (oncecall.Appointment, Booked, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Appointment{}, 0, err
	}
	row, err := q.q.BookSlot(ctx, dbsqlc.BookSlotParams{
		ID: id, TenantID: b.TenantID, CustomerID: b.CustomerID, SlotID: b.SlotID,
		Service: b.Service, ActionID: b.ActionID,
	})
	switch {
	case err != nil:
		return oncecall.Appointment{}, 0, err
	case !row.CustomerFound:
		return oncecall.Appointment{}, BookedNoCustomer, nil
	case row.ID == nil:
		return oncecall.Appointment{}, BookedSlotNotFree, nil
	}
	return oncecall.Appointment{
		ID: *row.ID, CustomerID: *row.CustomerID, SlotID: *row.SlotID, Service: *row.Service, Status: *row.Status,
		StartsAt: row.StartsAt.UTC(), EndsAt: row.EndsAt.UTC(),
	}, BookedOK, nil
}

// AppointmentByID returns one of the tenant's appointments.
func (q queries) AppointmentByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, error) {
	row, err := q.q.AppointmentByID(ctx, dbsqlc.AppointmentByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Appointment{}, notFound(err)
	}
	return appointment(row), nil
}

// CancelAppointment cancels an active appointment; ok is false when it is
// not active.
func (q queries) CancelAppointment(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, bool, error) {
	row, err := q.q.CancelAppointment(ctx, dbsqlc.CancelAppointmentParams{TenantID: tenant, ID: id})
	return appointmentResult(dbsqlc.AppointmentByIDRow(row), err)
}

func appointmentResult(row dbsqlc.AppointmentByIDRow, err error) (oncecall.Appointment, bool, error) {
	if err = notFound(err); err == ErrNotFound {
		return oncecall.Appointment{}, false, nil
	}
	if err != nil {
		return oncecall.Appointment{}, false, err
	}
	return appointment(row), true, nil
}

func appointment(r dbsqlc.AppointmentByIDRow) oncecall.Appointment {
	return oncecall.Appointment{
		ID: r.ID, CustomerID: r.CustomerID, SlotID: r.SlotID, Service: r.Service, Status: r.Status,
		StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(),
	}
}
