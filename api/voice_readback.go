package api

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
)

// The read-backs of the confirmation gate (voice_confirm.go): what a gated
// request would do, read from the same records the operation reads, in
// the zone where it takes place and the tenant's locale.

// gatedInput is what a read-back reads of a gated request's input.
type gatedInput struct {
	SlotID          string          `json:"slot_id"`
	ServiceID       string          `json:"service_id"`
	StartsAt        string          `json:"starts_at"`
	LocationID      string          `json:"location_id"`
	PractitionerID  string          `json:"practitioner_id"`
	AppointmentID   string          `json:"appointment_id"`
	PaymentIntentID string          `json:"payment_intent_id"`
	Amount          json.RawMessage `json:"amount"`
}

// readBack reads what a gated request would do: the slot it books or
// moves to (with the appointment's time now, for a move), the appointment
// it cancels, the amount it charges. found is false when what it names
// does not exist: the operation refuses it.
func (s *Server) readBack(ctx context.Context, tenant oncecall.Tenant, prep *op.Prepared) (readBack, bool, error) {
	var in gatedInput
	if err := json.Unmarshal(prep.Input, &in); err != nil {
		return readBack{}, false, err
	}
	if prep.Operation == chargeOperation {
		return s.amountReadBack(ctx, tenant, in.PaymentIntentID, in.Amount)
	}
	clock, err := s.tenantClock(ctx, tenant.ID)
	if err != nil {
		return readBack{}, false, err
	}
	var rb readBack
	switch {
	case prep.Operation == cancelOperation:
		now, found, err := s.appointmentPlace(ctx, tenant, in.AppointmentID)
		if err != nil || !found {
			return readBack{}, found, err
		}
		rb = timeReadBack(clock, now, false)
		rb.Sentence = "Cancel your appointment on " + rb.what() + " — shall I cancel it?"
	case prep.Operation == rescheduleOperation:
		now, found, err := s.appointmentPlace(ctx, tenant, in.AppointmentID)
		if err != nil || !found {
			return readBack{}, found, err
		}
		to, found, err := s.slotPlace(ctx, tenant, in.SlotID)
		if err != nil || !found {
			return readBack{}, found, err
		}
		from := timeReadBack(clock, now, false)
		rb = timeReadBack(clock, to, false)
		rb.Sentence = "Move your appointment from " + from.Said + " to " + rb.what() + " — shall I move it?"
		rb.bound = append(rb.bound, from.bound...)
	case in.SlotID != "":
		place, found, err := s.slotPlace(ctx, tenant, in.SlotID)
		if err != nil || !found {
			return readBack{}, found, err
		}
		rb = timeReadBack(clock, place, false)
		rb.Sentence = rb.what() + " — shall I book it?"
	default:
		return s.serviceReadBack(ctx, tenant, clock, in)
	}
	return rb, true, nil
}

// slotPlace reads a slot with whose it is and where; found is false when
// the tenant has no such slot.
func (s *Server) slotPlace(ctx context.Context, tenant oncecall.Tenant, slotID string) (oncecall.OpenSlot, bool, error) {
	id, err := uuid.Parse(slotID)
	if err != nil {
		return oncecall.OpenSlot{}, false, nil //nolint:nilerr // the operation refuses it
	}
	place, err := s.cfg.Store.SlotPlace(ctx, tenant.ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return oncecall.OpenSlot{}, false, nil
	}
	return place, err == nil, db.Fault(err)
}

// appointmentPlace reads the slot an appointment is in now.
func (s *Server) appointmentPlace(ctx context.Context, tenant oncecall.Tenant, appointmentID string) (oncecall.OpenSlot, bool, error) {
	id, err := uuid.Parse(appointmentID)
	if err != nil {
		return oncecall.OpenSlot{}, false, nil //nolint:nilerr // the operation refuses it
	}
	appt, err := s.cfg.Store.AppointmentByID(ctx, tenant.ID, id)
	if errors.Is(err, db.ErrNotFound) {
		return oncecall.OpenSlot{}, false, nil
	}
	if err != nil {
		return oncecall.OpenSlot{}, false, db.Fault(err)
	}
	return s.slotPlace(ctx, tenant, appt.SlotID.String())
}

