package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// FindOpenSlots lists the tenant's slots q selects, in start order, with
// their practitioner, location and the timezone each is spoken in.
func (q queries) FindOpenSlots(ctx context.Context, tenant uuid.UUID, f oncecall.OpenSlotQuery) ([]oncecall.OpenSlot, error) {
	p := dbsqlc.FindOpenSlotsParams{
		TenantZone: f.TenantZone, TenantID: tenant, FromTime: f.From, OnlyAvailable: f.OnlyAvailable,
		PractitionerID: ptr(f.PractitionerID), LocationID: ptr(f.LocationID), ServiceID: ptr(f.ServiceID),
		After: ptr(f.After), FromDate: ptr(f.FromDate), ToDate: ptr(f.ToDate),
		FromLocal: ptr(f.FromLocal), MaxRows: int32(f.Limit),
	}
	if !f.To.IsZero() {
		p.ToTime = &f.To
	}
	if f.MinMinute >= 0 {
		n := int32(f.MinMinute)
		p.MinMinute = &n
	}
	if f.MaxMinute >= 0 {
		n := int32(f.MaxMinute)
		p.MaxMinute = &n
	}
	rows, err := q.q.FindOpenSlots(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.OpenSlot, len(rows))
	for i, r := range rows {
		out[i] = oncecall.OpenSlot{
			Slot: oncecall.Slot{
				ID: r.ID, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(), Resource: r.Resource, Available: r.Available,
			},
			Practitioner: r.PractitionerName, Location: r.LocationName, Address: r.LocationAddress, Timezone: r.Timezone,
		}
		if r.PractitionerID != nil && r.LocationID != nil {
			out[i].PractitionerID, out[i].LocationID = *r.PractitionerID, *r.LocationID
		}
	}
	return out, nil
}

// LocationZone is the timezone of one of the tenant's locations;
// ErrNotFound when it has none with that id.
func (q queries) LocationZone(ctx context.Context, tenant, id uuid.UUID) (string, error) {
	tz, err := q.q.AvailabilityLocationZone(ctx, dbsqlc.AvailabilityLocationZoneParams{TenantID: tenant, ID: id})
	return tz, notFound(err)
}

// SlotPlace is one of the tenant's slots with whose it is and where, in
// its location's timezone or, for a slot of the single calendar, the
// tenant's. Its Available is not read. ErrNotFound when the tenant has no
// such slot.
func (q queries) SlotPlace(ctx context.Context, tenant, slot uuid.UUID) (oncecall.OpenSlot, error) {
	r, err := q.q.SlotPlace(ctx, dbsqlc.SlotPlaceParams{TenantID: tenant, SlotID: slot})
	if err != nil {
		return oncecall.OpenSlot{}, notFound(err)
	}
	return place(oncecall.Slot{ID: slot, StartsAt: r.StartsAt, EndsAt: r.EndsAt, Resource: r.Resource},
		r.PractitionerID, r.LocationID, r.PractitionerName, r.LocationName, r.LocationAddress, r.Timezone), nil
}

// place is a slot with its practitioner and location (both or neither).
func place(s oncecall.Slot, practitioner, location *uuid.UUID, who, where, address, zone string) oncecall.OpenSlot {
	out := oncecall.OpenSlot{Slot: s, Practitioner: who, Location: where, Address: address, Timezone: zone}
	if practitioner != nil && location != nil {
		out.PractitionerID, out.LocationID = *practitioner, *location
	}
	return out
}
