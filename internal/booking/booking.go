// Package booking declares the appointment operations: book, reschedule and
// cancel, on the local provider (oncecall's own tables, written in the same
// transaction as the action's claim).
package booking

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/message"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
	"github.com/oncecall/oncecall/wire"
)

// Rejection reasons.
const (
	CustomerNotFound     = "CUSTOMER_NOT_FOUND"
	SlotNotFound         = "SLOT_NOT_FOUND"
	SlotUnavailable      = "SLOT_UNAVAILABLE"
	AppointmentNotFound  = "APPOINTMENT_NOT_FOUND"
	AppointmentNotActive = "APPOINTMENT_NOT_ACTIVE"
	// AlreadyBookedInCall refuses a second booking of a customer in one
	// voice call under the same booking_ref: the details are the
	// appointment that stands.
	AlreadyBookedInCall = "ALREADY_BOOKED_IN_CALL"
)

// maxBookingRef bounds booking_ref, like note_ref and points_ref.
const maxBookingRef = 100

// Operations returns the appointment operations.
func Operations() []op.Operation { return family.Operations() }

// family collects the operations as they are defined (op.Family).
var family op.Family

// BookInput is the input of appointment.book.
type BookInput struct {
	CustomerID     string `json:"customer_id" required:"true" format:"uuid" desc:"The customer's id."`
	SlotID         string `json:"slot_id" format:"uuid" desc:"The id of the slot the caller chose (from find_available_slots). Give either slot_id, or service_id and starts_at."`
	ServiceID      string `json:"service_id,omitempty" format:"uuid" desc:"Instead of slot_id: the service to book (from list_services); a free practitioner who performs it is picked."`
	StartsAt       string `json:"starts_at,omitempty" maxLength:"40" desc:"With service_id: when the appointment starts, an RFC 3339 time such as 2030-01-02T14:00:00Z (a slot's starts_at) or a local time such as 2030-01-02T14:00 read in the location's timezone."`
	PractitionerID string `json:"practitioner_id,omitempty" format:"uuid" desc:"Optional, with service_id: only this practitioner (from list_practitioners)."`
	LocationID     string `json:"location_id,omitempty" format:"uuid" desc:"Optional, with service_id: only at this location."`
	Service        string `json:"service" maxLength:"200" desc:"Optional, with slot_id: the service booked."`
	Notify         string `json:"notify" enum:"sms,email" desc:"Optional: also send the customer a confirmation by sms or email."`
	BookingRef     string `json:"booking_ref,omitempty" maxLength:"100" desc:"Optional: a call books one appointment per customer; a new value books a second, separate one on purpose (the caller wants both). Leave it unchanged when retrying; to change the time of the one booked, use reschedule_appointment."`
}

// Book reserves a slot for a customer. A slot holds one booking.
var Book = family.Add(op.Define(op.Spec[BookInput]{
	Name:    "appointment.book",
	Label:   "Booking",
	Version: 1,
	Tool:    "book_appointment",
	Description: "Book an appointment slot for a customer, after the caller has confirmed the customer and the exact slot. " +
		"Call it once per confirmed booking.",
	Logic:  bookOp{},
	Remote: newBookRemote(),
	Say: op.Phrases{
		Confirmed: "The appointment is booked. You may tell the caller it is confirmed for the time in details.when (the local " +
			"time where it takes place), with the practitioner and location when details names them.",
		Rejected: map[string]string{
			SlotUnavailable:  "That slot is no longer available. Do not say it is booked; offer the caller another time.",
			SlotNotFound:     "That slot does not exist. Do not say it is booked; look up available slots and offer one.",
			CustomerNotFound: "The customer record was not found. Do not say it is booked; confirm who the caller is.",
			ServiceNotFound:  "That service does not exist. Do not say it is booked; look the services up with list_services.",
			CalendarNotMapped: "That practitioner's calendar is not connected, so nothing was booked. Do not say it is booked; " +
				"offer a time with another practitioner, or take a message for the team.",
			calendar.EventCancelled: "The calendar shows this booking cancelled. Do not say it is booked; offer the caller another time.",
			"CUSTOMER_HAS_NO_CONTACT": "The booking system needs the caller's phone number or e-mail address, and the customer " +
				"record has neither: nothing was booked. Ask for one, update the customer, then book again.",
			NoPractitionerFree: "No practitioner is free for that service at that time: it is NOT booked. Offer the caller the " +
				"alternatives in details (each by its when, with the practitioner and location), and book the one they choose.",
			AlreadyBookedInCall: "Nothing new was booked: the caller already has an appointment booked earlier in this call, the one in " +
				"details (its time is details.when). Tell them that is the appointment they have. If they want another time " +
				"instead, offer to move it with reschedule_appointment and details.appointment_id. Only if they want a second, " +
				"separate appointment as well, call book_appointment again with a new booking_ref.",
			BookingInProgress: "Nothing new was booked: a booking for this caller made earlier in this call is still waiting " +
				"for the calendar's answer (details.action_id); it is NOT confirmed yet. Check it with check_action_status before " +
				"booking again; only for a second, separate appointment, call book_appointment with a new booking_ref.",
			"": "The appointment was not booked. Tell the caller it could not be booked.",
		},
		Pending: "The booking is NOT confirmed yet: the calendar has not answered, and its result is unknown. Tell the caller " +
			"only that it is still being processed.",
		Changed: "This booking was made, but since then the appointment was cancelled or moved (see current): it is not booked " +
			"at that time now. Do not tell the caller it is; use list_appointments to see what they have.",
	},
}))

