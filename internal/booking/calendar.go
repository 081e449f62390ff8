package booking

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/internal/schedule"
)

// Appointments in a remote calendar: the tenant's own (Google Calendar,
// Microsoft 365, Cal.com, connected with `oncecall calendar connect`) or
// the http provider's. Before anything is sent, the claim checks what
// oncecall's records can tell: the customer is the tenant's, the time is
// one of the practitioner's slots and in the future, no other booking of
// oncecall's holds it, and the appointment to move or cancel is one
// oncecall booked and no other change of it is under way; the calendar
// itself is read right before the write (internal/provider/calendars). The
// step carries the provider protocol's version 2 payload, and the
// appointment's record (db calendar_appointments) links its id, the
// booking action's, to the provider's event.

// Rejection reasons of remote calendars.
const (
	// CalendarNotMapped: the slot's practitioner has no calendar in the
	// tenant's connection.
	CalendarNotMapped = "CALENDAR_NOT_MAPPED"
	// CalendarChanged: the appointment is in a calendar the tenant no
	// longer books in (it connected another provider since).
	CalendarChanged = "CALENDAR_CHANGED"
	// AppointmentChanging: another move or cancel of the appointment (or
	// its booking) is still waiting for the calendar's answer.
	AppointmentChanging = "APPOINTMENT_CHANGE_IN_PROGRESS"
	// SlotOtherCalendar: the new slot is in another calendar than the
	// appointment (another practitioner's).
	SlotOtherCalendar = "SLOT_OTHER_CALENDAR"
	// BookingInProgress: the customer's booking made earlier in the same
	// voice call (under the same booking_ref) is still waiting for the
	// calendar's answer.
	BookingInProgress = "BOOKING_IN_PROGRESS"
)

// httpProvider names the http provider in an appointment's record.
const httpProvider = "http"

// place is where a slot's appointments live for the tenant.
type place struct {
	provider   string // google, microsoft, calcom, or http
	calendarID string
	// identity is the tenant's connection, the provider the step is
	// planned for; zero for the http provider (the server names it).
	identity provider.Identity
}

// slotCalendar is the calendar of a slot of the tenant: its connection's
// mapping, or the http provider's calendar of the practitioner (or of the
// single calendar). rejected, when set, is the answer.
func slotCalendar(ctx context.Context, tx *db.Tx, x idem.Exec, slot oncecall.OpenSlot) (place, *idem.Result, error) {
	conn, err := tx.CalendarConnection(ctx, x.TenantID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		if !x.IsRemote(provider.Calendar) {
			res, err := op.Reject(CalendarNotMapped, map[string]string{"slot_id": slot.ID.String()})
			return place{}, &res, err
		}
		id := "default"
		if slot.Catalog() {
			id = slot.PractitionerID.String()
		}
		return place{provider: httpProvider, calendarID: id}, nil, nil
	case err != nil:
		return place{}, nil, err
	}
	maps, err := tx.CalendarMappings(ctx, x.TenantID)
	if err != nil {
		return place{}, nil, err
	}
	cal, ok := oncecall.CalendarFor(maps, slot.PractitionerID, slot.LocationID)
	if !ok {
		details := map[string]string{"slot_id": slot.ID.String()}
		if slot.Catalog() {
			details["practitioner_id"] = slot.PractitionerID.String()
		}
		res, err := op.Reject(CalendarNotMapped, details)
		return place{}, &res, err
	}
	return place{provider: conn.Provider, calendarID: cal, identity: provider.Identity{Kind: conn.Provider, Account: conn.ID.String()}}, nil, nil
}

// connectionOf is the provider a recorded appointment's changes are sent
// to: its connection, which must still be the one it was booked in.
func connectionOf(ctx context.Context, tx *db.Tx, tenant uuid.UUID, appt oncecall.CalendarAppointment) (provider.Identity, bool, error) {
	conn, err := tx.CalendarConnection(ctx, tenant)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return provider.Identity{}, appt.Provider == httpProvider, nil
	case err != nil:
		return provider.Identity{}, false, err
	}
	return provider.Identity{Kind: conn.Provider, Account: conn.ID.String()}, conn.Provider == appt.Provider, nil
}

