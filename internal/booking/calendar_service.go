package booking

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// A booking by service on a remote calendar picks its practitioner as a
// booking by service in oncecall's own calendar does (ClaimAndBookService):
// of the slots that start at the time asked whose practitioner performs the
// service at the slot's location and that are long enough for it (the
// weekly schedules made them), the first by practitioner name and id, then
// location name and id; but a slot is free when the practitioner's calendar
// shows it free by its latest read (idem.Exec.Offer, the short cache) and
// no booking of oncecall's holds it. The pick is then sent as a booking of
// that slot is: the calendar is read again right before the write, and a
// time taken there meanwhile is refused with nothing sent.

// maxCandidates bounds the slots that start at one time considered for a
// booking by service (one per practitioner and location).
const maxCandidates = 200

// reserveServiceBooking checks a booking by service before it is sent,
// picks the slot and records the booking in flight; it returns the slot
// picked.
func reserveServiceBooking(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput) (op.Reservation, uuid.UUID, error) {
	cust, err := tx.CustomerByID(ctx, x.TenantID, op.MustUUID(in.CustomerID))
	if errors.Is(err, db.ErrNotFound) {
		r, err := reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
		return r, uuid.Nil, err
	}
	if err != nil {
		return op.Reservation{}, uuid.Nil, err
	}
	if rejected, err := bookedInCall(ctx, tx, x, cust.ID, in.BookingRef); err != nil || rejected != nil {
		return deref(rejected), uuid.Nil, err
	}
	svc, err := tx.ServiceByID(ctx, x.TenantID, op.MustUUID(in.ServiceID))
	if errors.Is(err, db.ErrNotFound) {
		r, err := reject(ServiceNotFound, map[string]string{"service_id": in.ServiceID})
		return r, uuid.Nil, err
	}
	if err != nil {
		return op.Reservation{}, uuid.Nil, err
	}
	clock, _, err := tx.TenantClock(ctx, x.TenantID)
	if err != nil {
		return op.Reservation{}, uuid.Nil, err
	}
	now := time.Now()
	var candidates []oncecall.OpenSlot
	// A local time left unresolved names no location where the service is
	// booked: nobody is free then.
	if start, ok := in.startInstant(); ok && start.After(now) {
		q := serviceQuery(in, clock.Zone)
		q.From, q.To, q.Limit = start, start.Add(time.Microsecond), maxCandidates
		if candidates, err = tx.FindOpenSlots(ctx, x.TenantID, q); err != nil {
			return op.Reservation{}, uuid.Nil, err
		}
		slices.SortStableFunc(candidates, byPractitioner)
	}
	free, err := offered(ctx, x, candidates)
	if err != nil {
		return op.Reservation{}, uuid.Nil, err
	}
	for _, c := range free {
		s, rejected, err := slotFor(ctx, tx, x.TenantID, c.ID.String())
		if err != nil {
			return op.Reservation{}, uuid.Nil, err
		}
		if rejected != nil {
			continue
		}
		where, no, err := slotCalendar(ctx, tx, x, s)
		if err != nil {
			return op.Reservation{}, uuid.Nil, err
		}
		if no != nil {
			continue
		}
		taken, err := held(ctx, tx, x.TenantID, where, s, uuid.Nil)
		if err != nil {
			return op.Reservation{}, uuid.Nil, err
		}
		if taken {
			continue
		}
		res, err := recordCalendarBooking(ctx, tx, x, in, cust, s, where, svc)
		return res, c.ID, err
	}
	r, err := noPractitionerFree(ctx, tx, x, in, clock, now)
	return r, uuid.Nil, err
}

// serviceQuery selects the slots of the service (and the practitioner and
// location asked for) that no booking of oncecall's own calendar holds.
func serviceQuery(in BookInput, zone string) oncecall.OpenSlotQuery {
	return oncecall.OpenSlotQuery{
		MinMinute: -1, MaxMinute: -1, OnlyAvailable: true, TenantZone: zone,
		ServiceID: op.MustUUID(in.ServiceID), PractitionerID: op.OptionalUUID(in.PractitionerID),
		LocationID: op.OptionalUUID(in.LocationID),
	}
}

// byPractitioner orders slots as ClaimAndBookService picks them.
func byPractitioner(a, b oncecall.OpenSlot) int {
	return cmp.Or(
		strings.Compare(strings.ToLower(a.Practitioner), strings.ToLower(b.Practitioner)),
		strings.Compare(a.PractitionerID.String(), b.PractitionerID.String()),
		strings.Compare(strings.ToLower(a.Location), strings.ToLower(b.Location)),
		strings.Compare(a.LocationID.String(), b.LocationID.String()),
		strings.Compare(a.ID.String(), b.ID.String()),
	)
}

// offered keeps the slots the calendars show free by their latest read;
// without a reader, all of them (the claim still checks oncecall's holds).
func offered(ctx context.Context, x idem.Exec, slots []oncecall.OpenSlot) ([]oncecall.OpenSlot, error) {
	if x.Offer == nil || len(slots) == 0 {
		return slots, nil
	}
	return x.Offer.Offered(ctx, slots)
}

// noPractitionerFree is the answer when nobody is free at the time asked:
// the next free times of the same service (and practitioner and location)
// the calendars show free, as oncecall's own calendar answers it.
func noPractitionerFree(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput, clock schedule.Clock, now time.Time) (op.Reservation, error) {
	q := serviceQuery(in, clock.Zone)
	q.From, q.Limit = now, Alternatives*4
	if t, ok := in.startInstant(); ok {
		q.From = later(now, t)
	} else {
		q.FromLocal = in.StartsAt
	}
	slots, err := tx.FindOpenSlots(ctx, x.TenantID, q)
	if err != nil {
		return op.Reservation{}, err
	}
	if slots, err = offered(ctx, x, slots); err != nil {
		return op.Reservation{}, err
	}
	if len(slots) > Alternatives {
		slots = slots[:Alternatives]
	}
	res, err := op.Reject(NoPractitionerFree, NoPractitionerFreeDetails{
		ServiceID: in.ServiceID, StartsAt: in.StartsAt, Alternatives: dashatool.SlotViews(slots, clock, now),
	})
	return op.Reservation{Reject: &res}, err
}
