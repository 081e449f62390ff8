package calendar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// PayloadVersion is the version of the calendar payload this package reads.
const PayloadVersion = 2

// Payload is a calendar step's payload, version 2: everything a calendar
// needs to make the write, so no adapter (nor a bridge speaking the
// provider protocol) has to call back into oncecall.
type Payload struct {
	Version  int    `json:"version"`
	TenantID string `json:"tenant_id"`
	ActionID string `json:"action_id"`
	// StepKey is the step's provider key; when set it must be the key the
	// step is sent with.
	StepKey string `json:"step_key,omitempty"`
	Start   When   `json:"start"`
	End     When   `json:"end"`
	// SlotID is oncecall's id of the slot the time is, for reference (a
	// bridge needs nothing of it to make the write).
	SlotID string `json:"slot_id,omitempty"`
	// Practitioner's CalendarID names the provider's calendar: a Google
	// calendar id, a Microsoft 365 mailbox (user id or principal name), a
	// Cal.com event type id.
	Practitioner Practitioner `json:"practitioner"`
	Location     *Location    `json:"location,omitempty"`
	Service      Service      `json:"service"`
	Customer     Contact      `json:"customer"`
	// Event is the event a move or a cancel acts on.
	Event *EventRef `json:"event,omitempty"`
}

// When is an instant, in UTC and as the location's wall clock.
type When struct {
	UTC time.Time `json:"utc"`
	// Local is the wall-clock time in Zone, "2006-01-02T15:04:05".
	Local string `json:"local"`
	// Zone is an IANA zone name, e.g. "Europe/Madrid".
	Zone string `json:"zone"`
}

// LocalLayout is the layout of When.Local.
const LocalLayout = "2006-01-02T15:04:05"

// At returns the When of t in zone.
func At(t time.Time, zone *time.Location) When {
	return When{UTC: t.UTC(), Local: t.In(zone).Format(LocalLayout), Zone: zone.String()}
}

// Practitioner is who the appointment is with.
type Practitioner struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CalendarID string `json:"calendar_id"`
}

// Location is where it is.
type Location struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
}

// Service is what it is for.
type Service struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
}

// Contact is the customer.
type Contact struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Phone string `json:"phone,omitempty"`
	Email string `json:"email,omitempty"`
}

// EventRef names an existing event.
type EventRef struct {
	ID string `json:"id"`
	// ETag is the version oncecall read; a move is refused (EVENT_CHANGED)
	// when the event changed since. Empty: the version read at the move.
	ETag string `json:"etag,omitempty"`
}

// Span is the payload's time as a span.
func (p Payload) Span() Span { return Span{Start: p.Start.UTC, End: p.End.UTC} }

// Title is the event's title: the service and the customer's name, as the
// business reads its calendar.
func (p Payload) Title() string {
	if p.Service.Name == "" {
		return p.Customer.Name
	}
	return p.Service.Name + " — " + p.Customer.Name
}

// Notes is the event's description: who booked and how to reach them.
func (p Payload) Notes() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Booked by phone through oncecall.\nCustomer: %s", p.Customer.Name)
	for _, f := range []struct{ label, v string }{{"Phone", p.Customer.Phone}, {"E-mail", p.Customer.Email}, {"With", p.Practitioner.Name}} {
		if f.v != "" {
			fmt.Fprintf(&b, "\n%s: %s", f.label, f.v)
		}
	}
	return b.String()
}

// ParsePayload decodes and checks a version 2 payload for op. Its error
// says what is wrong without repeating the payload's values.
func ParsePayload(raw []byte, op Op) (Payload, error) {
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Payload{}, fmt.Errorf("the calendar payload cannot be read: %w", jsonProblem(err))
	}
	if p.Version != PayloadVersion {
		return Payload{}, fmt.Errorf("the calendar payload is version %d; version %d is required", p.Version, PayloadVersion)
	}
	return p, p.check(op)
}

func (p Payload) check(op Op) error {
	switch {
	case p.TenantID == "":
		return fmt.Errorf("tenant_id is required")
	case p.ActionID == "":
		return fmt.Errorf("action_id is required")
	case p.Practitioner.CalendarID == "":
		return fmt.Errorf("practitioner.calendar_id is required")
	case (op == OpMove || op == OpCancel) && (p.Event == nil || p.Event.ID == ""):
		return fmt.Errorf("event.id is required to %s an event", op)
	}
	if op == OpCancel && p.Start.UTC.IsZero() {
		return nil // a cancel needs no time
	}
	if err := p.Start.check("start"); err != nil {
		return err
	}
	if err := p.End.check("end"); err != nil {
		return err
	}
	if !p.End.UTC.After(p.Start.UTC) {
		return fmt.Errorf("end must be after start")
	}
	if op == OpCreate && p.Customer.ID == "" {
		return fmt.Errorf("customer.id is required")
	}
	return nil
}

// check requires the wall clock and the zone to name the UTC instant.
func (w When) check(name string) error {
	if w.UTC.IsZero() {
		return fmt.Errorf("%s.utc is required", name)
	}
	zone, err := time.LoadLocation(w.Zone)
	if err != nil || w.Zone == "" {
		return fmt.Errorf("%s.zone must be an IANA time zone", name)
	}
	local, err := time.ParseInLocation(LocalLayout, w.Local, zone)
	if err != nil {
		return fmt.Errorf("%s.local must be a wall-clock time like 2030-01-02T09:30:00", name)
	}
	if !local.Equal(w.UTC) {
		return fmt.Errorf("%s.local in %s is not %s.utc", name, w.Zone, name)
	}
	return nil
}

// jsonProblem keeps the kind of a decoding error without the input's text.
func jsonProblem(err error) error {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Errorf("invalid JSON at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Errorf("field %s has the wrong type", e.Field)
	}
	return err
}