// serviceReadBack reads back a booking by service: the service, the time
// in the zone of the location where it takes place (the one named, else
// the one zone of every location where it is performed; with locations in
// several zones, the time is said with its zone's abbreviation), and the
// practitioner and location when the request names them: the booking
// takes the first practitioner free then, which the read-back says.
func (s *Server) serviceReadBack(ctx context.Context, tenant oncecall.Tenant, clock schedule.Clock, in gatedInput) (readBack, bool, error) {
	start, err := time.Parse(time.RFC3339Nano, in.StartsAt)
	service, serr := uuid.Parse(in.ServiceID)
	if err != nil || serr != nil {
		// A local time no location's zone reads: nobody performs the
		// service, and the operation refuses it.
		return readBack{}, false, nil //nolint:nilerr // the operation refuses it
	}
	svc, err := s.cfg.Store.ServiceByID(ctx, tenant.ID, service)
	if errors.Is(err, db.ErrNotFound) {
		return readBack{}, false, nil
	}
	if err != nil {
		return readBack{}, false, db.Fault(err)
	}
	place := oncecall.OpenSlot{Slot: oncecall.Slot{StartsAt: start}}
	if id := op.OptionalUUID(in.PractitionerID); id != uuid.Nil {
		p, err := s.cfg.Store.PractitionerByID(ctx, tenant.ID, id)
		if err != nil {
			return readBack{}, false, notFoundIsNone(err)
		}
		place.PractitionerID, place.Practitioner = p.ID, p.Name
	}
	if id := op.OptionalUUID(in.LocationID); id != uuid.Nil {
		l, err := s.cfg.Store.LocationByID(ctx, tenant.ID, id)
		if err != nil {
			return readBack{}, false, notFoundIsNone(err)
		}
		place.LocationID, place.Location, place.Timezone = l.ID, l.Name, l.Timezone
	}
	zoned := false
	if place.Timezone == "" {
		zones, err := s.cfg.Store.BookingZones(ctx, tenant.ID, service, place.PractitionerID, uuid.Nil)
		if err != nil || len(zones) == 0 {
			return readBack{}, false, db.Fault(err) // nobody performs it: the operation refuses it
		}
		place.Timezone, zoned = zones[0], len(zones) > 1
	}
	rb := timeReadBack(clock, place, zoned)
	if place.Practitioner == "" {
		place.Practitioner = "the first practitioner free then"
	}
	rb.Sentence = svc.Name + " on " + rb.Said + placeWords(place) + " — shall I book it?"
	rb.bound = append(rb.bound, service.String())
	rb.details["service"] = svc.Name
	return rb, true, nil
}

// notFoundIsNone is nil for a record that does not exist (the operation
// refuses the request), else the store's fault.
func notFoundIsNone(err error) error {
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return db.Fault(err)
}

// timeReadBack reads back place's time on the clock of its zone, said so
// that it names one instant (zoned: with the zone's abbreviation), with its
// practitioner and location when it has them. Its Sentence is the
// caller's to write.
func timeReadBack(clock schedule.Clock, place oncecall.OpenSlot, zoned bool) readBack {
	clock = clock.In(place.Timezone)
	start := place.StartsAt
	when := clock.SpokenExactly(start, time.Now(), zoned)
	local := start.In(clock.Loc)
	details := map[string]any{"when": when, "starts_at": start.UTC(), "timezone": clock.Zone,
		"starts_at_local": local.Format(time.RFC3339)}
	if place.Practitioner != "" {
		details["practitioner"], details["practitioner_id"] = place.Practitioner, place.PractitionerID
	}
	if place.Location != "" {
		details["location"], details["location_id"] = place.Location, place.LocationID
	}
	if place.ID != uuid.Nil {
		details["slot_id"] = place.ID
	}
	return readBack{
		Said: when, value: local.Format("2006-01-02T15:04Z07:00"), details: details, place: place,
		bound: []string{start.UTC().Format(time.RFC3339Nano), clock.Zone, place.ID.String(),
			place.PractitionerID.String(), place.LocationID.String()},
	}
}

// what is the time read back with who and where.
func (rb readBack) what() string { return rb.Said + placeWords(rb.place) }

// placeWords says who and where: " with Dr. Baker at Downtown".
func placeWords(place oncecall.OpenSlot) string {
	words := ""
	if place.Practitioner != "" {
		words += " with " + place.Practitioner
	}
	if place.Location != "" {
		words += " at " + place.Location
	}
	return words
}

// amountReadBack reads back the amount a charge takes, in the intent's
// currency: the amount asked for, else the intent's.
func (s *Server) amountReadBack(ctx context.Context, tenant oncecall.Tenant, intent string, amount json.RawMessage) (readBack, bool, error) {
	id, err := uuid.Parse(intent)
	if err != nil {
		return readBack{}, false, nil //nolint:nilerr // the operation refuses it
	}
	pi, err := s.cfg.Store.PaymentIntentByID(ctx, tenant.ID, id)
	if err != nil {
		return readBack{}, false, notFoundIsNone(err)
	}
	minor := pi.Amount
	var n json.Number
	if len(amount) > 0 && json.Unmarshal(amount, &n) == nil {
		if v, err := n.Int64(); err == nil && v > 0 {
			minor = v
		}
	}
	said := op.SpokenAmount(minor, pi.Currency)
	return readBack{
		Sentence: "I'll charge " + said + " to your card — shall I go ahead?",
		Said:     said,
		value:    op.DecimalAmount(minor, pi.Currency) + " " + pi.Currency,
		bound:    []string{pi.ID.String(), strconv.FormatInt(minor, 10), pi.Currency},
		details:  map[string]any{"amount": minor, "currency": pi.Currency, "amount_spoken": said, "payment_intent_id": pi.ID},
	}, true, nil
}
