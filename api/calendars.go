package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendars"
)

// Calendars is what the API reads of the tenants' own calendars
// (calendars.Service): whether a tenant books in one, and what callers
// hear of appointments in remote calendars, as the calendars show them.
type Calendars interface {
	// Connected reports whether the tenant books in its own calendar.
	Connected(ctx context.Context, tenant uuid.UUID) (bool, error)
	// Appointments lists a customer's appointments in remote calendars that
	// end after from, soonest first.
	Appointments(ctx context.Context, tenant, customer uuid.UUID, from time.Time, limit int) ([]oncecall.Appointment, error)
	// Appointment is one of them; db.ErrNotFound when there is none.
	Appointment(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, error)
	// Refresh reads one of them in its calendar and records what it shows.
	Refresh(ctx context.Context, tenant, id uuid.UUID) (oncecall.CalendarAppointment, error)
	// Offered keeps the slots the calendars show free (see
	// calendars.Service.Offered); httpRemote: the http provider serves the
	// calendar of tenants without a connection.
	Offered(ctx context.Context, tenant uuid.UUID, slots []oncecall.OpenSlot, httpRemote bool) ([]oncecall.OpenSlot, error)
	// Free keeps the slots the calendars show free by their latest read,
	// reading none of oncecall's records (calendars.Service.Free).
	Free(ctx context.Context, tenant uuid.UUID, slots []oncecall.OpenSlot) ([]oncecall.OpenSlot, error)
	// Notify verifies a provider's change notification and drops what was
	// read of the calendar it names (calendars.Service.Notify).
	Notify(ctx context.Context, n calendars.Notification) (calendars.Noticed, error)
}

// remoteFor reports whether the tenant's writes of capability go to a
// remote provider: the calendar of a tenant connected to its own, else the
// server's configuration.
func (s *Server) remoteFor(ctx context.Context, tenant uuid.UUID, capability string) (bool, error) {
	if capability == provider.Calendar && s.cfg.Calendars != nil {
		connected, err := s.cfg.Calendars.Connected(ctx, tenant)
		if err != nil || connected {
			return connected, db.Fault(err)
		}
	}
	return s.cfg.Remote != nil && s.cfg.Remote.Remote(capability), nil
}

// httpCalendar reports whether tenants without a connection book through
// the http calendar provider.
func (s *Server) httpCalendar() bool {
	return s.cfg.Remote != nil && s.cfg.Remote.Remote(provider.Calendar)
}

// pages bounds how many pages of slots openSlots reads to fill a list with
// slots the calendars show free.
const pages = 4

// openSlots is FindOpenSlots with the slots the calendars show taken left
// out (for a tenant that books in a remote calendar), reading further
// pages while the list is short; q.Limit is how many are wanted.
func (s *Server) openSlots(ctx context.Context, tenant uuid.UUID, q oncecall.OpenSlotQuery) ([]oncecall.OpenSlot, error) {
	if s.cfg.Calendars == nil {
		return s.cfg.Store.FindOpenSlots(ctx, tenant, q)
	}
	want := q.Limit
	var out []oncecall.OpenSlot
	for page := 0; page < pages && len(out) < want; page++ {
		slots, err := s.cfg.Store.FindOpenSlots(ctx, tenant, q)
		if err != nil {
			return nil, db.Fault(err)
		}
		full := len(slots) == q.Limit
		if len(slots) > 0 {
			q.After = slots[len(slots)-1].ID
		}
		if slots, err = s.cfg.Calendars.Offered(ctx, tenant, slots, s.httpCalendar()); err != nil {
			return nil, calendarFault(err)
		}
		out = append(out, slots...)
		if !full {
			break
		}
	}
	if len(out) > want {
		out = out[:want]
	}
	return out, nil
}

// customerAppointments lists a customer's appointments from a time on,
// soonest first, at most limit: oncecall's own and those in remote
// calendars, as the calendars show them, each with its slot's place.
func (s *Server) customerAppointments(ctx context.Context, tenant, customer uuid.UUID, from time.Time, limit int) ([]oncecall.PlacedAppointment, error) {
	list, err := s.cfg.Store.ListCustomerAppointments(ctx, tenant, customer, from, limit)
	if err != nil || s.cfg.Calendars == nil {
		return list, db.Fault(err)
	}
	remote, err := s.cfg.Calendars.Appointments(ctx, tenant, customer, from, limit)
	if err != nil {
		return nil, calendarFault(err)
	}
	for _, a := range remote {
		placed, err := s.placed(ctx, tenant, a)
		if err != nil {
			return nil, err
		}
		list = append(list, placed)
	}
	slices.SortStableFunc(list, func(a, b oncecall.PlacedAppointment) int { return a.StartsAt.Compare(b.StartsAt) })
	if len(list) > limit {
		list = list[:limit]
	}
	return list, nil
}

// placed is an appointment with its slot's place (whose and where, the
// timezone it is said in), at the appointment's own times: a calendar may
// have moved it out of its slot.
func (s *Server) placed(ctx context.Context, tenant uuid.UUID, a oncecall.Appointment) (oncecall.PlacedAppointment, error) {
	out := oncecall.PlacedAppointment{Appointment: a}
	if a.SlotID == uuid.Nil {
		return out, nil
	}
	p, err := s.cfg.Store.SlotPlace(ctx, tenant, a.SlotID)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return out, db.Fault(err)
	}
	p.StartsAt, p.EndsAt = a.StartsAt, a.EndsAt
	out.Place = p
	return out, nil
}

// appointmentByID is one of the tenant's appointments: oncecall's own, or
// one in a remote calendar as its calendar shows it.
func (s *Server) appointmentByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, error) {
	a, err := s.cfg.Store.AppointmentByID(ctx, tenant, id)
	if !errors.Is(err, db.ErrNotFound) || s.cfg.Calendars == nil {
		return a, err
	}
	a, err = s.cfg.Calendars.Appointment(ctx, tenant, id)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return a, calendarFault(err)
	}
	return a, err
}

// refreshCalendar reads again in its calendar the appointment a completed
// appointment action names, so that what became of it there (moved,
// deleted) is what the action's standing is judged by.
func (s *Server) refreshCalendar(ctx context.Context, a oncecall.Action) error {
	if s.cfg.Calendars == nil || !strings.HasPrefix(a.Operation, "appointment.") || a.Outcome != oncecall.Confirmed {
		return nil
	}
	id, err := uuid.Parse(a.ResourceID)
	if err != nil {
		return nil //nolint:nilerr // not an appointment of oncecall's
	}
	// Only a connected calendar can be read; a tenant without one has
	// nothing to read again.
	if connected, err := s.cfg.Calendars.Connected(ctx, a.TenantID); err != nil || !connected {
		return db.Fault(err)
	}
	_, err = s.cfg.Calendars.Refresh(ctx, a.TenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return calendarFault(err)
}

// calendarFault is a failure to read a calendar (or oncecall's record of
// it) as the API answers it: the database's failures as db.Fault says,
// anything else (the calendar did not answer) unavailable: nothing was
// stored, the same request may be sent again.
func calendarFault(err error) error {
	if err == nil {
		return nil
	}
	if f := db.Fault(err); fault.CodeOf(f) != fault.Internal || errors.Is(err, context.Canceled) {
		return f
	}
	return fault.Wrap(fault.Unavailable, err, "the business's calendar could not be read; nothing was stored, retry")
}
