package booking

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/message"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/schedule"
	"github.com/oncecall/oncecall/wire"
)

// Rejection reasons of a booking by service.
const (
	ServiceNotFound    = "SERVICE_NOT_FOUND"
	NoPractitionerFree = "NO_PRACTITIONER_FREE"
)

// Alternatives is how many free times a booking by service that found no
// practitioner free offers instead.
const Alternatives = 3

// localStart is a wall-clock time without an offset, read in the
// location's timezone: 2030-01-02T14:00 or 2030-01-02T14:00:00.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

// startsAtMessage says what starts_at accepts.
const startsAtMessage = "must be an RFC 3339 time such as 2030-01-02T14:00:00Z, or a local time such as 2030-01-02T14:00 " +
	"(read in the location's timezone)"

// normalizeServiceForm checks the form of a booking: slot_id alone, or
// service_id and starts_at with optional practitioner_id and location_id.
// starts_at is rewritten in UTC when it is an instant, as
// YYYY-MM-DDTHH:MM:SS when it is a local time.
func normalizeServiceForm(in *BookInput) error {
	if err := op.First(op.OptionalID("service_id", &in.ServiceID), op.OptionalID("practitioner_id", &in.PractitionerID),
		op.OptionalID("location_id", &in.LocationID)); err != nil {
		return err
	}
	in.StartsAt = strings.TrimSpace(in.StartsAt)
	if in.SlotID != "" {
		switch {
		case in.ServiceID != "":
			return fault.Field("service_id", "give either slot_id, or service_id and starts_at, not both")
		case in.StartsAt != "":
			return fault.Field("starts_at", "goes with service_id; with slot_id the slot says the time")
		case in.PractitionerID != "":
			return fault.Field("practitioner_id", "goes with service_id; with slot_id the slot says who")
		case in.LocationID != "":
			return fault.Field("location_id", "goes with service_id; with slot_id the slot says where")
		}
		return op.ID("slot_id", &in.SlotID)
	}
	if in.ServiceID == "" {
		return fault.Field("slot_id", "is required: give slot_id, or service_id and starts_at")
	}
	if in.StartsAt == "" {
		return fault.Field("starts_at", "is required with service_id")
	}
	if in.Service != "" {
		return fault.Field("service", "goes with slot_id; with service_id the service's own name is recorded")
	}
	for _, layout := range localLayouts {
		if t, err := time.Parse(layout, in.StartsAt); err == nil {
			in.StartsAt = t.Format("2006-01-02T15:04:05")
			return nil
		}
	}
	if op.Time("starts_at", &in.StartsAt) != nil {
		return fault.Field("starts_at", startsAtMessage)
	}
	return nil
}

// resolveStart reads a local starts_at in the timezone of the booking's
// location, so that a booking said in local time and the same booking said
// as the instant (a slot's starts_at, as find_available_slots gives it) are
// one input, one fingerprint and one identity. Without location_id the
// zone is that of every location where the service (by that practitioner,
// when named) can be booked: when they are in more than one zone, a local
// time names no one instant and is refused. With no such location it stays
// local (the booking is refused: nobody performs the service anywhere).
func resolveStart(ctx context.Context, s *db.Store, tenant uuid.UUID, in *BookInput) (bool, error) {
	if in.ServiceID == "" {
		return false, nil
	}
	if _, ok := in.startInstant(); ok {
		return false, nil
	}
	zones, err := s.BookingZones(ctx, tenant, op.MustUUID(in.ServiceID), op.OptionalUUID(in.PractitionerID), op.OptionalUUID(in.LocationID))
	switch {
	case err != nil:
		return false, err
	case len(zones) == 0:
		return false, nil
	case len(zones) > 1:
		return false, fault.Field("starts_at", "is a local time, and this service is booked at locations in more than one "+
			"timezone (%s): give location_id, or the time with its offset (a slot's starts_at)", strings.Join(zones, ", "))
	}
	loc, err := schedule.ParseZone(zones[0])
	if err != nil {
		loc = time.UTC // a zone the zone database lacks is read as UTC, as the read tools do
	}
	wall, err := time.Parse("2006-01-02T15:04:05", in.StartsAt)
	if err != nil {
		return false, fmt.Errorf("booking: unnormalised local time %q", in.StartsAt)
	}
	t, err := schedule.Instant(wall, loc)
	if err != nil {
		return false, fault.Field("starts_at", "%s is not one time in %s: %v; give the time with its offset", in.StartsAt, zones[0], err)
	}
	in.StartsAt = t.UTC().Format(time.RFC3339Nano)
	return true, nil
}