// reject is a Reservation answering code with details.
func reject(code string, details map[string]string) (op.Reservation, error) {
	res, err := op.Reject(code, details)
	return op.Reservation{Reject: &res}, err
}

// slotFor locks and reads a slot a remote booking or move goes into; a
// slot the tenant does not have, or one in the past, is the answer.
func slotFor(ctx context.Context, tx *db.Tx, tenant uuid.UUID, id string) (oncecall.OpenSlot, *op.Reservation, error) {
	slot := op.MustUUID(id)
	err := tx.LockCalendarSlot(ctx, tenant, slot)
	if errors.Is(err, db.ErrNotFound) {
		r, err := reject(SlotNotFound, map[string]string{"slot_id": id})
		return oncecall.OpenSlot{}, &r, err
	}
	if err != nil {
		return oncecall.OpenSlot{}, nil, err
	}
	s, err := tx.SlotPlace(ctx, tenant, slot)
	if err != nil {
		return s, nil, err
	}
	if !s.StartsAt.After(time.Now()) {
		r, err := reject(SlotUnavailable, map[string]string{"slot_id": id})
		return s, &r, err
	}
	return s, nil, nil
}

// held reports whether oncecall holds a time on a calendar for another
// appointment than self: a booking in flight, one written so recently no
// read may show it yet, or, on the http provider (whose calendar oncecall
// cannot read), any active one.
func held(ctx context.Context, tx *db.Tx, tenant uuid.UUID, where place, s oncecall.OpenSlot, self uuid.UUID) (bool, error) {
	times, err := tx.CalendarTimesHeld(ctx, tenant, where.calendarID, s.StartsAt, s.EndsAt, time.Now().Add(-calendar.WrittenHold), where.provider == httpProvider)
	if err != nil {
		return false, err
	}
	for _, t := range times {
		if t.ID != self {
			return true, nil
		}
	}
	return false, nil
}

// payloadAt is the version 2 payload of a write at slot s on calendar cal.
func payloadAt(x idem.Exec, cust oncecall.Customer, s oncecall.OpenSlot, cal, service string) calendar.Payload {
	zone, err := schedule.ParseZone(s.Timezone)
	if err != nil {
		zone = time.UTC
	}
	p := calendar.Payload{
		Version: calendar.PayloadVersion, TenantID: x.TenantID.String(), ActionID: x.ActionID.String(),
		Start: calendar.At(s.StartsAt, zone), End: calendar.At(s.EndsAt, zone),
		Practitioner: calendar.Practitioner{Name: s.Resource, CalendarID: cal},
		Service:      calendar.Service{Name: service},
		Customer:     calendar.Contact{ID: cust.ID.String(), Name: cust.Name, Phone: cust.Phone, Email: cust.Email},
	}
	if s.ID != uuid.Nil {
		p.SlotID = s.ID.String()
	}
	if s.Catalog() {
		p.Practitioner.ID, p.Practitioner.Name = s.PractitionerID.String(), s.Practitioner
		p.Location = &calendar.Location{ID: s.LocationID.String(), Name: s.Location, Address: s.Address}
	}
	return p
}

