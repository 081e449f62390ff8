// Package calcom is a stateful fake of Cal.com's API v2, as far as oncecall
// uses it: create, list, get, cancel and reschedule bookings
// (cal-api-version 2024-08-13) and the slots of an event type
// (2024-09-04). It follows Cal.com's published behaviour: a booking takes
// no client key, and a booking of a time the event type already holds
// (the same request again included) is refused with an error, not answered
// with the first booking; cancel and reschedule need the booking's string
// uid (a numeric id is 404); a reschedule makes a new booking with a new
// uid, linked both ways (rescheduledFromUid, rescheduledToUid), and
// cancels the old one. It fails on request like Cal.com can
// (internal/sim/simkit).
package calcom

import (
	"crypto/rand"
	"encoding/json"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/sim/simkit"
)

// DefaultAPIKey is the API key the fake accepts unless told another.
const DefaultAPIKey = "cal_test_simulator0000000000000000"

// API versions the fake serves.
const (
	BookingsVersion = "2024-08-13"
	SlotsVersion    = "2024-09-04"
)

// Hours every event type is bookable, in UTC; slots are DefaultLength long.
const (
	OpenHour      = 8
	CloseHour     = 18
	DefaultLength = 30
)

// Booking is a booking as the API writes it.
type Booking struct {
	ID                 int               `json:"id"`
	UID                string            `json:"uid"`
	Title              string            `json:"title"`
	Description        string            `json:"description"`
	Hosts              []Host            `json:"hosts"`
	Status             string            `json:"status"`
	CancellationReason string            `json:"cancellationReason,omitempty"`
	ReschedulingReason string            `json:"reschedulingReason,omitempty"`
	RescheduledFromUID string            `json:"rescheduledFromUid,omitempty"`
	RescheduledToUID   string            `json:"rescheduledToUid,omitempty"`
	Start              string            `json:"start"`
	End                string            `json:"end"`
	Duration           int               `json:"duration"`
	EventTypeID        int               `json:"eventTypeId"`
	EventType          EventType         `json:"eventType"`
	Location           string            `json:"location"`
	AbsentHost         bool              `json:"absentHost"`
	CreatedAt          string            `json:"createdAt"`
	UpdatedAt          *string           `json:"updatedAt"`
	Metadata           map[string]string `json:"metadata"`
	Attendees          []Attendee        `json:"attendees"`
	Guests             []string          `json:"guests,omitempty"`
	BookingFields      map[string]any    `json:"bookingFieldsResponses"`
}

// Host is a booking's host.
type Host struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Email    string `json:"email"`
	Username string `json:"username"`
	TimeZone string `json:"timeZone"`
}

// EventType names a booking's event type.
type EventType struct {
	ID   int    `json:"id"`
	Slug string `json:"slug"`
}

// Attendee is a booking's attendee.
type Attendee struct {
	Name         string `json:"name"`
	Email        string `json:"email"`
	DisplayEmail string `json:"displayEmail"`
	TimeZone     string `json:"timeZone"`
	PhoneNumber  string `json:"phoneNumber,omitempty"`
	Language     string `json:"language,omitempty"`
	Absent       bool   `json:"absent"`
}

