// Package msgraph is a stateful fake of Microsoft Graph's calendar API
// (v1.0), as far as oncecall uses it: create, get, update and delete an
// event, list events by a single-value extended property ($filter), the
// calendar view, getSchedule, and the client-credentials token endpoint. It
// follows Graph's published behaviour: a create repeated with the same
// transactionId answers 201 with the first event instead of making a
// second; an update with a stale If-Match answers 412
// ErrorIrresolvableConflict; a deleted event is gone (404
// ErrorItemNotFound). Graph documents no retention for transactionId, so
// the fake remembers one only while its event exists. It fails on request
// like Graph can (internal/sim/simkit).
package msgraph

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Event is an event as Graph writes it.
type Event struct {
	ODataEtag                     string             `json:"@odata.etag,omitempty"`
	ID                            string             `json:"id"`
	CreatedDateTime               string             `json:"createdDateTime,omitempty"`
	LastModifiedDateTime          string             `json:"lastModifiedDateTime,omitempty"`
	ChangeKey                     string             `json:"changeKey,omitempty"`
	Subject                       string             `json:"subject,omitempty"`
	Body                          *ItemBody          `json:"body,omitempty"`
	Start                         *DateTimeTimeZone  `json:"start,omitempty"`
	End                           *DateTimeTimeZone  `json:"end,omitempty"`
	Location                      *Location          `json:"location,omitempty"`
	ShowAs                        string             `json:"showAs,omitempty"`
	IsCancelled                   bool               `json:"isCancelled"`
	Type                          string             `json:"type,omitempty"`
	TransactionID                 string             `json:"transactionId,omitempty"`
	SingleValueExtendedProperties []ExtendedProperty `json:"singleValueExtendedProperties,omitempty"`
}

// ItemBody is an event's body.
type ItemBody struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