// reserveCalendarBooking checks a booking before it is sent to a remote
// calendar and records it in flight: it then holds its time against any
// other booking until the calendar answers.
func reserveCalendarBooking(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput) (op.Reservation, error) {
	cust, err := tx.CustomerByID(ctx, x.TenantID, op.MustUUID(in.CustomerID))
	if errors.Is(err, db.ErrNotFound) {
		return reject(CustomerNotFound, map[string]string{"customer_id": in.CustomerID})
	}
	if err != nil {
		return op.Reservation{}, err
	}
	if rejected, err := bookedInCall(ctx, tx, x, cust.ID, in.BookingRef); err != nil || rejected != nil {
		return deref(rejected), err
	}
	s, rejected, err := slotFor(ctx, tx, x.TenantID, in.SlotID)
	if err != nil || rejected != nil {
		return deref(rejected), err
	}
	where, no, err := slotCalendar(ctx, tx, x, s)
	if err != nil || no != nil {
		return op.Reservation{Reject: no}, err
	}
	if taken, err := held(ctx, tx, x.TenantID, where, s, uuid.Nil); err != nil || taken {
		if err != nil {
			return op.Reservation{}, err
		}
		return reject(SlotUnavailable, map[string]string{"slot_id": in.SlotID})
	}
	return recordCalendarBooking(ctx, tx, x, in, cust, s, where, oncecall.Service{Name: in.Service})
}

// recordCalendarBooking records a booking of slot s about to be sent to
// its calendar (where) and returns the step's payload and provider: from
// now on it holds its time against any other booking until the calendar
// answers. svc is the service booked (its id is known for a booking by
// service).
func recordCalendarBooking(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput, cust oncecall.Customer, s oncecall.OpenSlot,
	where place, svc oncecall.Service) (op.Reservation, error) {
	err := tx.InsertCalendarBooking(ctx, db.NewCalendarAppointment{
		TenantID: x.TenantID, ID: x.ActionID, CustomerID: cust.ID, SlotID: s.ID, PractitionerID: s.PractitionerID,
		LocationID: s.LocationID, ServiceID: svc.ID, Service: svc.Name, Provider: where.provider, CalendarID: where.calendarID,
		StartsAt: s.StartsAt, EndsAt: s.EndsAt, CallPlatform: x.CallPlatform, CallID: x.CallID, BookingRef: in.BookingRef,
	})
	if err != nil {
		return op.Reservation{}, err
	}
	p := payloadAt(x, cust, s, where.calendarID, svc.Name)
	if svc.ID != uuid.Nil {
		p.Service.ID = svc.ID.String()
	}
	return op.Reservation{Payload: p, Provider: where.identity}, nil
}

// bookedInCall refuses a second booking of the customer in one voice call
// under the same booking_ref, as oncecall's own calendar does: while the
// first stands (ALREADY_BOOKED_IN_CALL, with it), or while it is still
// waiting for the calendar's answer (BOOKING_IN_PROGRESS). A booking
// outside a call is never refused so.
func bookedInCall(ctx context.Context, tx *db.Tx, x idem.Exec, customer uuid.UUID, bookingRef string) (*op.Reservation, error) {
	if x.CallID == "" {
		return nil, nil
	}
	first, err := tx.CalendarBookingInCall(ctx, x.TenantID, customer, x.CallPlatform, x.CallID, bookingRef)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	details := map[string]string{
		"appointment_id": first.ID.String(), "customer_id": first.CustomerID.String(), "service": first.Service,
		"status": oncecall.CalendarActive, "starts_at": first.StartsAt.UTC().Format(time.RFC3339),
		"ends_at": first.EndsAt.UTC().Format(time.RFC3339), "booking_ref": first.BookingRef,
	}
	if first.SlotID != uuid.Nil {
		details["slot_id"] = first.SlotID.String()
	}
	code := AlreadyBookedInCall
	if first.Status == oncecall.CalendarBooking {
		code, details["status"], details["action_id"] = BookingInProgress, first.Status, first.ID.String()
	}
	r, err := reject(code, details)
	return &r, err
}

// CalendarAppointment is an appointment a remote calendar holds, as an
// answer gives it: its id (the booking action's, by which it is moved and
// cancelled), who, the slot, and the provider's event (provider_ref).
type CalendarAppointment struct {
	ID          string `json:"id"`
	CustomerID  string `json:"customer_id,omitempty"`
	SlotID      string `json:"slot_id,omitempty"`
	Service     string `json:"service"`
	Status      string `json:"status"`
	StartsAt    string `json:"starts_at,omitempty"`
	EndsAt      string `json:"ends_at,omitempty"`
	ProviderRef string `json:"provider_ref"`
}

