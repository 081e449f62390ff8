package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// SlotTime is the start and end of a slot to schedule.
type SlotTime struct {
	StartsAt time.Time
	EndsAt   time.Time
}

// ScheduleSlots creates the slots of a tenant's resource at times it does not
// have a slot at yet (same start and end) and returns how many it created.
// It locks the tenant's row until the transaction ends, so that concurrent
// schedules of the resource never create a time twice.
func (tx *Tx) ScheduleSlots(ctx context.Context, tenant uuid.UUID, resource string, times []SlotTime) (int, error) {
	if err := tx.q.LockSlotSchedule(ctx, tenant); err != nil {
		return 0, err
	}
	p := dbsqlc.InsertScheduledSlotsParams{
		TenantID: tenant, Resource: resource,
		Ids: make([]uuid.UUID, len(times)), Starts: make([]time.Time, len(times)), Ends: make([]time.Time, len(times)),
	}
	for i, t := range times {
		id, err := uuid.NewV7()
		if err != nil {
			return 0, err
		}
		p.Ids[i], p.Starts[i], p.Ends[i] = id, t.StartsAt, t.EndsAt
	}
	n, err := tx.q.InsertScheduledSlots(ctx, p)
	return int(n), err
}

// ListCustomerAppointments lists a customer's active appointments starting
// at or after from, soonest first, each with its slot's place; an id of
// another tenant lists nothing.
func (q queries) ListCustomerAppointments(ctx context.Context, tenant, customer uuid.UUID, from time.Time, limit int) ([]oncecall.PlacedAppointment, error) {
	rows, err := q.q.ListCustomerAppointments(ctx, dbsqlc.ListCustomerAppointmentsParams{
		TenantID: tenant, CustomerID: customer, FromTime: from, MaxRows: int32(limit),
	})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.PlacedAppointment, len(rows))
	for i, r := range rows {
		a := oncecall.Appointment{
			ID: r.ID, CustomerID: r.CustomerID, SlotID: r.SlotID, Service: r.Service, Status: r.Status,
			StartsAt: r.StartsAt, EndsAt: r.EndsAt,
		}
		out[i] = oncecall.PlacedAppointment{Appointment: a, Place: place(
			oncecall.Slot{ID: r.SlotID, StartsAt: r.StartsAt, EndsAt: r.EndsAt},
			r.PractitionerID, r.LocationID, r.PractitionerName, r.LocationName, r.LocationAddress, r.Timezone,
		)}
	}
	return out, nil
}