// LedgerBooking is one booking of the ledger (GET /sim/ledger).
type LedgerBooking struct {
	Booking Booking   `json:"booking"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// Refused counts the creates refused because this booking held their
	// time (a re-sent create included).
	Refused int  `json:"refused"`
	Direct  bool `json:"direct,omitempty"`
}

type stored struct {
	LedgerBooking
	created time.Time
}

// Sim is the fake.
type Sim struct {
	kit    *simkit.Kit
	apiKey string

	mu    sync.Mutex
	seq   int
	byUID map[string]*stored
	order []*stored
	hooks []Webhook
}

// New returns a fake that accepts apiKey and fails as kit says.
func New(kit *simkit.Kit, apiKey string) *Sim {
	kit.Error = writeError
	return &Sim{kit: kit, apiKey: apiKey, byUID: map[string]*stored{}}
}

// Handler serves the API under /v2 and the simulator's routes under /sim.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/bookings", s.authed(BookingsVersion, s.create))
	mux.HandleFunc("GET /v2/bookings", s.authed(BookingsVersion, s.list))
	mux.HandleFunc("GET /v2/bookings/{uid}", s.authed(BookingsVersion, s.get))
	mux.HandleFunc("POST /v2/bookings/{uid}/cancel", s.authed(BookingsVersion, s.cancel))
	mux.HandleFunc("POST /v2/bookings/{uid}/reschedule", s.authed(BookingsVersion, s.reschedule))
	mux.HandleFunc("GET /v2/slots", s.authed(SlotsVersion, s.slots))
	mux.HandleFunc("POST /v2/webhooks", s.authed(BookingsVersion, s.createWebhook))
	mux.HandleFunc("GET /sim/ledger", s.ledger)
	mux.HandleFunc("POST /sim/bookings", s.direct)
	mux.HandleFunc("POST /sim/bookings/reschedule", s.directReschedule)
	mux.HandleFunc("POST /sim/bookings/cancel", s.directCancel)
	s.kit.ControlRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundException", "Cannot "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// writeError writes Cal.com's error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	switch code {
	case "SIMULATED_FAILURE", "SHUTTING_DOWN":
		code = "InternalServerErrorException"
	case "INVALID_FAULT":
		code = "BadRequestException"
	}
	simkit.WriteJSON(w, status, map[string]any{
		"status": "error", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"error": map[string]any{"code": code, "message": message},
	})
}

func badRequest(w http.ResponseWriter, message string) {
	writeError(w, http.StatusBadRequest, "BadRequestException", message)
}

// authed requires the API key and the endpoint's cal-api-version.
func (s *Sim) authed(version string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.apiKey {
			writeError(w, http.StatusUnauthorized, "UnauthorizedException", "Invalid API Key")
			return
		}
		if v := r.Header.Get("cal-api-version"); v != version {
			badRequest(w, "this fake serves this endpoint with cal-api-version: "+version)
			return
		}
		h(w, r)
	}
}

func success(data any) map[string]any { return map[string]any{"status": "success", "data": data} }

const uidAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

func newUID() string {
	b := make([]byte, 22)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(uidAlphabet))))
		b[i] = uidAlphabet[n.Int64()]
	}
	return string(b)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// taken returns the accepted booking of the event type that overlaps
// [start, end), other than except.
func (s *Sim) taken(eventType int, start, end time.Time, except string) *stored {
	for _, b := range s.order {
		if b.Booking.EventTypeID == eventType && b.Booking.Status == "accepted" && b.Booking.UID != except &&
			b.Start.Before(end) && start.Before(b.End) {
			return b
		}
	}
	return nil
}

// bookable says why a time cannot be booked, or "".
func bookable(start, end time.Time) string {
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	if start.Before(day.Add(OpenHour*time.Hour)) || end.After(day.Add(CloseHour*time.Hour)) {
		return "no_available_users_found_error"
	}
	return ""
}

type createInput struct {
	Start           string `json:"start"`
	EventTypeID     int    `json:"eventTypeId"`
	LengthInMinutes int    `json:"lengthInMinutes"`
	Attendee        *struct {
		Name        string `json:"name"`
		Email       string `json:"email"`
		TimeZone    string `json:"timeZone"`
		PhoneNumber string `json:"phoneNumber"`
		Language    string `json:"language"`
	} `json:"attendee"`
	Metadata               map[string]any `json:"metadata"`
	BookingFieldsResponses map[string]any `json:"bookingFieldsResponses"`
	Guests                 []string       `json:"guests"`
}

func (s *Sim) create(w http.ResponseWriter, r *http.Request) {
	var in createInput
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		badRequest(w, "the request body cannot be read")
		return
	}
	meta, problem := checkCreate(in)
	if problem != "" {
		badRequest(w, problem)
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	start, _ := time.Parse(time.RFC3339, in.Start)
	start = start.UTC()
	length := in.LengthInMinutes
	if length <= 0 {
		length = DefaultLength
	}
	end := start.Add(time.Duration(length) * time.Minute)
	if why := bookable(start, end); why != "" {
		badRequest(w, why)
		return
	}
	s.mu.Lock()
	if held := s.taken(in.EventTypeID, start, end, ""); held != nil {
		held.Refused++
		s.mu.Unlock()
		badRequest(w, "no_available_users_found_error")
		return
	}
	a := in.Attendee
	b := s.add(Booking{
		Title: "Appointment between Host and " + a.Name, EventTypeID: in.EventTypeID, Duration: length, Metadata: meta,
		Attendees:     []Attendee{{Name: a.Name, Email: a.Email, DisplayEmail: a.Email, TimeZone: a.TimeZone, PhoneNumber: a.PhoneNumber, Language: cmpStr(a.Language, "en")}},
		Guests:        in.Guests,
		BookingFields: map[string]any{"name": a.Name, "email": a.Email},
	}, start, end, false)
	s.hook("BOOKING_CREATED", b)
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusCreated, success(b))
}

// checkCreate validates a create as the API does, and reads its metadata.
func checkCreate(in createInput) (map[string]string, string) {
	if _, err := time.Parse(time.RFC3339, in.Start); err != nil {
		return nil, "start must be a valid ISO 8601 date string"
	}
	if in.EventTypeID <= 0 {
		return nil, "Either eventTypeId or eventTypeSlug + username or eventTypeSlug + teamSlug must be provided"
	}
	if in.Attendee == nil || in.Attendee.Name == "" {
		return nil, "attendee.name must be a string"
	}
	if in.Attendee.Email == "" && in.Attendee.PhoneNumber == "" {
		return nil, "Attendee must have at least one contact method (email or phone number)"
	}
	if _, err := time.LoadLocation(in.Attendee.TimeZone); err != nil || in.Attendee.TimeZone == "" {
		return nil, "attendee.timeZone must be a valid IANA time zone"
	}
	meta := map[string]string{}
	if len(in.Metadata) > 50 {
		return nil, "Metadata must have at most 50 keys, each key up to 40 characters, and string values up to 500 characters."
	}
	for k, v := range in.Metadata {
		str, isStr := v.(string)
		if len(k) > 40 || (isStr && len(str) > 500) {
			return nil, "Metadata must have at most 50 keys, each key up to 40 characters, and string values up to 500 characters."
		}
		switch v := v.(type) {
		case string:
			meta[k] = v
		case float64:
			meta[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			meta[k] = strconv.FormatBool(v)
		default:
			return nil, "Metadata must have at most 50 keys, each key up to 40 characters, and string values up to 500 characters."
		}
	}
	return meta, ""
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// add stores a new accepted booking; the caller holds s.mu.
func (s *Sim) add(b Booking, start, end time.Time, direct bool) Booking {
	s.seq++
	now := time.Now()
	b.ID, b.UID, b.Status = s.seq, newUID(), "accepted"
	b.Start, b.End = stamp(start), stamp(end)
	b.EventType = EventType{ID: b.EventTypeID, Slug: "appointment-" + strconv.Itoa(b.EventTypeID)}
	b.Hosts = []Host{{ID: b.EventTypeID, Name: "Host", Email: "host" + strconv.Itoa(b.EventTypeID) + "@example.com",
		Username: "host" + strconv.Itoa(b.EventTypeID), TimeZone: "UTC"}}
	b.Location = "integrations:daily"
	b.CreatedAt = stamp(now)
	if b.Metadata == nil {
		b.Metadata = map[string]string{}
	}
	if b.Attendees == nil {
		b.Attendees = []Attendee{}
	}
	st := &stored{LedgerBooking: LedgerBooking{Booking: b, Start: start, End: end, Direct: direct}, created: now}
	s.byUID[b.UID] = st
	s.order = append(s.order, st)
	return b
}

func (s *Sim) touch(b *Booking) {
	now := stamp(time.Now())
	b.UpdatedAt = &now
}

func (s *Sim) get(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	s.mu.Lock()
	b, found := s.byUID[r.PathValue("uid")]
	found = found && f.Visible(b.created, time.Now())
	var answer Booking
	if found {
		answer = b.Booking
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "NotFoundException", "Booking with uid="+r.PathValue("uid")+" was not found in the database")
		return
	}
	s.kit.Answer(w, f, http.StatusOK, success(answer))
}

func (s *Sim) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var afterStart, beforeEnd time.Time
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"afterStart", &afterStart}, {"beforeEnd", &beforeEnd}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				badRequest(w, p.name+" must be a valid ISO 8601 date.")
				return
			}
			*p.to = t
		}
	}
	eventType, _ := strconv.Atoi(q.Get("eventTypeId"))
	statuses := strings.Split(q.Get("status"), ",")
	take, _ := strconv.Atoi(q.Get("take"))
	if take <= 0 || take > 250 {
		take = 100
	}
	skip, _ := strconv.Atoi(q.Get("skip"))
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	now := time.Now()
	s.mu.Lock()
	var all []Booking
	for _, b := range s.order {
		switch {
		case !f.Visible(b.created, now),
			eventType > 0 && b.Booking.EventTypeID != eventType,
			!afterStart.IsZero() && b.Start.Before(afterStart),
			!beforeEnd.IsZero() && b.End.After(beforeEnd),
			q.Get("attendeeEmail") != "" && !slices.ContainsFunc(b.Booking.Attendees, func(a Attendee) bool { return a.Email == q.Get("attendeeEmail") }),
			q.Get("status") != "" && !slices.Contains(statuses, listStatus(b, now)):
			continue
		}
		all = append(all, b.Booking)
	}
	s.mu.Unlock()
	skip = min(max(skip, 0), len(all))
	page := all[skip:min(skip+take, len(all))]
	if page == nil {
		page = []Booking{}
	}
	s.kit.Answer(w, f, http.StatusOK, map[string]any{"status": "success", "data": page, "pagination": map[string]any{
		"totalItems": len(all), "returnedItems": len(page), "itemsPerPage": take, "remainingItems": len(all) - skip - len(page),
		"hasNextPage": skip+len(page) < len(all), "hasPreviousPage": skip > 0,
	}})
}

// listStatus is the status filter a booking falls under.
func listStatus(b *stored, now time.Time) string {
	switch {
	case b.Booking.Status == "cancelled":
		return "cancelled"
	case b.End.Before(now):
		return "past"
	}
	return "upcoming"
}

func (s *Sim) cancel(w http.ResponseWriter, r *http.Request) {
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	var in struct {
		CancellationReason string `json:"cancellationReason"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	b, found := s.byUID[r.PathValue("uid")]
	switch {
	case !found:
		writeError(w, http.StatusNotFound, "NotFoundException", "Booking with uid="+r.PathValue("uid")+" was not found in the database")
		return
	case b.Booking.Status == "cancelled":
		badRequest(w, "This booking has already been cancelled.")
		return
	}
	b.Booking.Status, b.Booking.CancellationReason = "cancelled", in.CancellationReason
	s.touch(&b.Booking)
	s.hook("BOOKING_CANCELLED", b.Booking)
	s.kit.Answer(w, f, http.StatusOK, success(b.Booking))
}

