package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// A tenant's calendar connection, the map of its practitioners to the
// provider's calendars, and the appointments oncecall booked there
// (migration 0031).

// ConnectCalendar sets the tenant's calendar connection and replaces its
// mappings with maps, in one transaction; it returns the connection as
// stored (its ID kept when the provider is the same). ErrNotFound when a
// mapping names a practitioner or location the tenant does not have.
func (s *Store) ConnectCalendar(ctx context.Context, c oncecall.CalendarConnection, maps []oncecall.CalendarMapping) (oncecall.CalendarConnection, error) {
	settings, err := json.Marshal(c.Settings)
	if err != nil {
		return oncecall.CalendarConnection{}, err
	}
	if c.Settings == nil {
		settings = []byte("{}")
	}
	var out oncecall.CalendarConnection
	err = s.InTx(ctx, func(tx *Tx) error {
		row, err := tx.q.UpsertCalendarConnection(ctx, dbsqlc.UpsertCalendarConnectionParams{
			TenantID: c.TenantID, ID: uuid.New(), Provider: c.Provider, Credentials: c.Credentials,
			BaseUrl: c.BaseURL, Settings: settings,
		})
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == foreignKeyViolation {
			return fmt.Errorf("no tenant %s: %w", c.TenantID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store the connection: %w", err)
		}
		if out, err = connection(row); err != nil {
			return err
		}
		if err := tx.q.DeleteCalendarMappings(ctx, c.TenantID); err != nil {
			return err
		}
		for _, m := range maps {
			err := tx.q.InsertCalendarMapping(ctx, dbsqlc.InsertCalendarMappingParams{
				TenantID: c.TenantID, CalendarID: m.CalendarID,
				PractitionerID: optionalID(m.PractitionerID), LocationID: optionalID(m.LocationID),
			})
			if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == foreignKeyViolation {
				return fmt.Errorf("the mapping to %s names a practitioner or location the tenant does not have: %w", m.CalendarID, ErrNotFound)
			}
			if err != nil {
				return fmt.Errorf("store the mapping to %s: %w", m.CalendarID, err)
			}
		}
		return nil
	})
	return out, err
}

// DisconnectCalendar removes the tenant's connection and its mappings;
// ErrNotFound when it has none. The appointments booked in the calendar
// stay there, and their records here.
func (s *Store) DisconnectCalendar(ctx context.Context, tenant uuid.UUID) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.q.DeleteCalendarMappings(ctx, tenant); err != nil {
			return err
		}
		n, err := tx.q.DeleteCalendarConnection(ctx, tenant)
		if err == nil && n == 0 {
			return ErrNotFound
		}
		return err
	})
}

// CalendarConnection is the tenant's connection; ErrNotFound when it has none.
func (q queries) CalendarConnection(ctx context.Context, tenant uuid.UUID) (oncecall.CalendarConnection, error) {
	row, err := q.q.CalendarConnection(ctx, tenant)
	if err != nil {
		return oncecall.CalendarConnection{}, notFound(err)
	}
	return connection(row)
}

// CalendarConnectionByID is the connection with that id, whatever its
// tenant (a step names it); ErrNotFound when there is none.
func (q queries) CalendarConnectionByID(ctx context.Context, id uuid.UUID) (oncecall.CalendarConnection, error) {
	row, err := q.q.CalendarConnectionByID(ctx, id)
	if err != nil {
		return oncecall.CalendarConnection{}, notFound(err)
	}
	return connection(row)
}

