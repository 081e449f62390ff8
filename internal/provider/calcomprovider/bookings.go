package calcomprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// eventType reads a calendar id as Cal.com's event type id.
func eventType(cal string) (int, error) {
	id, err := strconv.Atoi(cal)
	if err != nil || id <= 0 {
		return 0, &provider.Rejected{Code: calendar.InvalidPayload, Message: "a Cal.com calendar id is an event type id (a number)"}
	}
	return id, nil
}

// Create books the event type at the payload's start for the customer,
// with the step's key in the metadata. A refusal may be Cal.com refusing
// this very booking sent again: it is settled by the lookup before it is
// believed.
func (c *Calendar) Create(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	et, err := eventType(p.Practitioner.CalendarID)
	if err != nil {
		return calendar.Event{}, err
	}
	if p.Customer.Email == "" && p.Customer.Phone == "" {
		return calendar.Event{}, &provider.Rejected{Code: NoContact, Message: "cal.com books an attendee with an e-mail or a phone number"}
	}
	m := w.Marks()
	in := map[string]any{
		"start":       p.Start.UTC.UTC().Format(time.RFC3339),
		"eventTypeId": et,
		"attendee":    attendee(p),
		"metadata": map[string]string{
			calendar.MarkKey: m.Key, calendar.MarkTenant: m.Tenant, calendar.MarkAction: m.Action,
			calendar.MarkStep: m.Step, calendar.MarkCustomer: m.Customer,
		},
	}
	var out booking
	err = c.call(ctx, http.MethodPost, "/v2/bookings", BookingsVersion, nil, in, &out)
	if err == nil {
		if out.UID == "" || out.Metadata[calendar.MarkKey] != w.Key {
			return calendar.Event{}, fmt.Errorf("%w: cal.com answered a booking that is not this write's", provider.ErrAmbiguous)
		}
		return fromCalcom(p.Practitioner.CalendarID, out), nil
	}
	e, ok := errors.AsType[*apiError](err)
	if !ok {
		return calendar.Event{}, err
	}
	if e.Status == http.StatusNotFound {
		return calendar.Event{}, &provider.Rejected{Code: CalendarNotFound, Message: "cal.com has no such event type"}
	}
	if e.Status < 400 || e.Status >= 500 || calendar.Refused(e.Status) || e.Status == http.StatusRequestTimeout {
		return calendar.Event{}, calendar.Status(e.Status, "cal.com (create the booking, "+e.Code+")", nil)
	}
	// Refused: by a booking of this write made earlier, or for good.
	found, ok, ferr := c.written(ctx, w)
	switch {
	case ferr != nil:
		return calendar.Event{}, fmt.Errorf("%w: cal.com refused the booking and the lookup failed: %w", provider.ErrAmbiguous, ferr)
	case ok:
		return found, nil
	case availability(e):
		return calendar.Event{}, &provider.Rejected{Code: calendar.SlotUnavailable, Message: "cal.com: the time is not available"}
	}
	return calendar.Event{}, &provider.Rejected{Code: Refused, Message: "cal.com refused the booking (" + e.Code + ")"}
}

func attendee(p calendar.Payload) map[string]string {
	a := map[string]string{"name": p.Customer.Name, "timeZone": p.Start.Zone}
	if p.Customer.Email != "" {
		a["email"] = p.Customer.Email
	}
	if p.Customer.Phone != "" {
		a["phoneNumber"] = p.Customer.Phone
	}
	return a
}

// written finds the booking a create made: the event type's bookings
// around its start, matched by the step's key in metadata, followed to
// where it stands now when it was rescheduled since.
func (c *Calendar) written(ctx context.Context, w calendar.Write) (calendar.Event, bool, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	start := p.Start.UTC.UTC()
	bs, err := c.list(ctx, cal, start.Add(-time.Minute), start.Add(24*time.Hour))
	if err != nil {
		return calendar.Event{}, false, err
	}
	var mine []booking
	for _, b := range bs {
		if b.Metadata[calendar.MarkKey] == w.Key {
			mine = append(mine, b)
		}
	}
	if len(mine) == 0 {
		return calendar.Event{}, false, nil
	}
	// The booking itself, not a later booking a reschedule copied it to.
	i := slices.IndexFunc(mine, func(b booking) bool { return b.RescheduledFromUID == "" })
	first := mine[max(i, 0)]
	ev := fromCalcom(cal, first)
	if !ev.Marks.Same(w.Marks()) {
		return calendar.Event{}, false, errors.New("the booking with this key belongs to another write")
	}
	if first.RescheduledToUID == "" {
		return ev, true, nil
	}
	now, err := c.live(ctx, cal, first.RescheduledToUID)
	if err != nil {
		return calendar.Event{}, false, err
	}
	return now, true, nil
}