func (s *Sim) reschedule(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Start              string `json:"start"`
		ReschedulingReason string `json:"reschedulingReason"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
		badRequest(w, "the request body cannot be read")
		return
	}
	start, err := time.Parse(time.RFC3339, in.Start)
	if err != nil {
		badRequest(w, "start must be a valid ISO 8601 date string")
		return
	}
	f, ok := s.kit.Begin(w, r, simkit.OnWrite)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, found := s.byUID[r.PathValue("uid")]
	if !found {
		writeError(w, http.StatusNotFound, "NotFoundException", "Booking with uid="+r.PathValue("uid")+" was not found in the database")
		return
	}
	next, why := s.move(b, start.UTC(), in.ReschedulingReason)
	if why != "" {
		badRequest(w, why)
		return
	}
	s.kit.Answer(w, f, http.StatusCreated, success(next))
}

// move reschedules b to start: a new booking linked to b, which is
// cancelled. The caller holds s.mu.
func (s *Sim) move(b *stored, start time.Time, reason string) (Booking, string) {
	if b.Booking.Status != "accepted" {
		return Booking{}, "Can't reschedule booking with status " + b.Booking.Status
	}
	end := start.Add(b.End.Sub(b.Start))
	if why := bookable(start, end); why != "" {
		return Booking{}, why
	}
	if held := s.taken(b.Booking.EventTypeID, start, end, b.Booking.UID); held != nil {
		return Booking{}, "no_available_users_found_error"
	}
	next := b.Booking
	next.RescheduledFromUID, next.RescheduledToUID, next.ReschedulingReason, next.UpdatedAt = b.Booking.UID, "", reason, nil
	next.Metadata = maps(b.Booking.Metadata)
	created := s.add(next, start, end, false)
	b.Booking.Status, b.Booking.RescheduledToUID, b.Booking.ReschedulingReason = "cancelled", created.UID, reason
	s.touch(&b.Booking)
	s.hook("BOOKING_RESCHEDULED", created)
	return created, ""
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Sim) slots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	eventType, err := strconv.Atoi(q.Get("eventTypeId"))
	if err != nil || eventType <= 0 {
		badRequest(w, "eventTypeId is required")
		return
	}
	from, err1 := day(q.Get("start"), false)
	to, err2 := day(q.Get("end"), true)
	if err1 != nil || err2 != nil || !to.After(from) {
		badRequest(w, "start and end must be dates (2050-09-05) or ISO 8601 times, start before end")
		return
	}
	zone, err := time.LoadLocation(cmpStr(q.Get("timeZone"), "UTC"))
	if err != nil {
		badRequest(w, "timeZone must be a valid IANA time zone")
		return
	}
	length := DefaultLength
	if d, err := strconv.Atoi(q.Get("duration")); err == nil && d > 0 {
		length = d
	}
	f, ok := s.kit.Begin(w, r, simkit.OnRead)
	if !ok {
		return
	}
	step := time.Duration(length) * time.Minute
	out := map[string][]map[string]string{}
	now := time.Now()
	s.mu.Lock()
	for d := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC); d.Before(to); d = d.AddDate(0, 0, 1) {
		for t := d.Add(OpenHour * time.Hour); !t.Add(step).After(d.Add(CloseHour * time.Hour)); t = t.Add(step) {
			if t.Before(from) || t.Add(step).After(to) {
				continue
			}
			if held := s.taken(eventType, t, t.Add(step), ""); held != nil && f.Visible(held.created, now) {
				continue
			}
			slot := map[string]string{"start": t.In(zone).Format("2006-01-02T15:04:05.000Z07:00")}
			if q.Get("format") == "range" {
				slot["end"] = t.Add(step).In(zone).Format("2006-01-02T15:04:05.000Z07:00")
			}
			key := t.In(zone).Format(time.DateOnly)
			out[key] = append(out[key], slot)
		}
	}
	s.mu.Unlock()
	s.kit.Answer(w, f, http.StatusOK, success(out))
}

// day reads a slots bound: a date (its day's start, or for end the next
// day's) or an ISO 8601 time.
func day(v string, end bool) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		if end {
			return t.AddDate(0, 0, 1), nil
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	return t.UTC(), err
}