// CalendarConnections lists every tenant's connection.
func (q queries) CalendarConnections(ctx context.Context) ([]oncecall.CalendarConnection, error) {
	rows, err := q.q.CalendarConnections(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.CalendarConnection, 0, len(rows))
	for _, r := range rows {
		c, err := connection(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func connection(r dbsqlc.CalendarConnection) (oncecall.CalendarConnection, error) {
	c := oncecall.CalendarConnection{
		TenantID: r.TenantID, ID: r.ID, Provider: r.Provider, Credentials: r.Credentials, BaseURL: r.BaseUrl,
		UpdatedAt: r.UpdatedAt,
	}
	if len(r.Settings) > 0 {
		if err := unmarshalJSON(r.Settings, &c.Settings); err != nil {
			return c, fmt.Errorf("read the calendar connection's settings: %w", err)
		}
	}
	return c, nil
}

// CalendarMappings lists the tenant's mappings, the single calendar first.
func (q queries) CalendarMappings(ctx context.Context, tenant uuid.UUID) ([]oncecall.CalendarMapping, error) {
	rows, err := q.q.CalendarMappings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.CalendarMapping, len(rows))
	for i, r := range rows {
		out[i] = oncecall.CalendarMapping{
			PractitionerID: deref(r.PractitionerID), LocationID: deref(r.LocationID), CalendarID: r.CalendarID,
			Practitioner: r.Practitioner, Location: r.Location,
		}
	}
	return out, nil
}

// NewCalendarAppointment is a booking about to be sent to a remote calendar.
type NewCalendarAppointment struct {
	TenantID, ID, CustomerID                      uuid.UUID
	SlotID, PractitionerID, LocationID, ServiceID uuid.UUID
	Service                                       string
	Provider, CalendarID                          string
	StartsAt, EndsAt                              time.Time
	// CallPlatform and CallID are the voice call it is booked in (empty
	// outside one), BookingRef the booking_ref it is booked under.
	CallPlatform, CallID, BookingRef string
}

// InsertCalendarBooking records a booking about to be sent: it holds its
// time on its calendar (CalendarTimesHeld) until the calendar answers.
func (q queries) InsertCalendarBooking(ctx context.Context, a NewCalendarAppointment) error {
	return q.q.InsertCalendarAppointment(ctx, dbsqlc.InsertCalendarAppointmentParams{
		TenantID: a.TenantID, ID: a.ID, CustomerID: a.CustomerID, Service: a.Service, Provider: a.Provider,
		CalendarID: a.CalendarID, StartsAt: a.StartsAt, EndsAt: a.EndsAt, SlotID: optionalID(a.SlotID),
		PractitionerID: optionalID(a.PractitionerID), LocationID: optionalID(a.LocationID), ServiceID: optionalID(a.ServiceID),
		CallPlatform: ptr(a.CallPlatform), CallID: ptr(a.CallID), BookingRef: a.BookingRef,
	})
}

// CalendarBookingInCall is the customer's appointment booked in a voice
// call under bookingRef that stands or is still waiting for the
// calendar's answer; ErrNotFound when there is none.
func (q queries) CalendarBookingInCall(ctx context.Context, tenant, customer uuid.UUID, platform, call, bookingRef string) (oncecall.CalendarAppointment, error) {
	row, err := q.q.CalendarBookingInCall(ctx, dbsqlc.CalendarBookingInCallParams{
		TenantID: tenant, CustomerID: customer, CallPlatform: &platform, CallID: &call, BookingRef: bookingRef,
	})
	if err != nil {
		return oncecall.CalendarAppointment{}, notFound(err)
	}
	return calendarAppointment(row), nil
}

// CalendarAppointment is an appointment booked in a remote calendar;
// ErrNotFound when the tenant has none by that id.
func (q queries) CalendarAppointment(ctx context.Context, tenant, id uuid.UUID) (oncecall.CalendarAppointment, error) {
	row, err := q.q.CalendarAppointment(ctx, dbsqlc.CalendarAppointmentParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.CalendarAppointment{}, notFound(err)
	}
	return calendarAppointment(row), nil
}

// CalendarAppointmentsByEvent returns the tenant's appointments that are
// those events of a calendar.
func (q queries) CalendarAppointmentsByEvent(ctx context.Context, tenant uuid.UUID, provider, calendarID string, events []string) ([]oncecall.CalendarAppointment, error) {
	rows, err := q.q.CalendarAppointmentsByEvent(ctx, dbsqlc.CalendarAppointmentsByEventParams{
		TenantID: tenant, Provider: provider, CalendarID: calendarID, EventIds: events,
	})
	return calendarAppointments(rows), err
}

// CustomerCalendarAppointments lists a customer's appointments in remote
// calendars that end after from, soonest first: active ones and bookings
// in flight.
func (q queries) CustomerCalendarAppointments(ctx context.Context, tenant, customer uuid.UUID, from time.Time, limit int) ([]oncecall.CalendarAppointment, error) {
	rows, err := q.q.CustomerCalendarAppointments(ctx, dbsqlc.CustomerCalendarAppointmentsParams{
		TenantID: tenant, CustomerID: customer, FromTime: from, MaxRows: int32(limit),
	})
	return calendarAppointments(rows), err
}

// CalendarEvent is what the calendar holds of an appointment.
type CalendarEvent struct {
	EventID, ETag    string
	StartsAt, EndsAt time.Time
}

// CalendarBooked records the calendar's event of a booking in flight;
// false when the booking is not in flight (already recorded).
func (q queries) CalendarBooked(ctx context.Context, tenant, id uuid.UUID, ev CalendarEvent) (bool, error) {
	n, err := q.q.CalendarBooked(ctx, dbsqlc.CalendarBookedParams{
		TenantID: tenant, ID: id, EventID: &ev.EventID, Etag: ptr(ev.ETag), StartsAt: ptr(ev.StartsAt), EndsAt: ptr(ev.EndsAt),
	})
	return n == 1, err
}

// DeleteCalendarBooking forgets a booking in flight that the calendar
// refused.
func (q queries) DeleteCalendarBooking(ctx context.Context, tenant, id uuid.UUID) error {
	_, err := q.q.DeleteCalendarBooking(ctx, dbsqlc.DeleteCalendarBookingParams{TenantID: tenant, ID: id})
	return err
}

// HoldCalendarAppointment holds an active appointment for the action
// moving or cancelling it; false when it is not active or another action
// holds it.
func (q queries) HoldCalendarAppointment(ctx context.Context, tenant, id, action uuid.UUID) (bool, error) {
	n, err := q.q.HoldCalendarAppointment(ctx, dbsqlc.HoldCalendarAppointmentParams{TenantID: tenant, ID: id, ActionID: &action})
	return n == 1, err
}

// ReleaseCalendarAppointment ends action's hold (its move or cancel was
// refused).
func (q queries) ReleaseCalendarAppointment(ctx context.Context, tenant, id, action uuid.UUID) error {
	_, err := q.q.ReleaseCalendarAppointment(ctx, dbsqlc.ReleaseCalendarAppointmentParams{TenantID: tenant, ID: id, ActionID: &action})
	return err
}

// CalendarMoved records the move action made, to slot (uuid.Nil: none).
func (q queries) CalendarMoved(ctx context.Context, tenant, id, action, slot uuid.UUID, ev CalendarEvent) error {
	_, err := q.q.CalendarMoved(ctx, dbsqlc.CalendarMovedParams{
		TenantID: tenant, ID: id, ActionID: &action, EventID: &ev.EventID, Etag: ptr(ev.ETag), SlotID: optionalID(slot),
		StartsAt: ev.StartsAt, EndsAt: ev.EndsAt,
	})
	return err
}

// CalendarCancelled records the cancel action made.
func (q queries) CalendarCancelled(ctx context.Context, tenant, id, action uuid.UUID) error {
	_, err := q.q.CalendarCancelled(ctx, dbsqlc.CalendarCancelledParams{TenantID: tenant, ID: id, ActionID: &action})
	return err
}

// CalendarRead records what a read of the calendar showed of an active
// appointment no action holds: the event now, or gone (gone: cancelled).
func (q queries) CalendarRead(ctx context.Context, tenant, id uuid.UUID, ev CalendarEvent, gone bool) error {
	status := oncecall.CalendarActive
	if gone {
		status = oncecall.CalendarCancelled
	}
	_, err := q.q.CalendarRead(ctx, dbsqlc.CalendarReadParams{
		TenantID: tenant, ID: id, EventID: &ev.EventID, Etag: ptr(ev.ETag), StartsAt: ev.StartsAt, EndsAt: ev.EndsAt, Status: status,
	})
	return err
}

// HeldTime is a time oncecall holds on a calendar.
type HeldTime struct {
	ID               uuid.UUID
	StartsAt, EndsAt time.Time
	Status           string
}

// CalendarTimesHeld lists the times oncecall holds on a calendar over
// [from, to): bookings in flight, active appointments written after
// writtenAfter that no read has shown yet, and with all every active one.
func (q queries) CalendarTimesHeld(ctx context.Context, tenant uuid.UUID, calendarID string, from, to, writtenAfter time.Time, all bool) ([]HeldTime, error) {
	rows, err := q.q.CalendarTimesHeld(ctx, dbsqlc.CalendarTimesHeldParams{
		TenantID: tenant, CalendarID: calendarID, FromTime: from, ToTime: to, IncludeActive: all, WrittenAfter: writtenAfter,
	})
	if err != nil {
		return nil, err
	}
	out := make([]HeldTime, len(rows))
	for i, r := range rows {
		out[i] = HeldTime{ID: r.ID, StartsAt: r.StartsAt, EndsAt: r.EndsAt, Status: r.Status}
	}
	return out, nil
}

func calendarAppointments(rows []dbsqlc.CalendarAppointment) []oncecall.CalendarAppointment {
	out := make([]oncecall.CalendarAppointment, len(rows))
	for i, r := range rows {
		out[i] = calendarAppointment(r)
	}
	return out
}

func calendarAppointment(r dbsqlc.CalendarAppointment) oncecall.CalendarAppointment {
	return oncecall.CalendarAppointment{
		ID: r.ID, CustomerID: r.CustomerID, SlotID: deref(r.SlotID), PractitionerID: deref(r.PractitionerID),
		LocationID: deref(r.LocationID), ServiceID: deref(r.ServiceID), Service: r.Service, Provider: r.Provider,
		CalendarID: r.CalendarID, EventID: deref(r.EventID), ETag: deref(r.Etag), StartsAt: r.StartsAt, EndsAt: r.EndsAt,
		Status: r.Status, HeldBy: deref(r.HeldBy), ReadAt: deref(r.ReadAt), BookingRef: r.BookingRef, WrittenAt: r.UpdatedAt,
	}
}

// foreignKeyViolation is PostgreSQL's code for a row naming one that does
// not exist (here: another tenant's practitioner or location).
const foreignKeyViolation = "23503"

// optionalID is NULL for uuid.Nil.
func optionalID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// LockCalendarSlot locks one of the tenant's slots for the booking or move
// into it being checked (see the query); ErrNotFound when there is none.
func (q queries) LockCalendarSlot(ctx context.Context, tenant, slot uuid.UUID) error {
	_, err := q.q.LockCalendarSlot(ctx, dbsqlc.LockCalendarSlotParams{TenantID: tenant, ID: slot})
	return notFound(err)
}
