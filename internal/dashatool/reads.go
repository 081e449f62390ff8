package dashatool

import (
	"encoding/json"
	"strings"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/op"
)

// The read-only tools that serve a returning caller: who they are and what
// they have booked. Like check_action_status they claim nothing.
const (
	FindCustomer     = "find_customer"
	GetCustomer      = "get_customer"
	ListAppointments = "list_appointments"
)

// CustomerNotFound is the reason of a read that names a customer the
// tenant does not have (the rejection code of the write operations, lower-cased).
const CustomerNotFound = "customer_not_found"

// ReadOnly reports whether a tool only reads: it claims nothing, so it
// takes no action_id and asking twice is harmless.
func ReadOnly(tool string) bool {
	switch tool {
	case CheckActionStatus, FindAvailableSlots, FindCustomer, GetCustomer, ListAppointments, ListPaymentIntents,
		ListServices, ListPractitioners:
		return true
	}
	return false
}

// FindCustomerInput is the arguments of find_customer.
type FindCustomerInput struct {
	Phone string `json:"phone" maxLength:"32" pattern:"^(\\+|[ .()-]*0[ .()-]*0)[ .()-]*[1-9]([ .()-]*[0-9]){7,14}[ .()-]*$" desc:"Optional: the phone number to look up, in international form such as +442079460958. Omit it to look up the number the caller is calling from."`
}

// Normalize validates the input; Phone is rewritten in E.164.
func (in *FindCustomerInput) Normalize() error {
	if strings.TrimSpace(in.Phone) == "" {
		in.Phone = ""
		return nil
	}
	return op.Phone("phone", &in.Phone)
}

// CustomerInput is the arguments of get_customer.
type CustomerInput struct {
	CustomerID string `json:"customer_id" required:"true" format:"uuid" desc:"The customer's id, from find_customer."`
}

// Normalize validates the input.
func (in *CustomerInput) Normalize() error { return op.ID("customer_id", &in.CustomerID) }

// AppointmentsInput is the arguments of list_appointments.
type AppointmentsInput struct {
	CustomerID string `json:"customer_id" required:"true" format:"uuid" desc:"The customer's id, from find_customer."`
	Limit      *int   `json:"limit" minimum:"1" maximum:"20" desc:"Optional: how many appointments to list, 1 to 20 (default 10)."`
}

// DefaultAppointments is how many appointments list_appointments lists by default.
const DefaultAppointments = 10

// Normalize validates the input.
func (in *AppointmentsInput) Normalize() error {
	if err := op.ID("customer_id", &in.CustomerID); err != nil {
		return err
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > 20) {
		return fault.Field("limit", "must be an integer from 1 to 20")
	}
	return nil
}

// N is how many appointments to list.
func (in AppointmentsInput) N() int {
	if in.Limit == nil {
		return DefaultAppointments
	}
	return *in.Limit
}

// CallerNumber reads the number of the other party of the call from a
// payload's endpoint field, whose shape Dasha does not document. A JSON
// string holding a phone number in international form is taken, also as a
// tel: or sip: URI whose user part is one; anything else (absent, null, an
// object, a number, other text) is ignored: ok is false.
func CallerNumber(endpoint json.RawMessage) (phone string, ok bool) {
	var s string
	if len(endpoint) == 0 || endpoint[0] != '"' || json.Unmarshal(endpoint, &s) != nil {
		return "", false
	}
	s = strings.TrimSpace(s)
	scheme, rest, uri := strings.Cut(s, ":")
	switch scheme = strings.ToLower(scheme); {
	case uri && scheme == "tel":
		s = rest
	case uri && (scheme == "sip" || scheme == "sips"):
		if s, _, uri = strings.Cut(rest, "@"); !uri {
			return "", false
		}
	case uri:
		return "", false
	}
	s, _, _ = strings.Cut(s, ";") // URI parameters
	if op.Phone("endpoint", &s) != nil {
		return "", false
	}
	return s, true
}

