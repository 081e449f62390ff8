// Package calendar is what oncecall asks of a calendar a business already
// uses (Google Calendar, Microsoft 365, Cal.com): what is free, what is
// booked, one event, and the three writes (create, move, cancel), each made
// retry-safe with the provider's own mechanism. Steps adapts a Calendar to
// provider.Provider, so the step driver and the reconciler send and settle
// calendar writes exactly as they do a charge: the step's key travels in the
// provider's mechanism, and a write whose answer was lost is found again by
// Written before anything is sent twice (docs/providers/google-calendar.md,
// microsoft-365.md, calcom.md).
package calendar

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
)

// The step operations a calendar performs: the operations of oncecall whose
// capability is the calendar.
const (
	Book       = "appointment.book"
	Reschedule = "appointment.reschedule"
	CancelOp   = "appointment.cancel"
)

// Op is the kind of write.
type Op string

// The writes.
const (
	OpCreate Op = "create"
	OpMove   Op = "move"
	OpCancel Op = "cancel"
)

// OpOf maps a step's operation to the write it is.
func OpOf(operation string) (Op, bool) {
	switch operation {
	case Book:
		return OpCreate, true
	case Reschedule:
		return OpMove, true
	case CancelOp:
		return OpCancel, true
	}
	return "", false
}

// Rejection codes shared by the adapters.
const (
	// SlotUnavailable: the calendar refused the time (taken, outside the
	// host's hours).
	SlotUnavailable = "SLOT_UNAVAILABLE"
	// EventNotFound: the event to move or cancel does not exist.
	EventNotFound = "EVENT_NOT_FOUND"
	// EventCancelled: the event was cancelled in the calendar (a booking
	// whose event someone deleted since, or a move of a cancelled one).
	EventCancelled = "EVENT_CANCELLED"
	// EventChanged: someone changed the event in the calendar after oncecall
	// read it; the move was not made, so their change is not overwritten.
	EventChanged = "EVENT_CHANGED"
	// InvalidPayload: the step's payload is not a valid calendar payload.
	InvalidPayload = "INVALID_CALENDAR_PAYLOAD"
	// UnsupportedOperation: the step is not a calendar write.
	UnsupportedOperation = "UNSUPPORTED_OPERATION"
)

// Statuses of an event, as every adapter reports them.
const (
	Confirmed = "confirmed"
	Tentative = "tentative"
	Cancelled = "cancelled"
)

// ErrNoEvent: the calendar has no such event (Event's not found).
var ErrNoEvent = errors.New("calendar: no such event")

// Span is a half-open interval [Start, End).
type Span struct {
	Start, End time.Time
}

// Overlaps reports whether s and o share an instant.
func (s Span) Overlaps(o Span) bool { return s.Start.Before(o.End) && o.Start.Before(s.End) }

// Availability is what a calendar says about a range. Calendars that know
// busy times (Google, Microsoft) fill Busy; booking systems that offer slots
// (Cal.com) fill Open and set Slots.
type Availability struct {
	// Busy are the taken times, merged and sorted.
	Busy []Span
	// Open are the bookable times the calendar offers (Slots set).
	Open []Span
	// Slots: the calendar offers slots; a time is free only if one of Open
	// covers it. Otherwise a time is free when it overlaps no Busy span (the
	// caller intersects with its own weekly schedule).
	Slots bool
}

// Free reports whether span is free by this reading.
func (a Availability) Free(span Span) bool {
	if a.Slots {
		return slices.ContainsFunc(a.Open, func(o Span) bool {
			return !o.Start.After(span.Start) && !o.End.Before(span.End)
		})
	}
	return !slices.ContainsFunc(a.Busy, span.Overlaps)
}

// Event is one event (Cal.com: booking) as a calendar holds it.
type Event struct {
	ID         string
	CalendarID string
	// ETag is the version the calendar gives the event (Google etag, Graph
	// @odata.etag); a move sends it back so a concurrent edit is detected.
	ETag   string
	Status string // Confirmed, Tentative or Cancelled
	Span
	Title string
	// The marks oncecall writes on its own events; empty on others.
	Marks Marks
	// Replaces and ReplacedBy link an event to the one it was rescheduled
	// from or to (Cal.com makes a new booking for a reschedule).
	Replaces, ReplacedBy string
}