// eventOf is the event a calendar step made or changed: what the provider
// named (data.event_id), else the write's reference.
func eventOf(rec provider.Record) string {
	if id := rec.Data["event_id"]; id != "" {
		return id
	}
	return rec.ID
}

// actionOf is the action of a step's external reference ("<action>/<step>").
func actionOf(ref string) string {
	action, _, _ := strings.Cut(ref, "/")
	return action
}

// calendarAnswer is the answer of a calendar write: the appointment with
// its event and, when the provider said it, its time.
func calendarAnswer(status int, id, customer, slot, service, state string, rec provider.Record) (idem.Result, error) {
	v := CalendarAppointment{
		ID: id, CustomerID: customer, SlotID: slot, Service: service, Status: state, ProviderRef: eventOf(rec),
		StartsAt: rec.Data["start"], EndsAt: rec.Data["end"],
	}
	return op.Confirm(status, id, v)
}

// settleCalendarBooking records the calendar's answer to a booking: its
// event, or nothing of it.
func settleCalendarBooking(ctx context.Context, tx *db.Tx, x idem.Exec, res idem.Result, ref string) error {
	if res.Outcome != oncecall.Confirmed {
		return tx.DeleteCalendarBooking(ctx, x.TenantID, x.ActionID)
	}
	ev, err := answeredEvent(ctx, tx, x, res, ref)
	if err != nil {
		return err
	}
	_, err = tx.CalendarBooked(ctx, x.TenantID, x.ActionID, ev)
	return err
}

// answeredEvent is the event a calendar write made or changed and its
// time, from the answer, and its version from what the calendar gave the
// step (an operator's evidence names the event only).
func answeredEvent(ctx context.Context, tx *db.Tx, x idem.Exec, res idem.Result, ref string) (db.CalendarEvent, error) {
	var v CalendarAppointment
	if err := json.Unmarshal(res.Body, &v); err != nil {
		return db.CalendarEvent{}, err
	}
	ev := db.CalendarEvent{EventID: v.ProviderRef}
	if ev.EventID == "" {
		ev.EventID = ref
	}
	ev.StartsAt, _ = time.Parse(time.RFC3339, v.StartsAt)
	ev.EndsAt, _ = time.Parse(time.RFC3339, v.EndsAt)
	steps, err := tx.Steps(ctx, x.ActionID)
	if err != nil {
		return ev, err
	}
	for _, st := range steps {
		if st.Required && st.Capability == provider.Calendar && st.Result["event_id"] == ev.EventID {
			ev.ETag = st.Result["etag"]
		}
	}
	return ev, nil
}

// Confirmed is appointment.book's answer from a remote calendar's record.
func (bookRemote) Confirmed(in BookInput, rec provider.Record) (idem.Result, error) {
	// A booking by service names no slot: the one picked, and its
	// service, are what the step sent (calendar.Data).
	slot, service := cmp.Or(in.SlotID, rec.Data["slot_id"]), cmp.Or(in.Service, rec.Data["service"])
	return calendarAnswer(http.StatusCreated, actionOf(rec.ExternalRef), in.CustomerID, slot, service, oncecall.CalendarActive, rec)
}

// Settle records appointment.book's outcome on a remote calendar.
func (bookRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, _ BookInput, res idem.Result, ref string) error {
	return settleCalendarBooking(ctx, tx, x, res, ref)
}