// live follows a reschedule chain from uid to the booking that stands.
func (c *Calendar) live(ctx context.Context, cal, uid string) (calendar.Event, error) {
	for range chainHops {
		ev, err := c.Event(ctx, cal, uid)
		if err != nil {
			return calendar.Event{}, err
		}
		if ev.ReplacedBy == "" {
			return ev, nil
		}
		uid = ev.ReplacedBy
	}
	return calendar.Event{}, fmt.Errorf("booking %s was rescheduled more than %d times", uid, chainHops)
}

// Move reschedules the booking: Cal.com makes a new booking (a new uid)
// and cancels the old one, linking them. The step's event is the new
// booking; it records the uid it replaced.
func (c *Calendar) Move(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal, uid := p.Practitioner.CalendarID, p.Event.ID
	old, err := c.Event(ctx, cal, uid)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventNotFound, Message: "cal.com has no booking " + uid}
	case err != nil:
		return calendar.Event{}, fmt.Errorf("%w: read booking %s: %w", provider.ErrNotSent, uid, err)
	}
	if done, ok, err := c.movedTo(ctx, cal, old, p); err != nil || ok {
		return done, err
	}
	switch {
	case old.ReplacedBy != "":
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "booking " + uid + " was rescheduled in cal.com since it was read"}
	case old.Status == calendar.Cancelled:
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventCancelled, Message: "booking " + uid + " is cancelled"}
	case p.Event.ETag != "" && old.ETag != p.Event.ETag:
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "booking " + uid + " changed in cal.com since it was read"}
	}
	var out booking
	err = c.call(ctx, http.MethodPost, "/v2/bookings/"+url.PathEscape(uid)+"/reschedule", BookingsVersion, nil,
		map[string]string{"start": p.Start.UTC.UTC().Format(time.RFC3339), "reschedulingReason": "Rescheduled by phone"}, &out)
	if err == nil {
		return fromCalcom(cal, out), nil
	}
	e, ok := errors.AsType[*apiError](err)
	if !ok || e.Status >= 500 || e.Status < 400 || calendar.Refused(e.Status) || e.Status == http.StatusRequestTimeout {
		if ok {
			return calendar.Event{}, calendar.Status(e.Status, "cal.com (reschedule, "+e.Code+")", nil)
		}
		return calendar.Event{}, err
	}
	// Refused: perhaps because this reschedule was made already.
	again, rerr := c.Event(ctx, cal, uid)
	if rerr != nil {
		return calendar.Event{}, fmt.Errorf("%w: cal.com refused the reschedule and the booking cannot be read: %w", provider.ErrAmbiguous, rerr)
	}
	if done, ok, err := c.movedTo(ctx, cal, again, p); err != nil || ok {
		return done, err
	}
	if availability(e) {
		return calendar.Event{}, &provider.Rejected{Code: calendar.SlotUnavailable, Message: "cal.com: the new time is not available"}
	}
	return calendar.Event{}, &provider.Rejected{Code: Refused, Message: "cal.com refused the reschedule (" + e.Code + ")"}
}

// movedTo reports whether old was rescheduled to the payload's start: the
// move is made, and its event is the booking that stands.
func (c *Calendar) movedTo(ctx context.Context, cal string, old calendar.Event, p calendar.Payload) (calendar.Event, bool, error) {
	if old.ReplacedBy == "" {
		return calendar.Event{}, false, nil
	}
	next, err := c.Event(ctx, cal, old.ReplacedBy)
	if err != nil {
		return calendar.Event{}, false, fmt.Errorf("%w: read booking %s: %w", provider.ErrAmbiguous, old.ReplacedBy, err)
	}
	if !next.Start.Equal(p.Start.UTC) {
		return calendar.Event{}, false, nil
	}
	return next, true, nil
}

// Cancel cancels the booking that stands for the payload's uid (following
// reschedules made since). A booking already cancelled is the cancel done.
func (c *Calendar) Cancel(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	now, err := c.live(ctx, cal, p.Event.ID)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventNotFound, Message: "cal.com has no booking " + p.Event.ID}
	case err != nil:
		return calendar.Event{}, fmt.Errorf("%w: read booking %s: %w", provider.ErrNotSent, p.Event.ID, err)
	case now.Status == calendar.Cancelled:
		return now, nil
	}
	var out booking
	err = c.call(ctx, http.MethodPost, "/v2/bookings/"+url.PathEscape(now.ID)+"/cancel", BookingsVersion, nil,
		map[string]string{"cancellationReason": "Cancelled by phone"}, &out)
	if err == nil {
		return fromCalcom(cal, out), nil
	}
	e, ok := errors.AsType[*apiError](err)
	if !ok || e.Status >= 500 || e.Status < 400 || calendar.Refused(e.Status) || e.Status == http.StatusRequestTimeout {
		if ok {
			return calendar.Event{}, calendar.Status(e.Status, "cal.com (cancel, "+e.Code+")", nil)
		}
		return calendar.Event{}, err
	}
	again, rerr := c.Event(ctx, cal, now.ID)
	switch {
	case rerr != nil:
		return calendar.Event{}, fmt.Errorf("%w: cal.com refused the cancel and the booking cannot be read: %w", provider.ErrAmbiguous, rerr)
	case again.Status == calendar.Cancelled:
		return again, nil
	}
	return calendar.Event{}, &provider.Rejected{Code: Refused, Message: "cal.com refused the cancel (" + e.Code + ")"}
}

