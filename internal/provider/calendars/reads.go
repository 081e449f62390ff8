package calendars

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// What callers hear of appointments in remote calendars comes from the
// calendars: a customer's appointments are the events the calendar holds
// for them, at the times it shows; one moved there is heard at its new
// time, one deleted there is not heard at all. Each read also brings
// oncecall's record of the appointment up to date (db.CalendarRead), which
// the stale-answer checks read. The http provider's calendar cannot be
// read: its appointments are heard as oncecall booked them.

// listWeeks is how far ahead a customer's events are listed in one read;
// an appointment later than that is read by its id.
const listWeeks = maxBuckets

// chainHops bounds how far a booking rescheduled in the booking system
// (Cal.com: a new uid that replaces the old) is followed.
const chainHops = 10

// Appointments lists a customer's appointments in remote calendars that
// end after from, soonest first, at most limit: as the calendars show them
// now (the http provider's as oncecall booked them). Bookings still
// waiting for the calendar's answer are not listed: nothing says they
// exist.
func (s *Service) Appointments(ctx context.Context, tenant, customer uuid.UUID, from time.Time, limit int) ([]oncecall.Appointment, error) {
	rows, err := s.cfg.Store.CustomerCalendarAppointments(ctx, tenant, customer, from.Add(-bucket), 1000)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	t, connected, err := s.Tenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	// The events the calendars hold for the customer, by calendar and id.
	listed := map[string]map[string]calendar.Event{}
	if connected {
		for _, cal := range calendarsOf(rows, t.Conn.Provider) {
			evs, err := s.Events(ctx, tenant, cal, customer.String(), from, from.Add(listWeeks*bucket))
			if err != nil {
				return nil, err
			}
			byID := map[string]calendar.Event{}
			for _, ev := range evs {
				byID[ev.ID] = ev
			}
			listed[cal] = byID
		}
	}
	var out []oncecall.Appointment
	for _, r := range rows {
		if r.Status != oncecall.CalendarActive {
			continue
		}
		if connected && r.Provider == t.Conn.Provider && r.HeldBy == uuid.Nil && r.EventID != "" {
			if r, err = s.seen(ctx, tenant, t, r, listed[r.CalendarID]); err != nil {
				return nil, err
			}
			if r.Status != oncecall.CalendarActive {
				continue
			}
		}
		if r.EndsAt.After(from) {
			out = append(out, appointment(r))
		}
	}
	slices.SortFunc(out, func(a, b oncecall.Appointment) int { return a.StartsAt.Compare(b.StartsAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Appointment is one appointment in a remote calendar, as the calendar
// shows it now; db.ErrNotFound when oncecall booked none by that id, or
// its booking is still waiting for the calendar's answer.
func (s *Service) Appointment(ctx context.Context, tenant, id uuid.UUID) (oncecall.Appointment, error) {
	r, err := s.Refresh(ctx, tenant, id)
	if err != nil {
		return oncecall.Appointment{}, err
	}
	if r.Status == oncecall.CalendarBooking {
		return oncecall.Appointment{}, db.ErrNotFound
	}
	return appointment(r), nil
}

// Refresh reads an appointment oncecall booked in a connected calendar
// there and records what it found (moved, deleted); it returns the record
// as it stands. db.ErrNotFound when oncecall booked none by that id. A
// calendar that cannot be read now leaves the record as it was.
func (s *Service) Refresh(ctx context.Context, tenant, id uuid.UUID) (oncecall.CalendarAppointment, error) {
	r, err := s.cfg.Store.CalendarAppointment(ctx, tenant, id)
	if err != nil {
		return r, err
	}
	t, connected, err := s.Tenant(ctx, tenant)
	if err != nil || !connected || r.Provider != t.Conn.Provider || r.Status != oncecall.CalendarActive || r.HeldBy != uuid.Nil || r.EventID == "" {
		return r, err
	}
	return s.seen(ctx, tenant, t, r, nil)
}

// seen brings an appointment's record up to what the calendar shows: the
// event in listed when it is there, else read by its id (following the
// bookings that replaced it). A read that fails leaves it as it was.
func (s *Service) seen(ctx context.Context, tenant uuid.UUID, t Tenant, r oncecall.CalendarAppointment, listed map[string]calendar.Event) (oncecall.CalendarAppointment, error) {
	ev, found := listed[r.EventID]
	if !found {
		for _, e := range listed {
			if e.Replaces == r.EventID {
				ev, found = e, true
			}
		}
	}
	if !found {
		var err error
		ev, err = s.current(ctx, tenant, r.CalendarID, r.EventID)
		if err != nil && !errors.Is(err, calendar.ErrNoEvent) {
			s.cfg.Log.Warn().Err(err).Str("tenant_id", tenant.String()).Str("provider", t.Conn.Provider).
				Msg("calendar could not be read; the appointment is taken as oncecall last knew it")
			return r, nil
		}
		if errors.Is(err, calendar.ErrNoEvent) {
			ev = calendar.Event{Status: calendar.Cancelled}
		}
	}
	gone := ev.Status == calendar.Cancelled
	same := !gone && ev.ID == r.EventID && ev.Start.Equal(r.StartsAt) && ev.End.Equal(r.EndsAt)
	if same && ev.ETag == r.ETag && !r.ReadAt.IsZero() {
		return r, nil
	}
	if !same && r.ReadAt.IsZero() && time.Since(r.WrittenAt) < calendar.WrittenHold {
		// oncecall wrote it moments ago and no read has shown it yet: a
		// read may lag behind the write (the provider's visibility
		// delay), so one that misses it or shows it elsewhere is not
		// believed until the hold has passed.
		return r, nil
	}
	now := db.CalendarEvent{EventID: r.EventID, ETag: r.ETag, StartsAt: r.StartsAt, EndsAt: r.EndsAt}
	if !gone {
		now = db.CalendarEvent{EventID: ev.ID, ETag: ev.ETag, StartsAt: ev.Start, EndsAt: ev.End}
	}
	if err := s.cfg.Store.CalendarRead(ctx, tenant, r.ID, now, gone); err != nil {
		return r, err
	}
	r.EventID, r.ETag, r.StartsAt, r.EndsAt, r.ReadAt = now.EventID, now.ETag, now.StartsAt, now.EndsAt, time.Now()
	if gone {
		r.Status = oncecall.CalendarCancelled
	}
	return r, nil
}

// current reads an event and, when it was cancelled for a booking that
// replaced it (a reschedule in the booking system), the booking that
// stands in its place.
func (s *Service) current(ctx context.Context, tenant uuid.UUID, cal, id string) (calendar.Event, error) {
	ev, err := s.Event(ctx, tenant, cal, id)
	for hop := 0; err == nil && ev.Status == calendar.Cancelled && ev.ReplacedBy != "" && hop < chainHops; hop++ {
		ev, err = s.Event(ctx, tenant, cal, ev.ReplacedBy)
	}
	return ev, err
}

// Offered keeps the slots a caller may be offered, as the calendars show
// them: for a connected tenant, those its calendars show free and that no
// booking of oncecall's holds; with the http provider (httpRemote), whose
// calendar cannot be read, those no booking of oncecall's holds. A slot of
// a practitioner without a calendar in the connection is not offered: it
// could not be booked.
func (s *Service) Offered(ctx context.Context, tenant uuid.UUID, slots []oncecall.OpenSlot, httpRemote bool) ([]oncecall.OpenSlot, error) {
	return s.offered(ctx, tenant, slots, httpRemote, true)
}

// Free keeps the slots the tenant's calendars show free by their latest
// read (the cache), as Offered does, without reading oncecall's records
// of the times it holds: for a claim that reads them in its own
// transaction, and must not wait for a second connection meanwhile. A
// tenant without a connection keeps every slot.
func (s *Service) Free(ctx context.Context, tenant uuid.UUID, slots []oncecall.OpenSlot) ([]oncecall.OpenSlot, error) {
	return s.offered(ctx, tenant, slots, false, false)
}

func (s *Service) offered(ctx context.Context, tenant uuid.UUID, slots []oncecall.OpenSlot, httpRemote, withHeld bool) ([]oncecall.OpenSlot, error) {
	if len(slots) == 0 {
		return slots, nil
	}
	t, connected, err := s.Tenant(ctx, tenant)
	if err != nil || !connected && !httpRemote {
		return slots, err
	}
	byCal := map[string][]int{}
	for i, sl := range slots {
		cal, ok := t.CalendarOf(sl.PractitionerID, sl.LocationID)
		if !connected {
			cal, ok = "default", true
			if sl.Catalog() {
				cal = sl.PractitionerID.String()
			}
		}
		if ok {
			byCal[cal] = append(byCal[cal], i)
		}
	}
	keep := make([]bool, len(slots))
	for cal, idx := range byCal {
		from, to := slots[idx[0]].StartsAt, slots[idx[0]].EndsAt
		for _, i := range idx {
			from, to = minTime(from, slots[i].StartsAt), maxTime(to, slots[i].EndsAt)
		}
		var a calendar.Availability
		if connected {
			if a, err = s.Availability(ctx, tenant, cal, from, to, false); err != nil {
				return nil, err
			}
		}
		var held []db.HeldTime
		if withHeld {
			if held, err = s.cfg.Store.CalendarTimesHeld(ctx, tenant, cal, from, to, time.Now().Add(-calendar.WrittenHold), !connected); err != nil {
				return nil, err
			}
		}
		for _, i := range idx {
			span := calendar.Span{Start: slots[i].StartsAt, End: slots[i].EndsAt}
			keep[i] = (!connected || a.Free(span)) && !slices.ContainsFunc(held, func(h db.HeldTime) bool {
				return span.Overlaps(calendar.Span{Start: h.StartsAt, End: h.EndsAt})
			})
		}
	}
	out := slots[:0:0]
	for i, sl := range slots {
		if keep[i] {
			out = append(out, sl)
		}
	}
	return out, nil
}

// calendarsOf lists the calendars of a provider that rows are in.
func calendarsOf(rows []oncecall.CalendarAppointment, provider string) []string {
	var out []string
	for _, r := range rows {
		if r.Provider == provider && r.Status == oncecall.CalendarActive && !slices.Contains(out, r.CalendarID) {
			out = append(out, r.CalendarID)
		}
	}
	return out
}

// appointment is a record as callers hear it.
func appointment(r oncecall.CalendarAppointment) oncecall.Appointment {
	status := "active"
	if r.Status == oncecall.CalendarCancelled {
		status = "cancelled"
	}
	return oncecall.Appointment{
		ID: r.ID, CustomerID: r.CustomerID, SlotID: r.SlotID, Service: r.Service, Status: status,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt,
	}
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
