package booking

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/catalog"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
)

// Slots of a practitioner at a location. A practitioner's slots never
// overlap, wherever they are: every creation of them holds the
// practitioner's lock (db.Tx.LockPractitionerSlots) while it checks and
// inserts, so one booking per slot is one booking per practitioner at a
// time.

// Rejection reasons.
const (
	PractitionerNotFound      = "PRACTITIONER_NOT_FOUND"
	PractitionerNotAtLocation = "PRACTITIONER_NOT_AT_LOCATION"
	SlotOverlaps              = "SLOT_OVERLAPS"
)

// owner checks the pair practitioner_id and location_id of a slot input:
// both or neither, ids; a resource with them is refused (it is the
// practitioner's name).
func owner(practitioner, location, resource *string) error {
	switch {
	case *practitioner == "" && *location == "":
		return nil
	case *location == "":
		return fault.Field("location_id", "is required with practitioner_id: the location the practitioner's slots are at")
	case *practitioner == "":
		return fault.Field("practitioner_id", "is required with location_id: whose slots they are")
	case *resource != "":
		return fault.Field("resource", "must be left out with practitioner_id: a practitioner's slots are with them, under their name")
	}
	return op.First(op.ID("practitioner_id", practitioner), op.ID("location_id", location))
}

// practitionerAt reads the practitioner and the location of a slot input
// and checks that they work there; a rejection when not.
func practitionerAt(ctx context.Context, tx *db.Tx, tenant uuid.UUID, practitionerID, locationID string) (db.PractitionerSlots, oncecall.Location, *idem.Result, error) {
	pid, lid := op.MustUUID(practitionerID), op.MustUUID(locationID)
	p, err := tx.PractitionerByID(ctx, tenant, pid)
	if errors.Is(err, db.ErrNotFound) {
		res, err := op.Reject(PractitionerNotFound, map[string]string{"practitioner_id": practitionerID})
		return db.PractitionerSlots{}, oncecall.Location{}, &res, err
	}
	if err != nil {
		return db.PractitionerSlots{}, oncecall.Location{}, nil, err
	}
	loc, err := tx.LocationByID(ctx, tenant, lid)
	if errors.Is(err, db.ErrNotFound) {
		res, err := op.Reject(catalog.LocationNotFound, map[string]string{"location_id": locationID})
		return db.PractitionerSlots{}, oncecall.Location{}, &res, err
	}
	if err != nil {
		return db.PractitionerSlots{}, oncecall.Location{}, nil, err
	}
	works, err := tx.PractitionerWorksAt(ctx, tenant, pid, lid)
	if err != nil {
		return db.PractitionerSlots{}, oncecall.Location{}, nil, err
	}
	if !works {
		res, err := op.Reject(PractitionerNotAtLocation, map[string]string{"practitioner_id": practitionerID, "location_id": locationID})
		return db.PractitionerSlots{}, oncecall.Location{}, &res, err
	}
	return db.PractitionerSlots{TenantID: tenant, PractitionerID: pid, LocationID: lid, Resource: p.Name}, loc, nil, nil
}

// placed is what became of the times of a practitioner's schedule.
type placed struct {
	created               []oncecall.Slot
	existing, overlapping int
	// overlapped are the practitioner's slots the refused times overlap.
	overlapped []db.PractitionerSlot
}

// placePractitionerSlots creates the times (which do not overlap each
// other) as the practitioner's slots at the location, under the
// practitioner's lock: a time the practitioner has a slot at already (same
// start and end, same location) is existing, one that overlaps any other
// of their slots, at any location, is overlapping.
func placePractitionerSlots(ctx context.Context, tx *db.Tx, p db.PractitionerSlots, times []db.SlotTime) (placed, error) {
	var out placed
	if len(times) == 0 {
		return out, nil
	}
	if err := tx.LockPractitionerSlots(ctx, p.TenantID, p.PractitionerID); err != nil {
		return out, err
	}
	first, last := times[0].StartsAt, times[0].EndsAt
	for _, t := range times {
		first, last = minTime(first, t.StartsAt), maxTime(last, t.EndsAt)
	}
	have, err := tx.PractitionerSlotsOverlapping(ctx, p.TenantID, p.PractitionerID, first, last)
	if err != nil {
		return out, err
	}
	var free []db.SlotTime
	for _, t := range times {
		same, overlaps := false, false
		for _, h := range have {
			if h.StartsAt.Before(t.EndsAt) && h.EndsAt.After(t.StartsAt) {
				if h.StartsAt.Equal(t.StartsAt) && h.EndsAt.Equal(t.EndsAt) && h.LocationID == p.LocationID {
					same = true
				} else {
					overlaps = true
					out.overlapped = append(out.overlapped, h)
				}
			}
		}
		switch {
		case same && !overlaps:
			out.existing++
		case same || overlaps:
			out.overlapping++
		default:
			free = append(free, t)
		}
	}
	if out.created, err = tx.InsertPractitionerSlots(ctx, p, free); err != nil {
		return out, err
	}
	// Under the lock every free time is inserted; the statement checks again.
	out.overlapping += len(free) - len(out.created)
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
