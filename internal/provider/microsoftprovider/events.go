package microsoftprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// event is an event as Graph reads and writes it.
type event struct {
	ETag          string            `json:"@odata.etag,omitempty"`
	ID            string            `json:"id,omitempty"`
	Subject       string            `json:"subject,omitempty"`
	Body          *itemBody         `json:"body,omitempty"`
	Start         *dateTimeTimeZone `json:"start,omitempty"`
	End           *dateTimeTimeZone `json:"end,omitempty"`
	Location      *location         `json:"location,omitempty"`
	ShowAs        string            `json:"showAs,omitempty"`
	IsCancelled   bool              `json:"isCancelled,omitempty"`
	TransactionID string            `json:"transactionId,omitempty"`
	Properties    []property        `json:"singleValueExtendedProperties,omitempty"`
}

type itemBody struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

type dateTimeTimeZone struct {
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

type location struct {
	DisplayName string `json:"displayName"`
}

type property struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// propID is the extended property id of a mark.
func propID(mark string) string { return "String " + PropertySet + " Name " + mark }

var allMarks = []string{calendar.MarkKey, calendar.MarkTenant, calendar.MarkAction, calendar.MarkStep, calendar.MarkCustomer, calendar.MarkMoves}

// expand asks Graph to return oncecall's marks with an event.
var expand = func() string {
	ids := make([]string, len(allMarks))
	for i, m := range allMarks {
		ids[i] = "id eq '" + propID(m) + "'"
	}
	return "singleValueExtendedProperties($filter=" + strings.Join(ids, " or ") + ")"
}()

func properties(m calendar.Marks, moves []string) []property {
	var out []property
	for _, p := range []struct{ mark, value string }{
		{calendar.MarkKey, m.Key}, {calendar.MarkTenant, m.Tenant}, {calendar.MarkAction, m.Action},
		{calendar.MarkStep, m.Step}, {calendar.MarkCustomer, m.Customer}, {calendar.MarkMoves, strings.Join(moves, " ")},
	} {
		if p.value != "" {
			out = append(out, property{ID: propID(p.mark), Value: p.value})
		}
	}
	return out
}

const wallClock = "2006-01-02T15:04:05"

func utc(t time.Time) *dateTimeTimeZone {
	return &dateTimeTimeZone{DateTime: t.UTC().Format(wallClock), TimeZone: "UTC"}
}

// instant reads a Graph time (asked for in UTC).
func instant(d *dateTimeTimeZone) time.Time {
	if d == nil {
		return time.Time{}
	}
	zone := time.UTC
	if d.TimeZone != "" && d.TimeZone != "UTC" {
		if z, err := time.LoadLocation(d.TimeZone); err == nil {
			zone = z
		}
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05.9999999", strings.TrimSuffix(d.DateTime, "Z"), zone)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func fromGraph(cal string, e event) calendar.Event {
	ev := calendar.Event{ID: e.ID, CalendarID: cal, ETag: e.ETag, Title: e.Subject, Status: calendar.Confirmed,
		Span: calendar.Span{Start: instant(e.Start), End: instant(e.End)}}
	switch {
	case e.IsCancelled:
		ev.Status = calendar.Cancelled
	case e.ShowAs == "tentative":
		ev.Status = calendar.Tentative
	}
	get := func(mark string) string {
		for _, p := range e.Properties {
			if strings.EqualFold(p.ID, propID(mark)) {
				return p.Value
			}
		}
		return ""
	}
	ev.Marks = calendar.Marks{Key: get(calendar.MarkKey), Tenant: get(calendar.MarkTenant), Action: get(calendar.MarkAction),
		Step: get(calendar.MarkStep), Customer: get(calendar.MarkCustomer), Moves: strings.Fields(get(calendar.MarkMoves))}
	return ev
}

// Create posts the event with transactionId = the step's key (a repeated
// post answers the first event) and the marks as extended properties.
func (c *Calendar) Create(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	in := event{
		Subject: p.Title(), Body: &itemBody{ContentType: "text", Content: p.Notes()},
		Start: utc(p.Start.UTC), End: utc(p.End.UTC), ShowAs: "busy", TransactionID: w.Key,
		Properties: properties(w.Marks(), nil),
	}
	if p.Location != nil {
		in.Location = &location{DisplayName: strings.TrimSpace(p.Location.Name + " " + p.Location.Address)}
	}
	var out event
	if err := c.call(ctx, http.MethodPost, c.user(cal)+"/calendar/events", nil, in, &out); err != nil {
		return calendar.Event{}, classify(err, "create the event", CalendarNotFound)
	}
	if out.ID == "" {
		return calendar.Event{}, fmt.Errorf("%w: graph answered a create without an event id", provider.ErrAmbiguous)
	}
	ev := fromGraph(cal, out)
	ev.Marks = w.Marks() // a create's answer carries no extended properties
	return ev, nil
}

// Move updates the event's time under the etag oncecall read, adding the
// step's key to the event's moves; see googleprovider's Move for the rules.
func (c *Calendar) Move(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal, id := p.Practitioner.CalendarID, p.Event.ID
	now, err := c.current(ctx, cal, id)
	if err != nil {
		return calendar.Event{}, err
	}
	if slices.Contains(now.Marks.Moves, w.Key) {
		return now, nil
	}
	etag := cmpOr(p.Event.ETag, now.ETag)
	if now.ETag != etag {
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "event changed in the calendar since it was read"}
	}
	patch := event{Start: utc(p.Start.UTC), End: utc(p.End.UTC),
		Properties: []property{{ID: propID(calendar.MarkMoves), Value: strings.Join(now.Marks.Moved(w.Key), " ")}}}
	var out event
	err = c.call(ctx, http.MethodPatch, c.eventURL(cal, id), http.Header{"If-Match": {etag}}, patch, &out)
	if err == nil {
		ev := fromGraph(cal, out)
		ev.Marks = now.Marks
		ev.Marks.Moves = now.Marks.Moved(w.Key)
		return ev, nil
	}
	if status(err) != http.StatusPreconditionFailed {
		return calendar.Event{}, classify(err, "move the event", calendar.EventNotFound)
	}
	again, rerr := c.Event(ctx, cal, id)
	switch {
	case rerr != nil:
		return calendar.Event{}, fmt.Errorf("%w: the event changed while it was moved and cannot be read: %w", provider.ErrAmbiguous, rerr)
	case slices.Contains(again.Marks.Moves, w.Key):
		return again, nil
	}
	return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "event changed in the calendar since it was read"}
}

