// Package googlecal is a stateful fake of the Google Calendar API v3, as
// far as oncecall uses it: events.insert, get, patch, delete and list,
// freebusy.query, and the service-account token endpoint. It follows
// Google's published behaviour: a client-chosen id must be base32hex (a-v,
// 0-9) of 5 to 1024 characters; an id already taken, even by a deleted
// event, is refused 409 "The requested identifier already exists"; a
// deleted event stays readable with status cancelled and deleting it again
// answers 410; a patch or delete with a stale If-Match answers 412. On
// request it also fails like Google can (internal/sim/simkit), including an
// id collision not detected at create time (collision_undetected).
package googlecal

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// Event is an event as Google's API writes it.
type Event struct {
	Kind               string              `json:"kind"`
	Etag               string              `json:"etag"`
	ID                 string              `json:"id"`
	Status             string              `json:"status"`
	HTMLLink           string              `json:"htmlLink,omitempty"`
	Created            string              `json:"created,omitempty"`
	Updated            string              `json:"updated,omitempty"`
	Summary            string              `json:"summary,omitempty"`
	Description        string              `json:"description,omitempty"`
	Location           string              `json:"location,omitempty"`
	Start              *DateTime           `json:"start,omitempty"`
	End                *DateTime           `json:"end,omitempty"`
	ICalUID            string              `json:"iCalUID,omitempty"`
	Sequence           int64               `json:"sequence"`
	Transparency       string              `json:"transparency,omitempty"`
	ExtendedProperties *ExtendedProperties `json:"extendedProperties,omitempty"`
}

// DateTime is an event's start or end.
type DateTime struct {
	Date     string `json:"date,omitempty"`
	DateTime string `json:"dateTime,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
}

// ExtendedProperties are an event's private and shared properties.
type ExtendedProperties struct {
	Private map[string]string `json:"private,omitempty"`
	Shared  map[string]string `json:"shared,omitempty"`
}

// LedgerEvent is one event of the ledger (GET /sim/ledger).
type LedgerEvent struct {
	Calendar string    `json:"calendar"`
	Event    Event     `json:"event"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Inserts counts the insert requests that named its id (the first
	// included); Collisions those answered 200 by collision_undetected.
	Inserts    int `json:"inserts"`
	Collisions int `json:"collisions"`
	// Direct: made through /sim/events, as a person in the calendar would.
	Direct bool `json:"direct,omitempty"`
}

type stored struct {
	LedgerEvent
	created time.Time
}

// Sim is the fake.
type Sim struct {
	kit *simkit.Kit

	mu     sync.Mutex
	seq    int64
	events map[string]map[string]*stored // calendar → id → event
	order  []*stored
	tokens map[string]bool
	// watches are the watch channels by calendar.
	watches map[string][]*watch
}

// New returns a fake that fails as kit says.
func New(kit *simkit.Kit) *Sim {
	kit.Error = writeError
	return &Sim{kit: kit, events: map[string]map[string]*stored{}, tokens: map[string]bool{}, watches: map[string][]*watch{}}
}

// Handler serves the API under /calendar/v3, the token endpoint at
// /token, and the simulator's own routes under /sim.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	const base = "/calendar/v3/calendars/{calendar}/events"
	mux.HandleFunc("POST "+base, s.authed(s.insert))
	mux.HandleFunc("POST "+base+"/watch", s.authed(s.watchEvents))
	mux.HandleFunc("GET "+base, s.authed(s.list))
	mux.HandleFunc("GET "+base+"/{id}", s.authed(s.get))
	mux.HandleFunc("PATCH "+base+"/{id}", s.authed(s.patch))
	mux.HandleFunc("DELETE "+base+"/{id}", s.authed(s.delete))
	mux.HandleFunc("POST /calendar/v3/freeBusy", s.authed(s.freebusy))
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /sim/ledger", s.ledger)
	mux.HandleFunc("POST /sim/events", s.direct)
	mux.HandleFunc("POST /sim/events/move", s.directMove)
	mux.HandleFunc("POST /sim/events/cancel", s.directCancel)
	s.kit.ControlRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "notFound", "Not Found")
	})
	return mux
}