// changeable reads an appointment a move or a cancel acts on, and holds
// it for this action; a rejection when it cannot be changed now.
func changeable(ctx context.Context, tx *db.Tx, x idem.Exec, id string) (oncecall.CalendarAppointment, provider.Identity, *op.Reservation, error) {
	appt, err := tx.CalendarAppointment(ctx, x.TenantID, op.MustUUID(id))
	rejected := func(code string) (oncecall.CalendarAppointment, provider.Identity, *op.Reservation, error) {
		r, err := reject(code, map[string]string{"appointment_id": id})
		return appt, provider.Identity{}, &r, err
	}
	switch {
	case errors.Is(err, db.ErrNotFound):
		return rejected(AppointmentNotFound)
	case err != nil:
		return appt, provider.Identity{}, nil, err
	case appt.Status == oncecall.CalendarCancelled:
		return rejected(AppointmentNotActive)
	case appt.Status == oncecall.CalendarBooking || appt.HeldBy != uuid.Nil && appt.HeldBy != x.ActionID:
		return rejected(AppointmentChanging)
	}
	identity, same, err := connectionOf(ctx, tx, x.TenantID, appt)
	if err != nil {
		return appt, identity, nil, err
	}
	if !same {
		return rejected(CalendarChanged)
	}
	return appt, identity, nil, nil
}

// hold holds appt for the action; a rejection when another action took it
// meanwhile.
func hold(ctx context.Context, tx *db.Tx, x idem.Exec, appt oncecall.CalendarAppointment) (*op.Reservation, error) {
	ok, err := tx.HoldCalendarAppointment(ctx, x.TenantID, appt.ID, x.ActionID)
	if err != nil || ok {
		return nil, err
	}
	r, err := reject(AppointmentChanging, map[string]string{"appointment_id": appt.ID.String()})
	return &r, err
}

// reserveCalendarMove checks a move before it is sent and holds the
// appointment for it.
func reserveCalendarMove(ctx context.Context, tx *db.Tx, x idem.Exec, in RescheduleInput) (op.Reservation, error) {
	appt, identity, rejected, err := changeable(ctx, tx, x, in.AppointmentID)
	if err != nil || rejected != nil {
		return deref(rejected), err
	}
	s, rejected, err := slotFor(ctx, tx, x.TenantID, in.SlotID)
	if err != nil || rejected != nil {
		return deref(rejected), err
	}
	where, no, err := slotCalendar(ctx, tx, x, s)
	if err != nil || no != nil {
		return op.Reservation{Reject: no}, err
	}
	if where.provider != appt.Provider || where.calendarID != appt.CalendarID {
		return reject(SlotOtherCalendar, map[string]string{"appointment_id": in.AppointmentID, "slot_id": in.SlotID})
	}
	if taken, err := held(ctx, tx, x.TenantID, where, s, appt.ID); err != nil || taken {
		if err != nil {
			return op.Reservation{}, err
		}
		return reject(SlotUnavailable, map[string]string{"slot_id": in.SlotID})
	}
	cust, err := tx.CustomerByID(ctx, x.TenantID, appt.CustomerID)
	if err != nil {
		return op.Reservation{}, err
	}
	if rejected, err := hold(ctx, tx, x, appt); err != nil || rejected != nil {
		return deref(rejected), err
	}
	p := payloadAt(x, cust, s, appt.CalendarID, appt.Service)
	p.Event = &calendar.EventRef{ID: appt.EventID, ETag: appt.ETag}
	return op.Reservation{Payload: p, Provider: identity}, nil
}