// CustomerView is what a voice agent learns of a customer: enough to greet
// and confirm the caller, never their contact details (only whether they
// are on file).
type CustomerView struct {
	CustomerID     string `json:"customer_id"`
	Name           string `json:"name"`
	Points         int64  `json:"points"`
	HasPhone       bool   `json:"has_phone"`
	HasEmail       bool   `json:"has_email"`
	HasExternalRef bool   `json:"has_external_ref"`
}

// ViewOf is the view of a customer record.
func ViewOf(c oncecall.Customer) CustomerView {
	return CustomerView{
		CustomerID: c.ID.String(), Name: c.Name, Points: c.Points,
		HasPhone: c.Phone != "", HasEmail: c.Email != "", HasExternalRef: c.ExternalRef != "",
	}
}

// Where find_customer's number came from.
const (
	FromArgument = "argument" // the phone argument
	FromCall     = "call"     // the payload's endpoint
)

// CustomersFound answers find_customer: the customers on file with the
// number (none or one: a number belongs to one customer of a tenant).
func CustomersFound(found []CustomerView, source string) Answer {
	if found == nil {
		found = []CustomerView{}
	}
	details, _ := json.Marshal(map[string]any{"customers": found, "phone_source": source})
	const greet = "Greet them by name and confirm they are that person before acting for them (a number can be shared); " +
		"then use customer_id in the other tools. Do not read out contact details: has_phone and has_email only say whether " +
		"they are on file."
	var say string
	switch {
	case len(found) == 0:
		say = "No customer is on file with that phone number. Ask the caller for the number they registered with and look " +
			"again, or, if they are new, offer to create a record with create_customer."
	case source == FromCall:
		say = "The number the caller is calling from is on file. " + greet
	default:
		say = "A customer is on file with that phone number. " + greet
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}

// NoCallerNumber answers find_customer without a phone argument when the
// call carried no usable number.
func NoCallerNumber() Answer {
	const message = "phone is required: this call carries no caller number to look up"
	details, _ := json.Marshal(map[string]string{"field": "phone", "message": message})
	return Answer{
		Outcome: string(oncecall.Rejected), Reason: InvalidArguments, Details: details,
		Say: "No customer was looked up: the call carries no caller number. Ask the caller for their phone number, " +
			"then call find_customer again with it as phone.",
	}
}

// CustomerAnswer answers get_customer.
func CustomerAnswer(c CustomerView) Answer {
	details, _ := json.Marshal(c)
	return Answer{
		Outcome: string(oncecall.Confirmed), Details: details,
		Say: "This is the customer's record. You may tell the caller their name and points balance; do not read out contact " +
			"details (has_phone, has_email and has_external_ref only say whether they are on file).",
	}
}

// CustomerMissing rejects a read of a customer the tenant does not have.
func CustomerMissing(id string) Answer {
	details, _ := json.Marshal(map[string]string{"customer_id": id})
	return Answer{
		Outcome: string(oncecall.Rejected), Reason: CustomerNotFound, Details: details,
		Say: "No customer with that customer_id exists. Look the caller up with find_customer and use the customer_id it " +
			"gives; never invent one.",
	}
}

// AppointmentsAnswer answers list_appointments; details holds the
// appointments with their local times.
func AppointmentsAnswer(found int, details json.RawMessage) Answer {
	say := "The customer has no upcoming appointments. Do not offer to move or cancel one; offer to book one " +
		"(find_available_slots, then book_appointment)."
	if found > 0 {
		say = "These are the customer's upcoming appointments, soonest first. Say each by its when (the local time where it takes " +
			"place; one with a practitioner names them, its location and its timezone). " +
			"Confirm with the caller which one they mean, then use its id as appointment_id in reschedule_appointment or " +
			"cancel_appointment. Never invent an appointment id."
	}
	return Answer{Outcome: string(oncecall.Confirmed), Say: say, Details: details}
}