// DateTimeTimeZone is Graph's time: a wall clock and its zone.
type DateTimeTimeZone struct {
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

// Location is an event's location.
type Location struct {
	DisplayName string `json:"displayName"`
}

// ExtendedProperty is a single-value extended property.
type ExtendedProperty struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// LedgerEvent is one event of the ledger (GET /sim/ledger).
type LedgerEvent struct {
	User  string    `json:"user"`
	Event Event     `json:"event"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Posts counts the create requests that carried its transactionId.
	Posts   int  `json:"posts"`
	Deleted bool `json:"deleted,omitempty"`
	Direct  bool `json:"direct,omitempty"`
}

type stored struct {
	LedgerEvent
	created time.Time
}

// Sim is the fake.
type Sim struct {
	kit *simkit.Kit

	mu     sync.Mutex
	events map[string]map[string]*stored // user → id → live event
	txns   map[string]*stored            // user + "\x00" + transactionId → live event
	order  []*stored
	tokens map[string]bool
	// subs are the subscriptions by mailbox (lower case).
	subs map[string][]Subscription
}

// New returns a fake that fails as kit says.
func New(kit *simkit.Kit) *Sim {
	kit.Error = writeError
	return &Sim{kit: kit, events: map[string]map[string]*stored{}, txns: map[string]*stored{}, tokens: map[string]bool{},
		subs: map[string][]Subscription{}}
}

// Handler serves Graph under /v1.0, the token endpoint at
// /{tenant}/oauth2/v2.0/token, and the simulator's routes under /sim.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	const user = "/v1.0/users/{user}"
	mux.HandleFunc("POST "+user+"/calendar/events", s.authed(s.create))
	mux.HandleFunc("POST "+user+"/events", s.authed(s.create))
	mux.HandleFunc("GET "+user+"/calendar/events", s.authed(s.list))
	mux.HandleFunc("GET "+user+"/events", s.authed(s.list))
	mux.HandleFunc("GET "+user+"/calendar/calendarView", s.authed(s.view))
	mux.HandleFunc("GET "+user+"/events/{id}", s.authed(s.get))
	mux.HandleFunc("PATCH "+user+"/events/{id}", s.authed(s.update))
	mux.HandleFunc("DELETE "+user+"/events/{id}", s.authed(s.delete))
	mux.HandleFunc("POST "+user+"/calendar/getSchedule", s.authed(s.schedule))
	mux.HandleFunc("POST /v1.0/subscriptions", s.authed(s.subscribe))
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.token)
	mux.HandleFunc("GET /sim/ledger", s.ledger)
	mux.HandleFunc("POST /sim/events", s.direct)
	mux.HandleFunc("POST /sim/events/move", s.directMove)
	mux.HandleFunc("POST /sim/events/cancel", s.directCancel)
	s.kit.ControlRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "UnknownError", "no such route")
	})
	return mux
}

// writeError writes Graph's error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	if code == "SIMULATED_FAILURE" || code == "SHUTTING_DOWN" {
		code = "ServiceNotAvailable"
	}
	simkit.WriteJSON(w, status, map[string]any{"error": map[string]any{
		"code": code, "message": message,
		"innerError": map[string]string{"date": time.Now().UTC().Format("2006-01-02T15:04:05"), "request-id": randomHex(8)},
	}})
}

func notFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newID is an opaque id like Graph's: URL-safe base64, padded.
func newID() string {
	b := make([]byte, 40)
	rand.Read(b)
	return "AAMkAG" + base64.URLEncoding.EncodeToString(b)
}

const wallClock = "2006-01-02T15:04:05.0000000"

// instant reads a Graph time: a wall clock in UTC or an IANA zone.
func instant(d *DateTimeTimeZone) (time.Time, error) {
	if d == nil || d.DateTime == "" {
		return time.Time{}, fmt.Errorf("a time is missing")
	}
	zone := time.UTC
	if d.TimeZone != "" && d.TimeZone != "UTC" {
		z, err := time.LoadLocation(d.TimeZone)
		if err != nil {
			return time.Time{}, fmt.Errorf("time zone %q is not supported", d.TimeZone)
		}
		zone = z
	}
	for _, layout := range []string{"2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, strings.TrimSuffix(d.DateTime, "Z"), zone); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("the time %q cannot be read", d.DateTime)
}

func utc(t time.Time) *DateTimeTimeZone {
	return &DateTimeTimeZone{DateTime: t.UTC().Format(wallClock), TimeZone: "UTC"}
}

func stamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z") }

// version gives an event a new change key.
func version(e *Event) {
	e.ChangeKey = base64.StdEncoding.EncodeToString([]byte(randomHex(9)))
	e.ODataEtag = `W/"` + e.ChangeKey + `"`
	e.LastModifiedDateTime = stamp()
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "RequestBodyRead", "the request body cannot be read")
		return false
	}
	return true
}

func (s *Sim) user(u string) map[string]*stored {
	m, ok := s.events[u]
	if !ok {
		m = map[string]*stored{}
		s.events[u] = m
	}
	return m
}

func (s *Sim) create(w http.ResponseWriter, r *http.Request) {
	var in Event
	if !decode(w, r, &in) {
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	start, err1 := instant(in.Start)
	end, err2 := instant(in.End)
	if err1 != nil || err2 != nil || !end.After(start) {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "start and end must be valid times, start before end")
		return
	}
	u := r.PathValue("user")
	s.mu.Lock()
	if in.TransactionID != "" {
		if first, ok := s.txns[u+"\x00"+in.TransactionID]; ok {
			first.Posts++
			answer := answerOf(first.Event, nil)
			s.mu.Unlock()
			s.kit.Answer(w, f, http.StatusCreated, answer)
			return
		}
	}
	ev := &stored{LedgerEvent: LedgerEvent{User: u, Start: start, End: end, Posts: 1}, created: time.Now()}
	in.ID, in.CreatedDateTime, in.Type = newID(), stamp(), "singleInstance"
	in.Start, in.End = utc(start), utc(end)
	if in.ShowAs == "" {
		in.ShowAs = "busy"
	}
	version(&in)
	ev.Event = in
	s.user(u)[in.ID] = ev
	if in.TransactionID != "" {
		s.txns[u+"\x00"+in.TransactionID] = ev
	}
	s.order = append(s.order, ev)
	s.changed(u, in.ID, "created", in)
	answer := answerOf(in, nil)
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusCreated, answer)
}

// answerOf is an event as answered: extended properties only those the
// request expanded.
func answerOf(e Event, expand []string) Event {
	var props []ExtendedProperty
	for _, p := range e.SingleValueExtendedProperties {
		if slices.Contains(expand, p.ID) {
			props = append(props, p)
		}
	}
	e.SingleValueExtendedProperties = props
	return e
}

var expandID = regexp.MustCompile(`id eq '([^']*)'`)