// startInstant is starts_at as an instant; ok is false for a local time.
func (in BookInput) startInstant() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, in.StartsAt)
	return t, err == nil
}

// bookService is the booking by service: the statement picks and books the
// slot; the follow-up writes the answer a caller hears (who, where, the
// local time) and queues the confirmation, or, when no practitioner is
// free, the next free times for the same service, practitioner and
// location.
func bookService(s *db.Statement, x idem.Exec, in BookInput) {
	b := db.ServiceBooking{Customer: op.MustUUID(in.CustomerID), Service: op.MustUUID(in.ServiceID), BookingRef: in.BookingRef}
	if t, ok := in.startInstant(); ok {
		b.Start = t
	} else {
		b.StartLocal = in.StartsAt
	}
	if in.PractitionerID != "" {
		b.Practitioner = op.MustUUID(in.PractitionerID)
	}
	if in.LocationID != "" {
		b.Location = op.MustUUID(in.LocationID)
	}
	s.BookService(b)
	s.Then(serviceBooked{x, in})
}

// serviceBooked answers a booking by service after its statement
// (serviceAnswer).
type serviceBooked struct {
	x  idem.Exec
	in BookInput
}

func (b serviceBooked) Follow(ctx context.Context, tx *db.Tx, a oncecall.Action) ([]byte, error) {
	return serviceAnswer(ctx, tx, b.x, b.in, a)
}

// ServiceAppointment is a booking by service as it is answered: the
// appointment with who, where and its local time.
type ServiceAppointment struct {
	wire.Appointment
	ServiceID      string `json:"service_id"`
	PractitionerID string `json:"practitioner_id"`
	Practitioner   string `json:"practitioner"`
	LocationID     string `json:"location_id"`
	Location       string `json:"location"`
	Address        string `json:"address,omitempty"`
	Timezone       string `json:"timezone"`
	schedule.Local
	// Confirmation, with notify, is "queued" for the messaging provider,
	// "recorded" in the outbox (nothing sends it), or why there is no message.
	Confirmation string `json:"confirmation,omitempty"`
}

// NoPractitionerFreeDetails is the answer of a booking by service that
// found no practitioner free: what was asked and the next free times.
type NoPractitionerFreeDetails struct {
	ServiceID    string               `json:"service_id"`
	StartsAt     string               `json:"requested_starts_at"`
	Alternatives []dashatool.SlotView `json:"alternatives"`
}

func serviceAnswer(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput, a oncecall.Action) ([]byte, error) {
	clock, _, err := tx.TenantClock(ctx, x.TenantID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	switch {
	case a.Outcome == oncecall.Confirmed:
		booked, err := tx.AppointmentByID(ctx, x.TenantID, op.MustUUID(a.ResourceID))
		if err != nil {
			return nil, err
		}
		place, err := tx.SlotPlace(ctx, x.TenantID, booked.SlotID)
		if err != nil {
			return nil, err
		}
		where := clock.In(place.Timezone)
		out := ServiceAppointment{
			Appointment: wire.FromAppointment(booked), ServiceID: in.ServiceID,
			PractitionerID: place.PractitionerID.String(), Practitioner: place.Practitioner,
			LocationID: place.LocationID.String(), Location: place.Location, Address: place.Address,
			Timezone: place.Timezone, Local: where.Localize(booked.StartsAt, booked.EndsAt, now),
		}
		if in.Notify != "" {
			notified, err := message.Confirm(ctx, tx, x, in.CustomerID, in.Notify,
				where.Spoken(booked.StartsAt, now), booked.ID.String())
			if err != nil {
				return nil, err
			}
			out.Confirmation = notified
		}
		return json.Marshal(out)
	case a.Reason == NoPractitionerFree:
		q := oncecall.OpenSlotQuery{
			From: now, MinMinute: -1, MaxMinute: -1, OnlyAvailable: true, TenantZone: clock.Zone, Limit: Alternatives,
			ServiceID: op.MustUUID(in.ServiceID), PractitionerID: op.OptionalUUID(in.PractitionerID),
			LocationID: op.OptionalUUID(in.LocationID),
		}
		if t, ok := in.startInstant(); ok {
			q.From = later(now, t)
		} else {
			q.FromLocal = in.StartsAt
		}
		free, err := tx.FindOpenSlots(ctx, x.TenantID, q)
		if err != nil {
			return nil, err
		}
		return json.Marshal(NoPractitionerFreeDetails{
			ServiceID: in.ServiceID, StartsAt: in.StartsAt, Alternatives: dashatool.SlotViews(free, clock, now),
		})
	}
	return nil, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