// bookOp is the logic of Book.
type bookOp struct{}

func (bookOp) Normalize(in *BookInput) error {
	if in.Notify != "" && in.Notify != message.SMS && in.Notify != message.Email {
		return fault.Field("notify", "must be sms or email")
	}
	return op.First(op.ID("customer_id", &in.CustomerID), op.Text("service", &in.Service, 200, false),
		op.Text("booking_ref", &in.BookingRef, maxBookingRef, false), normalizeServiceForm(in))
}

// A local starts_at is read in its location's timezone: the instant is
// the identity, however it was said.
func (bookOp) Resolve(ctx context.Context, s *db.Store, tenant uuid.UUID, in *BookInput) (bool, error) {
	return resolveStart(ctx, s, tenant, in)
}

// A booking's identity is not per call (the same booking from another
// call is a re-plan of it); one call books one appointment per customer
// and booking_ref, which the statement checks.
func (bookOp) Identity(in BookInput) []string {
	id := []string{in.CustomerID, in.SlotID}
	if in.ServiceID != "" {
		id = []string{in.CustomerID, "service", in.ServiceID, in.StartsAt, in.PractitionerID, in.LocationID}
	}
	if in.BookingRef != "" {
		id = append(id, "booking_ref", in.BookingRef)
	}
	return id
}

func (bookOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in BookInput, resourceID string) (string, error) {
	return appointmentStanding(ctx, s, tenant, resourceID, in.SlotID)
}