// writeError writes Google's error body.
func writeError(w http.ResponseWriter, status int, reason, message string) {
	switch reason {
	case "SIMULATED_FAILURE", "SHUTTING_DOWN":
		reason = "backendError"
	case "INVALID_FAULT":
		reason = "invalid"
	}
	simkit.WriteJSON(w, status, map[string]any{"error": map[string]any{
		"errors":  []map[string]string{{"domain": "global", "reason": reason, "message": message}},
		"code":    status,
		"message": message,
	}})
}

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

var idEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return strings.ToLower(idEncoding.EncodeToString(b))
}

// etag is a new version tag, quoted as Google's are.
func (s *Sim) etag() string {
	s.seq++
	return strconv.Quote(strconv.FormatInt(time.Now().UnixMicro()*10+s.seq%10, 10))
}

func (s *Sim) calendar(id string) map[string]*stored {
	c, ok := s.events[id]
	if !ok {
		c = map[string]*stored{}
		s.events[id] = c
	}
	return c
}

// times reads an event's start and end.
func times(start, end *DateTime) (time.Time, time.Time, error) {
	read := func(d *DateTime, name string) (time.Time, error) {
		if d == nil {
			return time.Time{}, fmt.Errorf("Missing %s time.", name)
		}
		if d.DateTime != "" {
			t, err := time.Parse(time.RFC3339, d.DateTime)
			if err != nil {
				return time.Time{}, fmt.Errorf("Invalid %s time.", name)
			}
			return t.UTC(), nil
		}
		t, err := time.Parse(time.DateOnly, d.Date)
		if err != nil {
			return time.Time{}, fmt.Errorf("Missing %s time.", name)
		}
		return t, nil
	}
	st, err := read(start, "start")
	if err != nil {
		return st, st, err
	}
	en, err := read(end, "end")
	if err == nil && !en.After(st) {
		err = fmt.Errorf("The specified time range is empty.")
	}
	return st, en, err
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "parseError", "Parse Error")
		return false
	}
	return true
}

func (s *Sim) insert(w http.ResponseWriter, r *http.Request) {
	var in Event
	if !decode(w, r, &in) {
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	start, end, err := times(in.Start, in.End)
	switch {
	case in.ID != "" && !validID(in.ID):
		writeError(w, http.StatusBadRequest, "invalid", "Invalid resource id value.")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "required", err.Error())
		return
	}
	cal := r.PathValue("calendar")
	s.mu.Lock()
	events := s.calendar(cal)
	if in.ID == "" {
		in.ID = newID()
	}
	if old, taken := events[in.ID]; taken {
		old.Inserts++
		if !f.Collision {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, "duplicate", "The requested identifier already exists.")
			return
		}
		// Not detected now: answered as if created; the calendar keeps
		// the event it had.
		old.Collisions++
		answer := s.fill(in, cal)
		s.mu.Unlock()
		s.kit.Answer(w, f, http.StatusOK, answer)
		return
	}
	ev := &stored{LedgerEvent: LedgerEvent{Calendar: cal, Event: s.fill(in, cal), Start: start, End: end, Inserts: 1}, created: time.Now()}
	events[in.ID] = ev
	s.order = append(s.order, ev)
	s.changed(cal)
	answer := ev.Event
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusOK, answer)
}

// fill completes an event as Google stores it.
func (s *Sim) fill(in Event, cal string) Event {
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	in.Kind, in.Etag, in.Created, in.Updated, in.Sequence = "calendar#event", s.etag(), now, now, 0
	if in.Status != "tentative" {
		in.Status = "confirmed"
	}
	in.ICalUID = in.ID + "@google.com"
	in.HTMLLink = "https://www.google.com/calendar/event?eid=" + base64.RawURLEncoding.EncodeToString([]byte(in.ID+" "+cal))
	return in
}