func (c *Calendar) current(ctx context.Context, cal, id string) (calendar.Event, error) {
	now, err := c.Event(ctx, cal, id)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventNotFound, Message: "the event is not in the calendar"}
	case err != nil:
		return calendar.Event{}, fmt.Errorf("%w: read the event: %w", provider.ErrNotSent, err)
	case now.Status == calendar.Cancelled:
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventCancelled, Message: "the event is cancelled"}
	}
	return now, nil
}

// Cancel deletes the event. Graph keeps nothing of a deleted event (404
// after), so a 404 is the cancel done: the event is not in the calendar.
func (c *Calendar) Cancel(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal, id := p.Practitioner.CalendarID, p.Event.ID
	err := c.call(ctx, http.MethodDelete, c.eventURL(cal, id), nil, nil, nil)
	if err != nil && status(err) != http.StatusNotFound {
		return calendar.Event{}, classify(err, "cancel the event", calendar.EventNotFound)
	}
	return calendar.Event{ID: id, CalendarID: cal, Status: calendar.Cancelled}, nil
}

// Written finds what a write did: a create's event by its key ($filter on
// the extended property), a move's by its key among the event's moves, a
// cancel's by the event being gone.
func (c *Calendar) Written(ctx context.Context, op calendar.Op, w calendar.Write) (calendar.Event, bool, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	if op == calendar.OpCreate {
		evs, err := c.byMark(ctx, cal, calendar.MarkKey, w.Key)
		if err != nil || len(evs) == 0 {
			return calendar.Event{}, false, err
		}
		ev := evs[0]
		if !ev.Marks.Same(w.Marks()) {
			return calendar.Event{}, false, errors.New("the event with this key belongs to another write")
		}
		return ev, true, nil
	}
	ev, err := c.Event(ctx, cal, p.Event.ID)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		if op == calendar.OpCancel {
			return calendar.Event{ID: p.Event.ID, CalendarID: cal, Status: calendar.Cancelled}, true, nil
		}
		return calendar.Event{}, false, nil
	case err != nil:
		return calendar.Event{}, false, err
	case op == calendar.OpMove:
		return ev, slices.Contains(ev.Marks.Moves, w.Key), nil
	}
	return ev, ev.Status == calendar.Cancelled, nil
}

// byMark lists the events carrying a mark's value.
func (c *Calendar) byMark(ctx context.Context, cal, mark, value string) ([]calendar.Event, error) {
	q := url.Values{
		"$filter": {"singleValueExtendedProperties/Any(ep: ep/id eq '" + propID(mark) + "' and ep/value eq '" + strings.ReplaceAll(value, "'", "''") + "')"},
		"$expand": {expand},
		"$top":    {"100"},
	}
	return c.pages(ctx, cal, c.user(cal)+"/calendar/events?"+q.Encode())
}