// reserveCalendarCancel checks a cancel before it is sent and holds the
// appointment for it.
func reserveCalendarCancel(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (op.Reservation, error) {
	appt, identity, rejected, err := changeable(ctx, tx, x, in.AppointmentID)
	if err != nil || rejected != nil {
		return deref(rejected), err
	}
	cust, err := tx.CustomerByID(ctx, x.TenantID, appt.CustomerID)
	if err != nil {
		return op.Reservation{}, err
	}
	var s oncecall.OpenSlot
	if appt.SlotID != uuid.Nil {
		if s, err = tx.SlotPlace(ctx, x.TenantID, appt.SlotID); err != nil && !errors.Is(err, db.ErrNotFound) {
			return op.Reservation{}, err
		}
	}
	s.StartsAt, s.EndsAt = appt.StartsAt, appt.EndsAt
	if rejected, err := hold(ctx, tx, x, appt); err != nil || rejected != nil {
		return deref(rejected), err
	}
	p := payloadAt(x, cust, s, appt.CalendarID, appt.Service)
	p.Event = &calendar.EventRef{ID: appt.EventID}
	return op.Reservation{Payload: p, Provider: identity}, nil
}

// calendarMoveRemote is appointment.reschedule on a remote calendar.
type calendarMoveRemote struct{}

func (calendarMoveRemote) Capability() string             { return provider.Calendar }
func (calendarMoveRemote) Payload(in RescheduleInput) any { return in }

// Reserve checks the move and holds the appointment (reserveCalendarMove).
func (calendarMoveRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in RescheduleInput) (op.Reservation, error) {
	return reserveCalendarMove(ctx, tx, x, in)
}

func (calendarMoveRemote) Confirmed(in RescheduleInput, rec provider.Record) (idem.Result, error) {
	return calendarAnswer(http.StatusOK, in.AppointmentID, "", in.SlotID, rec.Data["service"], oncecall.CalendarActive, rec)
}

func (calendarMoveRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in RescheduleInput, res idem.Result, ref string) error {
	appt := op.MustUUID(in.AppointmentID)
	if res.Outcome != oncecall.Confirmed {
		return tx.ReleaseCalendarAppointment(ctx, x.TenantID, appt, x.ActionID)
	}
	ev, err := answeredEvent(ctx, tx, x, res, ref)
	if err != nil {
		return err
	}
	slot := op.MustUUID(in.SlotID)
	if ev.StartsAt.IsZero() {
		// An operator's evidence names the event only: the slot's time.
		s, err := tx.SlotPlace(ctx, x.TenantID, slot)
		if err != nil {
			return err
		}
		ev.StartsAt, ev.EndsAt = s.StartsAt, s.EndsAt
	}
	return tx.CalendarMoved(ctx, x.TenantID, appt, x.ActionID, slot, ev)
}

// calendarCancelRemote is appointment.cancel on a remote calendar.
type calendarCancelRemote struct{}

func (calendarCancelRemote) Capability() string         { return provider.Calendar }
func (calendarCancelRemote) Payload(in CancelInput) any { return in }

// Reserve checks the cancel and holds the appointment (reserveCalendarCancel).
func (calendarCancelRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput) (op.Reservation, error) {
	return reserveCalendarCancel(ctx, tx, x, in)
}

func (calendarCancelRemote) Confirmed(in CancelInput, rec provider.Record) (idem.Result, error) {
	return calendarAnswer(http.StatusOK, in.AppointmentID, "", "", rec.Data["service"], oncecall.CalendarCancelled, rec)
}

func (calendarCancelRemote) Settle(ctx context.Context, tx *db.Tx, x idem.Exec, in CancelInput, res idem.Result, _ string) error {
	appt := op.MustUUID(in.AppointmentID)
	if res.Outcome != oncecall.Confirmed {
		return tx.ReleaseCalendarAppointment(ctx, x.TenantID, appt, x.ActionID)
	}
	return tx.CalendarCancelled(ctx, x.TenantID, appt, x.ActionID)
}

// calendarStanding is appointmentStanding of an appointment in a remote
// calendar, as oncecall last read it (the api reads the calendar again
// before it asks): cancelled, moved to another slot by oncecall, or to
// another time in the calendar.
func calendarStanding(ctx context.Context, s *db.Store, tenant, id uuid.UUID, slot string) (string, bool, error) {
	appt, err := s.CalendarAppointment(ctx, tenant, id)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", true, err
	case appt.Status == oncecall.CalendarCancelled:
		return "cancelled", true, nil
	case slot != "" && appt.SlotID.String() != slot:
		return "moved", true, nil
	case appt.SlotID != uuid.Nil:
		place, err := s.SlotPlace(ctx, tenant, appt.SlotID)
		if err == nil && !place.StartsAt.Equal(appt.StartsAt) {
			return "moved", true, nil
		}
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return "", true, err
		}
	}
	return "", true, nil
}