// visible returns an event a read may see.
func (s *Sim) visible(cal, id string, f simkit.Faults) (*stored, bool) {
	ev, ok := s.events[cal][id]
	if !ok || !f.Visible(ev.created, time.Now()) {
		return nil, false
	}
	return ev, true
}

func (s *Sim) get(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	s.mu.Lock()
	ev, found := s.visible(r.PathValue("calendar"), r.PathValue("id"), f)
	var answer Event
	if found {
		answer = ev.Event
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "notFound", "Not Found")
		return
	}
	s.kit.Answer(w, f, http.StatusOK, answer)
}

func (s *Sim) patch(w http.ResponseWriter, r *http.Request) {
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
	ev, found := s.events[r.PathValue("calendar")][r.PathValue("id")]
	switch {
	case !found:
		writeError(w, http.StatusNotFound, "notFound", "Not Found")
		return
	case ifMatch(r, ev.Event.Etag):
		writeError(w, http.StatusPreconditionFailed, "conditionNotMet", "Precondition Failed")
		return
	case ev.Event.Status == "cancelled":
		writeError(w, http.StatusForbidden, "forbidden", "Forbidden")
		return
	}
	next := ev.Event
	if in.Start != nil || in.End != nil {
		start, end := cmpOr(in.Start, next.Start), cmpOr(in.End, next.End)
		st, en, err := times(start, end)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		next.Start, next.End, next.Sequence = start, end, next.Sequence+1
		ev.Start, ev.End = st, en
	}
	for _, f := range []struct {
		to *string
		v  string
	}{{&next.Summary, in.Summary}, {&next.Description, in.Description}, {&next.Location, in.Location}, {&next.Status, in.Status}} {
		if f.v != "" {
			*f.to = f.v
		}
	}
	if in.ExtendedProperties != nil {
		next.ExtendedProperties = mergeProps(next.ExtendedProperties, in.ExtendedProperties)
	}
	next.Etag, next.Updated = s.etag(), time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	ev.Event = next
	s.changed(ev.Calendar)
	s.kit.Answer(w, f, http.StatusOK, next)
}

func cmpOr(a, b *DateTime) *DateTime {
	if a != nil {
		return a
	}
	return b
}

// mergeProps applies a patch's properties: each key given replaces its
// value, the others stay.
func mergeProps(old, in *ExtendedProperties) *ExtendedProperties {
	out := &ExtendedProperties{Private: map[string]string{}, Shared: map[string]string{}}
	for _, p := range []*ExtendedProperties{old, in} {
		if p == nil {
			continue
		}
		for k, v := range p.Private {
			out.Private[k] = v
		}
		for k, v := range p.Shared {
			out.Shared[k] = v
		}
	}
	return out
}

// ifMatch reports whether the request's If-Match names another version.
func ifMatch(r *http.Request, etag string) bool {
	m := r.Header.Get("If-Match")
	return m != "" && m != "*" && m != etag
}

func (s *Sim) delete(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, found := s.events[r.PathValue("calendar")][r.PathValue("id")]
	switch {
	case !found:
		writeError(w, http.StatusNotFound, "notFound", "Not Found")
		return
	case ev.Event.Status == "cancelled":
		writeError(w, http.StatusGone, "deleted", "Resource has been deleted")
		return
	case ifMatch(r, ev.Event.Etag):
		writeError(w, http.StatusPreconditionFailed, "conditionNotMet", "Precondition Failed")
		return
	}
	s.cancel(ev)
	s.changed(ev.Calendar)
	s.kit.Answer(w, f, http.StatusNoContent, nil)
}

func (s *Sim) cancel(ev *stored) {
	ev.Event.Status, ev.Event.Etag = "cancelled", s.etag()
	ev.Event.Updated = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
}

