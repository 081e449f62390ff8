package dashatool

import (
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// The read-only tools. They claim nothing: asking twice is harmless.
const (
	CheckActionStatus  = "check_action_status"
	FindAvailableSlots = "find_available_slots"
)

// StatusInput is the arguments of check_action_status.
type StatusInput struct {
	ActionID string `json:"action_id" required:"true" format:"uuid" desc:"The action_id from an earlier answer, exactly as given."`
}

// Normalize validates the input.
func (in *StatusInput) Normalize() error { return op.ID("action_id", &in.ActionID) }

// SlotsInput is the arguments of find_available_slots.
type SlotsInput struct {
	From  *string `json:"from" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$" desc:"Optional: list slots starting at or after this time: a day such as 2030-01-02 (from the start of that day in the business's timezone) or an RFC 3339 time such as 2030-01-02T09:00:00Z (default: now)."`
	Limit *int    `json:"limit" minimum:"1" maximum:"20" desc:"Optional: how many slots to list, 1 to 20 (default 5)."`
}

// DefaultSlots is how many slots find_available_slots lists by default.
const DefaultSlots = 5

// fromMessage says what from accepts.
const fromMessage = "must be a day such as 2030-01-02 or an RFC 3339 time such as 2030-01-02T15:04:05Z"

// Normalize validates the input; a time From is rewritten in UTC, a day
// is kept as it is (Window reads it in the tenant's timezone).
func (in *SlotsInput) Normalize() error {
	if in.From != nil {
		*in.From = strings.TrimSpace(*in.From)
		if *in.From == "" {
			return fault.Field("from", fromMessage)
		}
		if d, err := time.Parse(time.DateOnly, *in.From); err == nil && d.Format(time.DateOnly) == *in.From {
			// a plain day
		} else if err := op.Time("from", in.From); err != nil {
			return fault.Field("from", fromMessage)
		}
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > 20) {
		return fault.Field("limit", "must be an integer from 1 to 20")
	}
	return nil
}

// Window returns the first start time and the number of slots to list; a
// day is its start in loc, the tenant's timezone.
func (in SlotsInput) Window(now time.Time, loc *time.Location) (time.Time, int) {
	from, n := now, DefaultSlots
	if in.From != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.From)
		if err != nil {
			t, err = time.ParseInLocation(time.DateOnly, *in.From, loc)
		}
		if err == nil && t.After(now) {
			from = t
		}
	}
	if in.Limit != nil {
		n = *in.Limit
	}
	return from, n
}

// SlotsSay guides the model through a list of free slots.
func SlotsSay(found int) string {
	if found == 0 {
		return "There are no free slots from that time. Do not offer any time; ask the caller whether a later date would suit them and look again."
	}
	return "These are the free slots. Say each by its when, the business's local time (starts_at_local is the same time " +
		"with its UTC offset; starts_at is UTC). Offer them to the caller; to book one, call book_appointment with its id as " +
		"slot_id, or reschedule_appointment to move an existing appointment to it. Never invent a slot id."
}

// builtins are the read-only tools with their descriptions and inputs.
var builtins = []struct {
	name, description string
	input             any
}{
	{CheckActionStatus, "Look up the current outcome of an earlier request by the action_id its answer gave: call it when an answer " +
		"was pending or you are unsure whether something happened. Only outcome confirmed means it happened; follow the say of the answer.",
		StatusInput{}},
	{FindAvailableSlots, "List free appointment slots with their ids and start and end times, in the business's local time as well. " +
		"Call it before book_appointment or reschedule_appointment and offer the caller one of the times it returns.",
		SlotsInput{}},
	{FindCustomer, "Find the caller's customer record by phone number: without arguments it looks up the number they are calling " +
		"from. Call it at the start of a call to greet a returning caller, before acting for them. It gives their customer_id and " +
		"name, never their contact details.",
		FindCustomerInput{}},
	{GetCustomer, "Read a customer's record by customer_id: name, loyalty points balance, and whether a phone number and an " +
		"e-mail address are on file.",
		CustomerInput{}},
	{ListAppointments, "List a customer's upcoming appointments (soonest first) with their ids and local times. Call it when the " +
		"caller asks about, wants to move or wants to cancel an appointment, to learn its appointment_id.",
		AppointmentsInput{}},
	{ListPaymentIntents, "List a customer's approved payments that are not charged yet (payment intents), with their amounts as " +
		"they are said. Call it before charge_payment to learn the payment_intent_id of the payment the caller wants to make.",
		IntentsInput{}},
	{ListServices, "List the services the business offers, with their duration and price as they are said: call it when the " +
		"caller asks what they can book or what something costs, to learn the service_id find_available_slots takes.",
		ServicesInput{}},
	{ListPractitioners, "List the practitioners (who sees customers), with the services they perform and the locations they " +
		"work at: call it when the caller asks for someone by name or asks who does a service, to learn their practitioner_id.",
		PractitionersInput{}},
}