// Written finds what a write did: a create's booking by its key, a move's
// new booking by the old one's link and the new start, a cancel by the
// standing booking being cancelled.
func (c *Calendar) Written(ctx context.Context, op calendar.Op, w calendar.Write) (calendar.Event, bool, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	if _, err := eventType(cal); err != nil {
		return calendar.Event{}, false, err
	}
	switch op {
	case calendar.OpCreate:
		return c.written(ctx, w)
	case calendar.OpMove:
		old, err := c.Event(ctx, cal, p.Event.ID)
		if errors.Is(err, calendar.ErrNoEvent) {
			return calendar.Event{}, false, nil
		}
		if err != nil {
			return calendar.Event{}, false, err
		}
		return c.movedTo(ctx, cal, old, p)
	}
	now, err := c.live(ctx, cal, p.Event.ID)
	if errors.Is(err, calendar.ErrNoEvent) {
		return calendar.Event{}, false, nil
	}
	if err != nil {
		return calendar.Event{}, false, err
	}
	return now, now.Status == calendar.Cancelled, nil
}

// Event reads one booking by its uid.
func (c *Calendar) Event(ctx context.Context, calendarID, uid string) (calendar.Event, error) {
	var out booking
	err := c.call(ctx, http.MethodGet, "/v2/bookings/"+url.PathEscape(uid), BookingsVersion, nil, nil, &out)
	switch {
	case status(err) == http.StatusNotFound:
		return calendar.Event{}, calendar.ErrNoEvent
	case err != nil:
		return calendar.Event{}, fmt.Errorf("read booking: %w", err)
	}
	return fromCalcom(calendarID, out), nil
}

// list reads the event type's bookings that start at or after from and
// end by to, every page.
func (c *Calendar) list(ctx context.Context, cal string, from, to time.Time) ([]booking, error) {
	et, err := eventType(cal)
	if err != nil {
		return nil, err
	}
	var out []booking
	for skip := 0; ; {
		q := url.Values{
			"eventTypeId": {strconv.Itoa(et)}, "afterStart": {from.UTC().Format(time.RFC3339)},
			"beforeEnd": {to.UTC().Format(time.RFC3339)}, "take": {"250"}, "skip": {strconv.Itoa(skip)},
		}
		var page []booking
		if err := c.call(ctx, http.MethodGet, "/v2/bookings", BookingsVersion, q, nil, &page); err != nil {
			return nil, fmt.Errorf("list bookings: %w", err)
		}
		out = append(out, page...)
		if len(page) < 250 {
			return out, nil
		}
		skip += len(page)
	}
}

// Events lists the live bookings overlapping the range (a day's margin
// before it catches one that starts earlier), oncecall's for one customer
// when q.Customer is set.
func (c *Calendar) Events(ctx context.Context, q calendar.EventQuery) ([]calendar.Event, error) {
	bs, err := c.list(ctx, q.CalendarID, q.From.Add(-24*time.Hour), q.To.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	span := calendar.Span{Start: q.From, End: q.To}
	var out []calendar.Event
	for _, b := range bs {
		ev := fromCalcom(q.CalendarID, b)
		if ev.Status == calendar.Cancelled || !ev.Span.Overlaps(span) || (q.Customer != "" && ev.Marks.Customer != q.Customer) {
			continue
		}
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b calendar.Event) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// Availability reads the event type's open slots over the range.
func (c *Calendar) Availability(ctx context.Context, calendarID string, from, to time.Time) (calendar.Availability, error) {
	et, err := eventType(calendarID)
	if err != nil {
		return calendar.Availability{}, err
	}
	q := url.Values{
		"eventTypeId": {strconv.Itoa(et)}, "start": {from.UTC().Format(time.RFC3339)}, "end": {to.UTC().Format(time.RFC3339)},
		"timeZone": {"UTC"}, "format": {"range"},
	}
	var days map[string][]struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}
	if err := c.call(ctx, http.MethodGet, "/v2/slots", SlotsVersion, q, nil, &days); err != nil {
		return calendar.Availability{}, fmt.Errorf("slots: %w", err)
	}
	a := calendar.Availability{Slots: true}
	for _, slots := range days {
		for _, s := range slots {
			if s.End.IsZero() {
				continue // a slot without its end cannot cover a time
			}
			a.Open = append(a.Open, calendar.Span{Start: s.Start.UTC(), End: s.End.UTC()})
		}
	}
	slices.SortFunc(a.Open, func(x, y calendar.Span) int { return x.Start.Compare(y.Start) })
	return a, nil
}