// pages reads every page of an event listing.
func (c *Calendar) pages(ctx context.Context, cal, u string) ([]calendar.Event, error) {
	var out []calendar.Event
	for u != "" {
		var page struct {
			Value    []event `json:"value"`
			NextLink string  `json:"@odata.nextLink"`
		}
		if err := c.call(ctx, http.MethodGet, u, nil, nil, &page); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		for _, e := range page.Value {
			out = append(out, fromGraph(cal, e))
		}
		u = page.NextLink
	}
	return out, nil
}

// Event reads one event; ErrNoEvent when Graph has none by that id.
func (c *Calendar) Event(ctx context.Context, calendarID, eventID string) (calendar.Event, error) {
	var out event
	err := c.call(ctx, http.MethodGet, c.eventURL(calendarID, eventID)+"?"+url.Values{"$expand": {expand}}.Encode(), nil, nil, &out)
	switch {
	case status(err) == http.StatusNotFound:
		return calendar.Event{}, calendar.ErrNoEvent
	case err != nil:
		return calendar.Event{}, fmt.Errorf("read the event: %w", err)
	}
	return fromGraph(calendarID, out), nil
}

// Events lists the calendar's events overlapping the range (the calendar
// view), or oncecall's events for one customer in it.
func (c *Calendar) Events(ctx context.Context, q calendar.EventQuery) ([]calendar.Event, error) {
	var evs []calendar.Event
	var err error
	if q.Customer != "" {
		evs, err = c.byMark(ctx, q.CalendarID, calendar.MarkCustomer, q.Customer)
	} else {
		v := url.Values{
			"startDateTime": {q.From.UTC().Format(time.RFC3339)}, "endDateTime": {q.To.UTC().Format(time.RFC3339)},
			"$expand": {expand}, "$top": {"100"},
		}
		evs, err = c.pages(ctx, q.CalendarID, c.user(q.CalendarID)+"/calendar/calendarView?"+v.Encode())
	}
	if err != nil {
		return nil, err
	}
	span := calendar.Span{Start: q.From, End: q.To}
	out := evs[:0]
	for _, ev := range evs {
		if ev.Status != calendar.Cancelled && ev.Span.Overlaps(span) {
			out = append(out, ev)
		}
	}
	slices.SortFunc(out, func(a, b calendar.Event) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// Availability asks getSchedule for the mailbox's busy times (every item
// not shown as free).
func (c *Calendar) Availability(ctx context.Context, calendarID string, from, to time.Time) (calendar.Availability, error) {
	in := map[string]any{"schedules": []string{calendarID}, "startTime": utc(from), "endTime": utc(to), "availabilityViewInterval": 15}
	var out struct {
		Value []struct {
			ScheduleID    string `json:"scheduleId"`
			ScheduleItems []struct {
				Status string            `json:"status"`
				Start  *dateTimeTimeZone `json:"start"`
				End    *dateTimeTimeZone `json:"end"`
			} `json:"scheduleItems"`
			Error *struct {
				Message      string `json:"message"`
				ResponseCode string `json:"responseCode"`
			} `json:"error"`
		} `json:"value"`
	}
	if err := c.call(ctx, http.MethodPost, c.user(calendarID)+"/calendar/getSchedule", nil, in, &out); err != nil {
		return calendar.Availability{}, fmt.Errorf("getSchedule: %w", err)
	}
	if len(out.Value) != 1 {
		return calendar.Availability{}, fmt.Errorf("getSchedule answered %d schedules for one", len(out.Value))
	}
	s := out.Value[0]
	if s.Error != nil {
		return calendar.Availability{}, fmt.Errorf("getSchedule could not read the calendar (%s)", s.Error.ResponseCode)
	}
	var busy []calendar.Span
	for _, it := range s.ScheduleItems {
		if it.Status == "free" {
			continue
		}
		busy = append(busy, calendar.Span{Start: instant(it.Start), End: instant(it.End)})
	}
	return calendar.Availability{Busy: merge(busy)}, nil
}

func merge(spans []calendar.Span) []calendar.Span {
	slices.SortFunc(spans, func(a, b calendar.Span) int { return a.Start.Compare(b.Start) })
	var out []calendar.Span
	for _, s := range spans {
		if n := len(out); n > 0 && !s.Start.After(out[n-1].End) {
			if s.End.After(out[n-1].End) {
				out[n-1].End = s.End
			}
			continue
		}
		out = append(out, s)
	}
	return out
}