func (s *Sim) list(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	q := r.URL.Query()
	from, to, err := bounds(q.Get("timeMin"), q.Get("timeMax"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	props := map[string]string{}
	for _, p := range q["privateExtendedProperty"] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			writeError(w, http.StatusBadRequest, "invalid", "Invalid privateExtendedProperty.")
			return
		}
		props[k] = v
	}
	showDeleted := q.Get("showDeleted") == "true"
	s.mu.Lock()
	var items []Event
	var starts []time.Time
	for _, ev := range s.events[r.PathValue("calendar")] {
		if !f.Visible(ev.created, time.Now()) || (!showDeleted && ev.Event.Status == "cancelled") ||
			!ev.End.After(from) || !ev.Start.Before(to) || !hasProps(ev.Event, props) {
			continue
		}
		items, starts = append(items, ev.Event), append(starts, ev.Start)
	}
	s.mu.Unlock()
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return starts[a].Compare(starts[b]) })
	sorted := make([]Event, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	size, _ := strconv.Atoi(q.Get("maxResults"))
	if size <= 0 || size > 2500 {
		size = 250
	}
	offset, _ := strconv.Atoi(q.Get("pageToken"))
	offset = min(max(offset, 0), len(sorted))
	page := map[string]any{"kind": "calendar#events", "summary": r.PathValue("calendar"), "timeZone": "UTC", "items": sorted[offset:min(offset+size, len(sorted))]}
	if offset+size < len(sorted) {
		page["nextPageToken"] = strconv.Itoa(offset + size)
	}
	s.kit.Answer(w, f, http.StatusOK, page)
}

func hasProps(e Event, want map[string]string) bool {
	for k, v := range want {
		if e.ExtendedProperties == nil || e.ExtendedProperties.Private[k] != v {
			return false
		}
	}
	return true
}

func bounds(min, max string) (time.Time, time.Time, error) {
	from, to := time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	var err error
	if min != "" {
		if from, err = time.Parse(time.RFC3339, min); err != nil {
			return from, to, fmt.Errorf("Bad Request")
		}
	}
	if max != "" {
		if to, err = time.Parse(time.RFC3339, max); err != nil {
			return from, to, fmt.Errorf("Bad Request")
		}
	}
	if !to.After(from) {
		return from, to, fmt.Errorf("The specified time range is empty.")
	}
	return from, to, nil
}

func (s *Sim) freebusy(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TimeMin, TimeMax, TimeZone string
		Items                      []struct{ ID string }
	}
	if !decode(w, r, &in) {
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	from, to, err := bounds(in.TimeMin, in.TimeMax)
	if err != nil || in.TimeMin == "" || in.TimeMax == "" {
		writeError(w, http.StatusBadRequest, "timeRangeEmpty", "The specified time range is empty.")
		return
	}
	cals := map[string]any{}
	s.mu.Lock()
	for _, item := range in.Items {
		var spans [][2]time.Time
		for _, ev := range s.events[item.ID] {
			if ev.Event.Status == "cancelled" || ev.Event.Transparency == "transparent" || !f.Visible(ev.created, time.Now()) ||
				!ev.End.After(from) || !ev.Start.Before(to) {
				continue
			}
			spans = append(spans, [2]time.Time{maxTime(ev.Start, from), minTime(ev.End, to)})
		}
		busy := []map[string]string{}
		for _, sp := range merge(spans) {
			busy = append(busy, map[string]string{"start": sp[0].Format(time.RFC3339), "end": sp[1].Format(time.RFC3339)})
		}
		cals[item.ID] = map[string]any{"busy": busy}
	}
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusOK, map[string]any{
		"kind": "calendar#freeBusy", "timeMin": from.Format(time.RFC3339), "timeMax": to.Format(time.RFC3339), "calendars": cals,
	})
}

func merge(spans [][2]time.Time) [][2]time.Time {
	slices.SortFunc(spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var out [][2]time.Time
	for _, sp := range spans {
		if n := len(out); n > 0 && !sp[0].After(out[n-1][1]) {
			out[n-1][1] = maxTime(out[n-1][1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