func (bookOp) StandingByResource(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (string, error) {
	return cancelledStanding(ctx, s, tenant, resourceID)
}

func (bookOp) Statement(s *db.Statement, x idem.Exec, in BookInput) {
	if in.ServiceID != "" {
		bookService(s, x, in)
		return
	}
	s.BookRef(op.MustUUID(in.CustomerID), op.MustUUID(in.SlotID), in.Service, in.BookingRef)
	if in.Notify != "" {
		// The confirmation message is rendered in Go: a follow-up in
		// the booking's transaction.
		s.Then(confirmBooking{x, in})
	}
}

// confirmBooking queues the confirmation of a booking, after its
// statement.
type confirmBooking struct {
	x  idem.Exec
	in BookInput
}

// Follow queues the confirmation of the booking a (when the statement
// booked: a rejection is left as it is) and returns the answer that
// replaces a's: the appointment with the fate of its message. The
// confirmation is a follow-up: it never changes the booking's outcome.
func (c confirmBooking) Follow(ctx context.Context, tx *db.Tx, a oncecall.Action) ([]byte, error) {
	x, in := c.x, c.in
	if a.Outcome != oncecall.Confirmed {
		return nil, nil
	}
	booked, err := tx.AppointmentByID(ctx, x.TenantID, op.MustUUID(a.ResourceID))
	if err != nil {
		return nil, err
	}
	when, err := slotWhen(ctx, tx, x.TenantID, booked.SlotID)
	if err != nil {
		return nil, err
	}
	notified, err := message.Confirm(ctx, tx, x, in.CustomerID, in.Notify, when, booked.ID.String())
	if err != nil {
		return nil, err
	}
	return json.Marshal(notifiedAppointment{Appointment: wire.FromAppointment(booked), Confirmation: notified})
}

// notifiedAppointment is a booking with the fate of its confirmation message.
type notifiedAppointment struct {
	wire.Appointment
	// Confirmation is "queued" for the messaging provider, "recorded" in
	// the outbox (nothing sends it), or why there is no message.
	Confirmation string `json:"confirmation"`
}

// bookRemote books on a remote calendar (calendar.go) and, when asked,
// sends the confirmation through the messaging provider once the booking
// exists.
type bookRemote struct{ op.Send[BookInput] }

func newBookRemote() bookRemote {
	return bookRemote{op.SendInput[BookInput](provider.Calendar, http.StatusCreated)}
}

// FollowUps is the confirmation message, when asked.
func (bookRemote) FollowUps(in BookInput) []op.FollowUp {
	if in.Notify == "" {
		return nil
	}
	return []op.FollowUp{message.ConfirmationFollowUp(in.CustomerID, in.Notify, in.SlotID)}
}

// Reserve checks and holds the booking's slot (or picks one for a booking
// by service) and renders the confirmation.
func (bookRemote) Reserve(ctx context.Context, tx *db.Tx, x idem.Exec, in BookInput) (op.Reservation, error) {
	var (
		res  op.Reservation
		slot uuid.UUID
		err  error
	)
	if in.ServiceID != "" {
		res, slot, err = reserveServiceBooking(ctx, tx, x, in)
	} else {
		res, err = reserveCalendarBooking(ctx, tx, x, in)
		slot = op.MustUUID(in.SlotID)
	}
	if err != nil || res.Reject != nil || in.Notify == "" || !x.IsRemote(provider.Messaging) {
		return res, err
	}
	// The confirmation is rendered when the booking is claimed, with
	// the slot's time, so that every send of it carries the same text.
	when, err := slotWhen(ctx, tx, x.TenantID, slot)
	if err != nil {
		return op.Reservation{}, err
	}
	f := message.ConfirmationFollowUp(in.CustomerID, in.Notify, in.SlotID)
	payload, err := message.ConfirmationPayload(ctx, tx, x, in.CustomerID, in.Notify, when, slot.String())
	if err != nil || payload == nil {
		return res, err
	}
	res.FollowUps = map[string]any{f.Name: payload}
	return res, nil
}

// RescheduleInput is the input of appointment.reschedule.
type RescheduleInput struct {
	AppointmentID string `json:"appointment_id" required:"true" format:"uuid" desc:"The id of the appointment to move."`
	SlotID        string `json:"slot_id" required:"true" format:"uuid" desc:"The id of the new slot the caller chose."`
}

// Reschedule moves a booking to a new slot: an action of its own, never a
// retry of the booking.
var Reschedule = family.Add(op.Define(op.Spec[RescheduleInput]{
	Name:    "appointment.reschedule",
	Label:   "Reschedule",
	Version: 1,
	Tool:    "reschedule_appointment",
	Description: "Move an existing appointment to a new slot, after the caller has confirmed the new time. " +
		"This is a new action, separate from the original booking.",
	Logic:  rescheduleOp{},
	Remote: calendarMoveRemote{},
	Say: op.Phrases{
		Confirmed: "The appointment has been moved. You may tell the caller the new time in details.when (the local time where " +
			"it takes place).",
		Rejected: map[string]string{
			SlotUnavailable:      "The new slot is not available; the appointment keeps its old time. Offer another time.",
			SlotNotFound:         "That slot does not exist; the appointment keeps its old time. Look up available slots and offer one.",
			AppointmentNotFound:  "That appointment was not found; nothing was moved. Use list_appointments to see what the caller has.",
			AppointmentNotActive: "That appointment is cancelled and cannot be moved. Offer to book a new one.",
			AppointmentChanging: "Another change of this appointment is still being made; it was not moved now. Check what became " +
				"of it with list_appointments before offering the move again.",
			SlotOtherCalendar: "The new slot is with another practitioner, whose calendar is another one; the appointment keeps its " +
				"old time. Offer times with the same practitioner, or cancel it and book the new one.",
			calendar.EventChanged: "The appointment was changed in the calendar since it was read; it was not moved. Use " +
				"list_appointments to hear its time now, then offer the move again.",
			calendar.EventCancelled: "The calendar shows this appointment cancelled; it was not moved. Offer to book a new one.",
			calendar.EventNotFound:  "The appointment is no longer in the calendar; it was not moved. Offer to book a new one.",
			CalendarChanged: "The appointment is in a calendar this business no longer books in; it was not moved. Take a " +
				"message for the team.",
			"": "The appointment was not moved; it keeps its old time.",
		},
		Pending: "The move is NOT confirmed yet: the calendar has not answered, and its result is unknown. Tell the caller only " +
			"that it is still being processed; the appointment may still be at its old time.",
		Changed: "This move was made, but since then the appointment was cancelled or moved again (see current): it is not " +
			"at that time now. Do not tell the caller it is; use list_appointments to see what they have.",
	},
}))

// rescheduleOp is the logic of Reschedule.
type rescheduleOp struct{}

func (rescheduleOp) Normalize(in *RescheduleInput) error {
	return op.First(op.ID("appointment_id", &in.AppointmentID), op.ID("slot_id", &in.SlotID))
}

func (rescheduleOp) Identity(in RescheduleInput) []string {
	return []string{in.AppointmentID, in.SlotID}
}

func (rescheduleOp) Standing(ctx context.Context, s *db.Store, tenant uuid.UUID, in RescheduleInput, resourceID string) (string, error) {
	return appointmentStanding(ctx, s, tenant, resourceID, in.SlotID)
}

func (rescheduleOp) StandingByResource(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (string, error) {
	return cancelledStanding(ctx, s, tenant, resourceID)
}

func (rescheduleOp) Statement(s *db.Statement, _ idem.Exec, in RescheduleInput) {
	s.Reschedule(op.MustUUID(in.AppointmentID), op.MustUUID(in.SlotID))
}

// CancelInput is the input of appointment.cancel.
type CancelInput struct {
	AppointmentID string `json:"appointment_id" required:"true" format:"uuid" desc:"The id of the appointment to cancel."`
}

// Cancel cancels a booking and frees its slot.
var Cancel = family.Add(op.Define(op.Spec[CancelInput]{
	Name:        "appointment.cancel",
	Label:       "Cancellation",
	Version:     1,
	Tool:        "cancel_appointment",
	Description: "Cancel an existing appointment after the caller has confirmed they want it cancelled.",
	Logic:       cancelOp{},
	Remote:      calendarCancelRemote{},
	Say: op.Phrases{
		Confirmed: "The appointment is cancelled. You may tell the caller it has been cancelled.",
		Rejected: map[string]string{
			AppointmentNotActive: "That appointment was already cancelled.",
			AppointmentChanging: "Another change of this appointment is still being made; it was not cancelled now. Check what " +
				"became of it with list_appointments before cancelling again.",
			CalendarChanged: "The appointment is in a calendar this business no longer books in; it was not cancelled. Take a " +
				"message for the team.",
			"": "The appointment was not cancelled. Tell the caller it could not be found.",
		},
		Pending: "The cancellation is NOT confirmed yet: the calendar has not answered, and its result is unknown. Tell the " +
			"caller only that it is still being processed; the appointment may still stand.",
	},
}))

// cancelOp is the logic of Cancel.
type cancelOp struct{}

func (cancelOp) Normalize(in *CancelInput) error { return op.ID("appointment_id", &in.AppointmentID) }

func (cancelOp) Identity(in CancelInput) []string { return []string{in.AppointmentID} }

func (cancelOp) Statement(s *db.Statement, _ idem.Exec, in CancelInput) {
	s.Cancel(op.MustUUID(in.AppointmentID))
}

// appointmentStanding tells whether the appointment a booking or a move
// confirmed is still active in slot: "" if so, else "cancelled" or
// "moved". An appointment in a remote calendar stands as oncecall last
// read it there (calendarStanding); an id that is neither (a provider's
// reference from before remote appointments were recorded) cannot be
// checked and stands as answered.
func appointmentStanding(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID, slot string) (string, error) {
	id, err := uuid.Parse(resourceID)
	if err != nil {
		return "", nil //nolint:nilerr // a remote reference: nothing local to check
	}
	a, err := s.AppointmentByID(ctx, tenant, id)
	switch {
	case errors.Is(err, db.ErrNotFound):
		current, _, err := calendarStanding(ctx, s, tenant, id, slot)
		return current, err
	case err != nil:
		return "", err
	case a.Status != "active":
		return "cancelled", nil
	case slot != "" && a.SlotID.String() != slot: // a booking by service names no slot
		return "moved", nil
	}
	return "", nil
}

// cancelledStanding is appointmentStanding for an action whose request was
// pruned: the slot it named is gone with it, but a cancellation still shows
// on the appointment.
func cancelledStanding(ctx context.Context, s *db.Store, tenant uuid.UUID, resourceID string) (string, error) {
	current, err := appointmentStanding(ctx, s, tenant, resourceID, "")
	if current == "moved" {
		return "", err
	}
	return current, err
}

// SlotInput is the input of slot.create.
type SlotInput struct {
	StartsAt string `json:"starts_at" required:"true" format:"date-time" desc:"Start time, RFC 3339."`
	EndsAt   string `json:"ends_at" required:"true" format:"date-time" desc:"End time, RFC 3339; after starts_at."`
	Resource string `json:"resource" maxLength:"200" desc:"Optional: who or what the slot is with."`
	// A practitioner's slot at a location: both or neither.
	PractitionerID string `json:"practitioner_id,omitempty" format:"uuid" desc:"Optional, with location_id: the practitioner whose slot it is. It must not overlap another slot of theirs, at any location; the slot's resource is their name."`
	LocationID     string `json:"location_id,omitempty" format:"uuid" desc:"Optional, with practitioner_id: the location of the slot, one the practitioner works at."`
}

// CreateSlot adds a bookable slot. It is not offered to voice agents.
var CreateSlot = family.Add(op.Define(op.Spec[SlotInput]{
	Name:    "slot.create",
	Label:   "New slot",
	Version: 1,
	Logic:   createSlotOp{},
	Say: op.Phrases{
		Confirmed: "The slot is created.",
		Rejected: map[string]string{
			SlotOverlaps:              "The practitioner already has a slot at that time; nothing was created.",
			PractitionerNotFound:      "The practitioner does not exist; nothing was created.",
			PractitionerNotAtLocation: "The practitioner does not work at that location; nothing was created.",
			"":                        "The slot was not created.",
		},
		Pending: "The slot is NOT confirmed yet; its result is unknown.",
	},
}))

// createSlotOp is the logic of CreateSlot.
type createSlotOp struct{}

func (createSlotOp) Normalize(in *SlotInput) error {
	if err := op.First(op.Time("starts_at", &in.StartsAt), op.Time("ends_at", &in.EndsAt),
		op.Text("resource", &in.Resource, 200, false), owner(&in.PractitionerID, &in.LocationID, &in.Resource)); err != nil {
		return err
	}
	if !mustTime(in.EndsAt).After(mustTime(in.StartsAt)) {
		return fault.Field("ends_at", "must be after starts_at")
	}
	return nil
}

func (createSlotOp) Execute(ctx context.Context, tx *db.Tx, x idem.Exec, in SlotInput) (idem.Result, error) {
	if in.PractitionerID != "" {
		return createPractitionerSlot(ctx, tx, x, in)
	}
	s, err := tx.CreateSlot(ctx, db.NewSlot{
		TenantID: x.TenantID, StartsAt: mustTime(in.StartsAt), EndsAt: mustTime(in.EndsAt), Resource: in.Resource,
	})
	if err != nil {
		return idem.Result{}, err
	}
	return op.Confirm(http.StatusCreated, s.ID.String(), wire.FromSlot(s))
}

// createPractitionerSlot creates a slot of a practitioner at a location
// unless it overlaps one of theirs, at any location.
func createPractitionerSlot(ctx context.Context, tx *db.Tx, x idem.Exec, in SlotInput) (idem.Result, error) {
	p, _, rejected, err := practitionerAt(ctx, tx, x.TenantID, in.PractitionerID, in.LocationID)
	if err != nil || rejected != nil {
		return deref(rejected), err
	}
	got, err := placePractitionerSlots(ctx, tx, p, []db.SlotTime{{StartsAt: mustTime(in.StartsAt), EndsAt: mustTime(in.EndsAt)}})
	if err != nil {
		return idem.Result{}, err
	}
	if len(got.created) == 0 {
		ids := make([]string, len(got.overlapped))
		for i, o := range got.overlapped {
			ids[i] = o.ID.String()
		}
		return op.Reject(SlotOverlaps, map[string]any{"practitioner_id": in.PractitionerID, "slot_ids": ids})
	}
	return op.Confirm(http.StatusCreated, got.created[0].ID.String(), wire.FromSlot(got.created[0]))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic("booking: unnormalised time " + s)
	}
	return t
}

// slotWhen says when a slot starts as its callers say it (the when of
// list_appointments), for messages to the customer: on the tenant's clock
// in the slot's location's timezone, or the tenant's for a slot of the
// single calendar. ErrNotFound when the tenant has no such slot.
func slotWhen(ctx context.Context, tx *db.Tx, tenant, slot uuid.UUID) (string, error) {
	clock, _, err := tx.TenantClock(ctx, tenant)
	if err != nil {
		return "", err
	}
	place, err := tx.SlotPlace(ctx, tenant, slot)
	if err != nil {
		return "", err
	}
	return clock.In(place.Timezone).Spoken(place.StartsAt, time.Now()), nil
}