// Marks are the ids oncecall writes on an event it makes (Google: private
// extended properties; Graph: single-value extended properties; Cal.com:
// booking metadata). They hold ids only, never customer data.
type Marks struct {
	Key, Tenant, Action, Step, Customer string
	// Moves are the keys of the moves oncecall made of the event, oldest
	// first (at most MaxMoves).
	Moves []string
}

// MaxMoves is how many move keys an event keeps.
const MaxMoves = 8

// Moved returns the moves with key added (the oldest dropped past MaxMoves).
func (m Marks) Moved(key string) []string {
	if slices.Contains(m.Moves, key) {
		return m.Moves
	}
	moves := append(slices.Clone(m.Moves), key)
	if len(moves) > MaxMoves {
		moves = moves[len(moves)-MaxMoves:]
	}
	return moves
}

// Names of the marks where a provider stores them by name.
const (
	MarkKey      = "oncecall_key"
	MarkTenant   = "oncecall_tenant"
	MarkAction   = "oncecall_action"
	MarkStep     = "oncecall_step"
	MarkCustomer = "oncecall_customer"
	MarkMoves    = "oncecall_moves"
)

// Same reports whether two writes' marks name the same write: the same key,
// tenant, action and step.
func (m Marks) Same(o Marks) bool {
	return m.Key == o.Key && m.Tenant == o.Tenant && m.Action == o.Action && m.Step == o.Step
}

// EventQuery selects events.
type EventQuery struct {
	CalendarID string
	From, To   time.Time
	// Customer, when set, keeps the events oncecall made for that customer
	// (by the mark it writes).
	Customer string
}

// Write is one calendar write: the step's key and external reference
// (action/step), and its payload.
type Write struct {
	Key, Ref string
	Payload  Payload
}

// Marks are the marks a create writes.
func (w Write) Marks() Marks {
	action, step := refParts(w.Ref)
	if w.Payload.ActionID != "" {
		action = w.Payload.ActionID
	}
	return Marks{Key: w.Key, Tenant: w.Payload.TenantID, Action: action, Step: step, Customer: w.Payload.Customer.ID}
}

func refParts(ref string) (action, step string) {
	for i := range len(ref) {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, ""
}

// Calendar is one provider's calendar. Every write's error is a
// *provider.Rejected, or wraps provider.ErrNotSent, provider.ErrAmbiguous
// or provider.ErrKeyConflict; a read's error means "not known now".
type Calendar interface {
	// Traits are what the provider promises for recovery.
	Traits() provider.Traits
	// Availability reads what is busy (or open) in a calendar over [from, to).
	Availability(ctx context.Context, calendarID string, from, to time.Time) (Availability, error)
	// Events lists the live events of a calendar overlapping the range.
	Events(ctx context.Context, q EventQuery) ([]Event, error)
	// Event reads one event; ErrNoEvent when the calendar has none by that id.
	Event(ctx context.Context, calendarID, eventID string) (Event, error)
	// Create, Move and Cancel make one write, retry-safe by the provider's
	// own mechanism; Move and Cancel act on Payload.Event.
	Create(ctx context.Context, w Write) (Event, error)
	Move(ctx context.Context, w Write) (Event, error)
	Cancel(ctx context.Context, w Write) (Event, error)
	// Written finds what a write may have done: the event it made or
	// changed, or found false when the calendar shows no trace of it (yet:
	// the driver believes a "not found" only after the provider's
	// visibility delay).
	Written(ctx context.Context, op Op, w Write) (Event, bool, error)
}

// WrittenHold is how long oncecall counts a time it wrote to a calendar as
// taken in its own records, until a read of the calendar shows the event:
// past the longest visibility delay of the adapters.
const WrittenHold = time.Minute

// Watcher is a calendar that notifies a URL of changes (Google watch
// channels, Microsoft Graph subscriptions, Cal.com webhooks): each
// notification carries secret back (a channel token, a clientState) or is
// signed with it (Cal.com), so the receiver can verify it.
type Watcher interface {
	// Watch asks for notifications of every change of each calendar.
	Watch(ctx context.Context, calendars []string, address, secret string) ([]Watched, error)
}

// Watched is one notification channel a provider made.
type Watched struct {
	// Calendar is the calendar watched; empty when one channel covers all
	// (a Cal.com webhook).
	Calendar string
	// ID is the provider's id of the channel, subscription or webhook.
	ID string
	// Expires is when the provider stops notifying (zero: never); it is
	// asked again before then.
	Expires time.Time
}