// expanded lists the property ids named by $expand=singleValueExtendedProperties($filter=...).
func expanded(r *http.Request) []string {
	e := r.URL.Query().Get("$expand")
	if !strings.HasPrefix(e, "singleValueExtendedProperties") {
		return nil
	}
	var ids []string
	for _, m := range expandID.FindAllStringSubmatch(e, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func (s *Sim) get(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	s.mu.Lock()
	ev, found := s.events[r.PathValue("user")][r.PathValue("id")]
	found = found && f.Visible(ev.created, time.Now())
	var answer Event
	if found {
		answer = answerOf(ev.Event, expanded(r))
	}
	s.mu.Unlock()
	if !found {
		notFound(w)
		return
	}
	s.kit.Answer(w, f, http.StatusOK, answer)
}

func (s *Sim) update(w http.ResponseWriter, r *http.Request) {
	var in Event
	if !decode(w, r, &in) {
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, found := s.events[r.PathValue("user")][r.PathValue("id")]
	if !found {
		notFound(w)
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != "*" && m != ev.Event.ODataEtag {
		writeError(w, http.StatusPreconditionFailed, "ErrorIrresolvableConflict",
			"The send or update operation could not be performed because the change key passed in the request does not match the current change key for the item.")
		return
	}
	if in.TransactionID != "" && in.TransactionID != ev.Event.TransactionID {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "transactionId cannot be changed")
		return
	}
	next := ev.Event
	start, end := ev.Start, ev.End
	var err error
	if in.Start != nil {
		if start, err = instant(in.Start); err != nil {
			writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", err.Error())
			return
		}
	}
	if in.End != nil {
		if end, err = instant(in.End); err != nil {
			writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", err.Error())
			return
		}
	}
	if !end.After(start) {
		writeError(w, http.StatusBadRequest, "ErrorInvalidRequest", "end must be after start")
		return
	}
	next.Start, next.End = utc(start), utc(end)
	if in.Subject != "" {
		next.Subject = in.Subject
	}
	if in.Body != nil {
		next.Body = in.Body
	}
	if in.Location != nil {
		next.Location = in.Location
	}
	props := slices.Clone(next.SingleValueExtendedProperties)
	for _, p := range in.SingleValueExtendedProperties {
		if i := slices.IndexFunc(props, func(o ExtendedProperty) bool { return strings.EqualFold(o.ID, p.ID) }); i >= 0 {
			props[i].Value = p.Value
		} else {
			props = append(props, p)
		}
	}
	next.SingleValueExtendedProperties = props
	version(&next)
	ev.Event, ev.Start, ev.End = next, start, end
	s.changed(ev.User, next.ID, "updated", next)
	s.kit.Answer(w, f, http.StatusOK, answerOf(next, nil))
}

func (s *Sim) delete(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := r.PathValue("user")
	ev, found := s.events[u][r.PathValue("id")]
	if !found {
		notFound(w)
		return
	}
	s.remove(ev)
	s.changed(ev.User, ev.Event.ID, "deleted", ev.Event)
	s.kit.Answer(w, f, http.StatusNoContent, nil)
}

// remove deletes an event: it leaves the calendar, and its transactionId
// is forgotten.
func (s *Sim) remove(ev *stored) {
	delete(s.events[ev.User], ev.Event.ID)
	if ev.Event.TransactionID != "" {
		delete(s.txns, ev.User+"\x00"+ev.Event.TransactionID)
	}
	ev.Deleted = true
}

// filterProp reads the one $filter form oncecall sends:
// singleValueExtendedProperties/Any(ep: ep/id eq 'ID' and ep/value eq 'VALUE').
var filterProp = regexp.MustCompile(`^singleValueExtendedProperties/Any\(ep: ep/id eq '([^']*)' and ep/value eq '([^']*)'\)$`)

func (s *Sim) list(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	filter := r.URL.Query().Get("$filter")
	m := filterProp.FindStringSubmatch(filter)
	if filter != "" && m == nil {
		writeError(w, http.StatusBadRequest, "ErrorInvalidUrlQueryFilter", "The query filter contains one or more invalid nodes.")
		return
	}
	s.page(w, r, f, func(ev *stored) bool {
		if m == nil {
			return true
		}
		return slices.ContainsFunc(ev.Event.SingleValueExtendedProperties, func(p ExtendedProperty) bool {
			// Names are case-sensitive, values are not (Graph's rule).
			return p.ID == m[1] && strings.EqualFold(p.Value, m[2])
		})
	})
}

func (s *Sim) view(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err1 := instant(&DateTimeTimeZone{DateTime: q.Get("startDateTime")})
	to, err2 := instant(&DateTimeTimeZone{DateTime: q.Get("endDateTime")})
	if err1 != nil || err2 != nil {
		writeError(w, http.StatusBadRequest, "ErrorInvalidParameter", "startDateTime and endDateTime are required")
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	s.page(w, r, f, func(ev *stored) bool { return ev.End.After(from) && ev.Start.Before(to) })
}

// page answers the visible events of the path's user that keep holds,
// by start, $top at a time ($skip in @odata.nextLink).
func (s *Sim) page(w http.ResponseWriter, r *http.Request, f simkit.Faults, keep func(*stored) bool) {
	expand := expanded(r)
	s.mu.Lock()
	var evs []*stored
	for _, ev := range s.events[r.PathValue("user")] {
		if f.Visible(ev.created, time.Now()) && keep(ev) {
			evs = append(evs, ev)
		}
	}
	slices.SortFunc(evs, func(a, b *stored) int { return a.Start.Compare(b.Start) })
	items := make([]Event, len(evs))
	for i, ev := range evs {
		items[i] = answerOf(ev.Event, expand)
	}
	s.mu.Unlock()
	q := r.URL.Query()
	top, _ := strconv.Atoi(q.Get("$top"))
	if top <= 0 || top > 1000 {
		top = 10
	}
	skip, _ := strconv.Atoi(q.Get("$skip"))
	skip = min(max(skip, 0), len(items))
	page := map[string]any{"value": items[skip:min(skip+top, len(items))]}
	if skip+top < len(items) {
		q.Set("$skip", strconv.Itoa(skip+top))
		page["@odata.nextLink"] = "http://" + r.Host + r.URL.Path + "?" + q.Encode()
	}
	s.kit.Answer(w, f, http.StatusOK, page)
}

func (s *Sim) schedule(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Schedules                []string
		StartTime, EndTime       *DateTimeTimeZone
		AvailabilityViewInterval int
	}
	if !decode(w, r, &in) {
		return
	}
	from, err1 := instant(in.StartTime)
	to, err2 := instant(in.EndTime)
	if err1 != nil || err2 != nil || !to.After(from) || len(in.Schedules) == 0 {
		writeError(w, http.StatusBadRequest, "ErrorInvalidParameter", "schedules, startTime and endTime are required")
		return
	}
	step := time.Duration(cmpInt(in.AvailabilityViewInterval, 30)) * time.Minute
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	var out []map[string]any
	s.mu.Lock()
	for _, who := range in.Schedules {
		items := []map[string]any{}
		var busy [][2]time.Time
		for _, ev := range s.events[who] {
			if !f.Visible(ev.created, time.Now()) || ev.Event.ShowAs == "free" || !ev.End.After(from) || !ev.Start.Before(to) {
				continue
			}
			busy = append(busy, [2]time.Time{ev.Start, ev.End})
			items = append(items, map[string]any{
				"isPrivate": false, "status": ev.Event.ShowAs, "subject": ev.Event.Subject,
				"start": utc(ev.Start), "end": utc(ev.End),
			})
		}
		view := make([]byte, 0, to.Sub(from)/step+1)
		for t := from; t.Before(to); t = t.Add(step) {
			c := byte('0')
			for _, b := range busy {
				if b[0].Before(t.Add(step)) && t.Before(b[1]) {
					c = '2'
				}
			}
			view = append(view, c)
		}
		out = append(out, map[string]any{"scheduleId": who, "availabilityView": string(view), "scheduleItems": items})
	}
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusOK, map[string]any{"value": out})
}

func cmpInt(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}
