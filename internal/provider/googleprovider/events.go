package googleprovider

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	gcal "google.golang.org/api/calendar/v3"
	"google.golang.org/api/googleapi"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// CalendarNotFound: the practitioner's calendar does not exist or is not
// shared with the service account.
const CalendarNotFound = "CALENDAR_NOT_FOUND"

// validID is what Google accepts as an event id: base32hex characters
// (a-v, 0-9), 5 to 1024 of them.
func validID(id string) bool {
	if len(id) < 5 || len(id) > 1024 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < 'a' || c > 'v') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

var base32hex = base32.HexEncoding.WithPadding(base32.NoPadding)

// EventID is the event id of a step's key: the key itself when Google
// accepts it, a UUID's 32 hex digits, or else the base32hex of its SHA-256
// (52 characters). The same key always gives the same id.
func EventID(key string) string {
	if validID(key) {
		return key
	}
	if u, err := uuid.Parse(key); err == nil && len(key) == 36 {
		return strings.ReplaceAll(u.String(), "-", "")
	}
	sum := sha256.Sum256([]byte(key))
	return strings.ToLower(base32hex.EncodeToString(sum[:]))
}

// Create inserts the event with the id of the step's key. A 409 means the
// id is taken: the event is read, and it is this write's only if it
// carries this write's marks.
func (c *Calendar) Create(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	ev := event(w)
	ev.Id = EventID(w.Key)
	got, err := c.svc.Events.Insert(cal, ev).SendUpdates("none").Context(ctx).Do()
	if err == nil {
		return fromGoogle(cal, got), nil
	}
	if apiStatus(err) != http.StatusConflict {
		return calendar.Event{}, classify(err, "create the event", CalendarNotFound)
	}
	// Taken: this write's own event (a re-send), or another's.
	found, err := c.Event(ctx, cal, ev.Id)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		return calendar.Event{}, fmt.Errorf("%w: google answered 409 for event %s but does not show it", provider.ErrAmbiguous, ev.Id)
	case err != nil:
		return calendar.Event{}, fmt.Errorf("%w: event %s exists and cannot be read: %w", provider.ErrAmbiguous, ev.Id, err)
	case !found.Marks.Same(w.Marks()):
		return calendar.Event{}, fmt.Errorf("%w: event %s belongs to another write", provider.ErrKeyConflict, ev.Id)
	}
	return found, nil
}

// Move patches the event's time under the etag oncecall read, adding the
// step's key to the event's moves. An event changed since (412, or another
// etag before sending) is refused EVENT_CHANGED unless the change is this
// very move.
func (c *Calendar) Move(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal, id := p.Practitioner.CalendarID, p.Event.ID
	now, err := c.current(ctx, cal, id)
	if err != nil {
		return calendar.Event{}, err
	}
	if moved(now, w) {
		return now, nil
	}
	etag := p.Event.ETag
	if etag == "" {
		etag = now.ETag
	}
	if now.ETag != etag {
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "event " + id + " changed in the calendar since it was read"}
	}
	patch := &gcal.Event{
		Start:              when(p.Start),
		End:                when(p.End),
		ExtendedProperties: &gcal.EventExtendedProperties{Private: privateMarks(now.Marks, now.Marks.Moved(w.Key))},
	}
	call := c.svc.Events.Patch(cal, id, patch).SendUpdates("none").Context(ctx)
	call.Header().Set("If-Match", etag)
	got, err := call.Do()
	if err == nil {
		return fromGoogle(cal, got), nil
	}
	if apiStatus(err) != http.StatusPreconditionFailed {
		return calendar.Event{}, classify(err, "move the event", calendar.EventNotFound)
	}
	// Changed meanwhile: by this move (a re-send), or by someone else.
	again, rerr := c.Event(ctx, cal, id)
	switch {
	case rerr != nil:
		return calendar.Event{}, fmt.Errorf("%w: event %s changed while it was moved and cannot be read: %w", provider.ErrAmbiguous, id, rerr)
	case moved(again, w):
		return again, nil
	}
	return calendar.Event{}, &provider.Rejected{Code: calendar.EventChanged, Message: "event " + id + " changed in the calendar since it was read"}
}

// current reads the event a move acts on; a missing or cancelled one is a
// rejection.
func (c *Calendar) current(ctx context.Context, cal, id string) (calendar.Event, error) {
	now, err := c.Event(ctx, cal, id)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventNotFound, Message: "event " + id + " is not in the calendar"}
	case err != nil:
		// Nothing was sent: the move may be tried again.
		return calendar.Event{}, fmt.Errorf("%w: read event %s: %w", provider.ErrNotSent, id, err)
	case now.Status == calendar.Cancelled:
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventCancelled, Message: "event " + id + " is cancelled"}
	}
	return now, nil
}

// moved reports whether ev shows the move w made.
func moved(ev calendar.Event, w calendar.Write) bool {
	for _, k := range ev.Marks.Moves {
		if k == w.Key {
			return true
		}
	}
	return false
}

// Cancel deletes the event. Google keeps a deleted event (status
// cancelled, its id taken for good): deleting it again answers 410, which
// is the cancel done.
func (c *Calendar) Cancel(ctx context.Context, w calendar.Write) (calendar.Event, error) {
	p := w.Payload
	cal, id := p.Practitioner.CalendarID, p.Event.ID
	err := c.svc.Events.Delete(cal, id).SendUpdates("none").Context(ctx).Do()
	switch {
	case err == nil, apiStatus(err) == http.StatusGone:
		return calendar.Event{ID: id, CalendarID: cal, Status: calendar.Cancelled}, nil
	case apiStatus(err) == http.StatusNotFound:
		return calendar.Event{}, &provider.Rejected{Code: calendar.EventNotFound, Message: "event " + id + " is not in the calendar"}
	}
	return calendar.Event{}, classify(err, "cancel the event", calendar.EventNotFound)
}

// Written reads the event a write made or changed: a create's event by the
// id of its key (this write's only if it carries its marks), a move's by
// its key among the event's moves, a cancel's by the event being gone.
func (c *Calendar) Written(ctx context.Context, op calendar.Op, w calendar.Write) (calendar.Event, bool, error) {
	p := w.Payload
	cal := p.Practitioner.CalendarID
	id := EventID(w.Key)
	if op != calendar.OpCreate {
		id = p.Event.ID
	}
	ev, err := c.Event(ctx, cal, id)
	switch {
	case errors.Is(err, calendar.ErrNoEvent):
		if op == calendar.OpCancel {
			return calendar.Event{ID: id, CalendarID: cal, Status: calendar.Cancelled}, true, nil
		}
		return calendar.Event{}, false, nil
	case err != nil:
		return calendar.Event{}, false, err
	}
	switch op {
	case calendar.OpCreate:
		if !ev.Marks.Same(w.Marks()) {
			return calendar.Event{}, false, fmt.Errorf("event %s belongs to another write", id)
		}
		return ev, true, nil
	case calendar.OpMove:
		return ev, moved(ev, w), nil
	}
	return ev, ev.Status == calendar.Cancelled, nil
}

// Event reads one event. Google returns a deleted event with status
// cancelled; a missing one is ErrNoEvent.
func (c *Calendar) Event(ctx context.Context, calendarID, eventID string) (calendar.Event, error) {
	got, err := c.svc.Events.Get(calendarID, eventID).Context(ctx).Do()
	switch apiStatus(err) {
	case 0:
		if err != nil {
			return calendar.Event{}, calendar.Transport(err)
		}
		return fromGoogle(calendarID, got), nil
	case http.StatusNotFound, http.StatusGone:
		return calendar.Event{}, calendar.ErrNoEvent
	}
	return calendar.Event{}, fmt.Errorf("read event %s: %w", eventID, err)
}

// Events lists the live single events overlapping the range, oncecall's
// for one customer when q.Customer is set.
func (c *Calendar) Events(ctx context.Context, q calendar.EventQuery) ([]calendar.Event, error) {
	call := c.svc.Events.List(q.CalendarID).SingleEvents(true).OrderBy("startTime").MaxResults(250).
		TimeMin(q.From.UTC().Format(time.RFC3339)).TimeMax(q.To.UTC().Format(time.RFC3339)).Context(ctx)
	if q.Customer != "" {
		call = call.PrivateExtendedProperty(calendar.MarkCustomer + "=" + q.Customer)
	}
	var out []calendar.Event
	err := call.Pages(ctx, func(page *gcal.Events) error {
		for _, e := range page.Items {
			if ev := fromGoogle(q.CalendarID, e); ev.Status != calendar.Cancelled && !ev.Start.IsZero() {
				out = append(out, ev)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", calendar.Transport(err))
	}
	return out, nil
}

// Availability asks freebusy.query for the calendar's busy times.
func (c *Calendar) Availability(ctx context.Context, calendarID string, from, to time.Time) (calendar.Availability, error) {
	res, err := c.svc.Freebusy.Query(&gcal.FreeBusyRequest{
		TimeMin: from.UTC().Format(time.RFC3339), TimeMax: to.UTC().Format(time.RFC3339), TimeZone: "UTC",
		Items: []*gcal.FreeBusyRequestItem{{Id: calendarID}},
	}).Context(ctx).Do()
	if err != nil {
		return calendar.Availability{}, fmt.Errorf("freebusy: %w", calendar.Transport(err))
	}
	fb, ok := res.Calendars[calendarID]
	if !ok {
		return calendar.Availability{}, errors.New("freebusy: google answered without the calendar")
	}
	if len(fb.Errors) > 0 {
		return calendar.Availability{}, fmt.Errorf("freebusy: google could not read the calendar (%s)", fb.Errors[0].Reason)
	}
	var a calendar.Availability
	for _, b := range fb.Busy {
		start, err1 := time.Parse(time.RFC3339, b.Start)
		end, err2 := time.Parse(time.RFC3339, b.End)
		if err1 != nil || err2 != nil {
			return calendar.Availability{}, errors.New("freebusy: google answered a time that cannot be read")
		}
		a.Busy = append(a.Busy, calendar.Span{Start: start.UTC(), End: end.UTC()})
	}
	return a, nil
}

// event is the Google event a create sends: what a person reading the
// calendar needs, and oncecall's marks as private extended properties.
func event(w calendar.Write) *gcal.Event {
	p := w.Payload
	ev := &gcal.Event{
		Summary:            p.Title(),
		Description:        p.Notes(),
		Start:              when(p.Start),
		End:                when(p.End),
		ExtendedProperties: &gcal.EventExtendedProperties{Private: privateMarks(w.Marks(), nil)},
	}
	if p.Location != nil {
		ev.Location = strings.TrimSpace(p.Location.Name + " " + p.Location.Address)
	}
	return ev
}

func when(w calendar.When) *gcal.EventDateTime {
	return &gcal.EventDateTime{DateTime: w.UTC.UTC().Format(time.RFC3339), TimeZone: w.Zone}
}

func privateMarks(m calendar.Marks, moves []string) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{
		calendar.MarkKey: m.Key, calendar.MarkTenant: m.Tenant, calendar.MarkAction: m.Action,
		calendar.MarkStep: m.Step, calendar.MarkCustomer: m.Customer, calendar.MarkMoves: strings.Join(moves, " "),
	} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func fromGoogle(cal string, e *gcal.Event) calendar.Event {
	ev := calendar.Event{ID: e.Id, CalendarID: cal, ETag: e.Etag, Title: e.Summary, Status: calendar.Confirmed}
	switch e.Status {
	case "cancelled":
		ev.Status = calendar.Cancelled
	case "tentative":
		ev.Status = calendar.Tentative
	}
	ev.Start, ev.End = instant(e.Start), instant(e.End)
	if e.ExtendedProperties != nil {
		pm := e.ExtendedProperties.Private
		ev.Marks = calendar.Marks{
			Key: pm[calendar.MarkKey], Tenant: pm[calendar.MarkTenant], Action: pm[calendar.MarkAction],
			Step: pm[calendar.MarkStep], Customer: pm[calendar.MarkCustomer], Moves: strings.Fields(pm[calendar.MarkMoves]),
		}
	}
	return ev
}

// instant reads an event time; an all-day event starts at midnight UTC of
// its date (it blocks the day).
func instant(d *gcal.EventDateTime) time.Time {
	if d == nil {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, d.DateTime); err == nil {
		return t.UTC()
	}
	if t, err := time.Parse(time.DateOnly, d.Date); err == nil {
		return t
	}
	return time.Time{}
}

func apiStatus(err error) int {
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		return ge.Code
	}
	return 0
}

// classify maps a Google error of a write: Google's refusal of the request
// itself (400, 404) is a rejection; a refusal before acting (401, 403,
// 429) was not sent; a 5xx, 408 or 409 here, a timeout or a lost
// connection is ambiguous.
func classify(err error, what, notFound string) error {
	ge, ok := errors.AsType[*googleapi.Error](err)
	if !ok {
		return calendar.Transport(err)
	}
	reason := "invalid"
	if len(ge.Errors) > 0 && ge.Errors[0].Reason != "" {
		reason = ge.Errors[0].Reason
	}
	code := "GOOGLE_" + strings.ToUpper(reason)
	if ge.Code == http.StatusNotFound {
		code = notFound
	}
	if ge.Code == http.StatusConflict {
		return fmt.Errorf("%w: %s: google answered 409 (%s)", provider.ErrAmbiguous, what, reason)
	}
	return calendar.Status(ge.Code, "google ("+what+", "+reason+")", &provider.Rejected{Code: code, Message: what + ": google refused it (" + reason + ")"})
}
