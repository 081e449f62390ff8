// Package calendars serves each tenant's own calendar (Google Calendar,
// Microsoft 365, Cal.com), whose connection is stored with the tenant
// (migration 0031, `oncecall calendar connect`): which calendar holds a
// practitioner's appointments, what it shows (read through a short cache
// that oncecall's own writes drop), and, for the step driver, the
// provider a calendar step planned for the connection is sent to (Reach).
// That provider checks the calendar right before a create or a move and
// sends nothing for a time the calendar shows taken; the step's key,
// evidence and recovery are calendar.Steps', unchanged.
package calendars

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// Defaults.
const (
	// DefaultReadTTL is how long a read of a calendar is reused: a slot
	// taken in the calendar directly is offered at most this long after.
	DefaultReadTTL = 15 * time.Second
	// DefaultTenantTTL is how long a tenant's connection and mappings are
	// reused: a connection made or changed applies within it.
	DefaultTenantTTL = 5 * time.Second
	// bucket is the span one availability read covers: reads are made
	// and cached by whole weeks, so that every question about a time in
	// one week shares a read.
	bucket = 7 * 24 * time.Hour
	// maxBuckets bounds the weeks one question reads.
	maxBuckets = 8
)

// Config configures the calendars of tenants.
type Config struct {
	Store   *db.Store
	Secrets Secrets
	Tuning  Tuning
	// ReadTTL and TenantTTL: see DefaultReadTTL and DefaultTenantTTL.
	ReadTTL, TenantTTL time.Duration
	Log                zerolog.Logger
}

// Service is the tenants' calendars as one server sees them.
type Service struct {
	cfg Config

	mu       sync.Mutex
	tenants  map[uuid.UUID]tenantEntry
	adapters map[uuid.UUID]adapterEntry
	reads    map[calendarKey]*reads
	reach    reachEntry
}

// New returns the Service.
func New(cfg Config) *Service {
	if cfg.ReadTTL <= 0 {
		cfg.ReadTTL = DefaultReadTTL
	}
	if cfg.TenantTTL <= 0 {
		cfg.TenantTTL = DefaultTenantTTL
	}
	return &Service{
		cfg: cfg, tenants: map[uuid.UUID]tenantEntry{}, adapters: map[uuid.UUID]adapterEntry{},
		reads: map[calendarKey]*reads{},
	}
}

// Tenant is a tenant's connection and the map of its calendars.
type Tenant struct {
	Conn oncecall.CalendarConnection
	Maps []oncecall.CalendarMapping
}

// CalendarOf is the calendar that holds the appointments of a practitioner
// at a location: the mapping for both, else the practitioner's for every
// location; uuid.Nil practitioner is the tenant's single calendar.
func (t Tenant) CalendarOf(practitioner, location uuid.UUID) (string, bool) {
	return oncecall.CalendarFor(t.Maps, practitioner, location)
}

// Calendars lists the tenant's distinct calendars.
func (t Tenant) Calendars() []string {
	var out []string
	for _, m := range t.Maps {
		if !slices.Contains(out, m.CalendarID) {
			out = append(out, m.CalendarID)
		}
	}
	return out
}

type tenantEntry struct {
	t         Tenant
	connected bool
	at        time.Time
}

// Tenant returns the tenant's connection and mappings; false when it has
// no connection (its appointments are oncecall's own, or the http
// provider's).
func (s *Service) Tenant(ctx context.Context, tenant uuid.UUID) (Tenant, bool, error) {
	s.mu.Lock()
	e, ok := s.tenants[tenant]
	s.mu.Unlock()
	if ok && time.Since(e.at) < s.cfg.TenantTTL {
		return e.t, e.connected, nil
	}
	e = tenantEntry{at: time.Now()}
	conn, err := s.cfg.Store.CalendarConnection(ctx, tenant)
	switch {
	case errors.Is(err, db.ErrNotFound):
	case err != nil:
		return Tenant{}, false, fmt.Errorf("read the tenant's calendar connection: %w", err)
	default:
		maps, err := s.cfg.Store.CalendarMappings(ctx, tenant)
		if err != nil {
			return Tenant{}, false, fmt.Errorf("read the tenant's calendar mappings: %w", err)
		}
		e.t, e.connected = Tenant{Conn: conn, Maps: maps}, true
	}
	s.mu.Lock()
	s.tenants[tenant] = e
	s.mu.Unlock()
	return e.t, e.connected, nil
}

// Connected reports whether the tenant books in its own calendar.
func (s *Service) Connected(ctx context.Context, tenant uuid.UUID) (bool, error) {
	_, ok, err := s.Tenant(ctx, tenant)
	return ok, err
}

type adapterEntry struct {
	updated time.Time
	cal     calendar.Calendar
}

// adapter is the connection's adapter, built once per version of it.
func (s *Service) adapter(ctx context.Context, c oncecall.CalendarConnection) (calendar.Calendar, error) {
	s.mu.Lock()
	e, ok := s.adapters[c.ID]
	s.mu.Unlock()
	if ok && e.updated.Equal(c.UpdatedAt) {
		return e.cal, nil
	}
	cal, err := Open(ctx, c, s.cfg.Secrets, s.cfg.Tuning)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.adapters[c.ID] = adapterEntry{updated: c.UpdatedAt, cal: cal}
	s.mu.Unlock()
	return cal, nil
}

// Calendar is the tenant's calendar adapter; false when the tenant has no
// connection.
func (s *Service) Calendar(ctx context.Context, tenant uuid.UUID) (calendar.Calendar, Tenant, bool, error) {
	t, ok, err := s.Tenant(ctx, tenant)
	if err != nil || !ok {
		return nil, t, ok, err
	}
	cal, err := s.adapter(ctx, t.Conn)
	return cal, t, true, err
}

// The read cache. Reads are kept per tenant and calendar, so that a write
// to a calendar drops everything read of it (Invalidate); a read that was
// under way when a write dropped them is not kept.

type calendarKey struct {
	tenant   uuid.UUID
	calendar string
}

type readKey struct {
	kind     string // "busy", "events", "event"
	from, to time.Time
	id       string // customer for "events", event id for "event"
}

type readEntry struct {
	at    time.Time
	value any
}

type reads struct {
	gen     uint64
	entries map[readKey]readEntry
}

// cached returns what key read within the TTL, else reads it with load.
func cached[T any](s *Service, ck calendarKey, key readKey, fresh bool, load func() (T, error)) (T, error) {
	s.mu.Lock()
	r := s.reads[ck]
	if r == nil {
		r = &reads{entries: map[readKey]readEntry{}}
		s.reads[ck] = r
	}
	e, ok := r.entries[key]
	gen := r.gen
	s.mu.Unlock()
	if ok && !fresh && time.Since(e.at) < s.cfg.ReadTTL {
		return e.value.(T), nil
	}
	at := time.Now()
	v, err := load()
	if err != nil {
		return v, err
	}
	s.mu.Lock()
	if r.gen == gen {
		r.entries[key] = readEntry{at: at, value: v}
	}
	s.mu.Unlock()
	return v, nil
}

// Invalidate drops what was read of a tenant's calendar: oncecall wrote to
// it, or the provider said it changed.
func (s *Service) Invalidate(tenant uuid.UUID, calendarID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.reads[calendarKey{tenant, calendarID}]; r != nil {
		r.gen++
		clear(r.entries)
	}
}

// weeks are the whole buckets that cover [from, to).
func weeks(from, to time.Time) []time.Time {
	var out []time.Time
	for w := from.UTC().Truncate(bucket); w.Before(to) && len(out) < maxBuckets; w = w.Add(bucket) {
		out = append(out, w)
	}
	return out
}

// Availability is what the tenant's calendar shows over [from, to): busy
// times (or open slots), read by whole weeks through the cache; fresh
// reads it anew.
func (s *Service) Availability(ctx context.Context, tenant uuid.UUID, calendarID string, from, to time.Time, fresh bool) (calendar.Availability, error) {
	cal, _, ok, err := s.Calendar(ctx, tenant)
	if err != nil || !ok {
		return calendar.Availability{}, noCalendar(err, ok)
	}
	var out calendar.Availability
	for _, w := range weeks(from, to) {
		a, err := cached(s, calendarKey{tenant, calendarID}, readKey{kind: "busy", from: w, to: w.Add(bucket)}, fresh,
			func() (calendar.Availability, error) { return cal.Availability(ctx, calendarID, w, w.Add(bucket)) })
		if err != nil {
			return calendar.Availability{}, err
		}
		out.Slots = a.Slots
		out.Busy = append(out.Busy, a.Busy...)
		out.Open = append(out.Open, a.Open...)
	}
	return out, nil
}

// Events lists the live events of the tenant's calendar that overlap
// [from, to), oncecall's for one customer when customer is set; read by
// whole weeks through the cache.
func (s *Service) Events(ctx context.Context, tenant uuid.UUID, calendarID, customer string, from, to time.Time) ([]calendar.Event, error) {
	cal, _, ok, err := s.Calendar(ctx, tenant)
	if err != nil || !ok {
		return nil, noCalendar(err, ok)
	}
	ws := weeks(from, to)
	if len(ws) == 0 {
		return nil, nil
	}
	start, end := ws[0], ws[len(ws)-1].Add(bucket)
	all, err := cached(s, calendarKey{tenant, calendarID}, readKey{kind: "events", from: start, to: end, id: customer}, false,
		func() ([]calendar.Event, error) {
			return cal.Events(ctx, calendar.EventQuery{CalendarID: calendarID, From: start, To: end, Customer: customer})
		})
	if err != nil {
		return nil, err
	}
	span := calendar.Span{Start: from, End: to}
	var out []calendar.Event
	for _, ev := range all {
		if ev.Span.Overlaps(span) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Event reads one event of the tenant's calendar through the cache;
// calendar.ErrNoEvent when the calendar has none by that id.
func (s *Service) Event(ctx context.Context, tenant uuid.UUID, calendarID, eventID string) (calendar.Event, error) {
	cal, _, ok, err := s.Calendar(ctx, tenant)
	if err != nil || !ok {
		return calendar.Event{}, noCalendar(err, ok)
	}
	type got struct {
		ev    calendar.Event
		found bool
	}
	g, err := cached(s, calendarKey{tenant, calendarID}, readKey{kind: "event", id: eventID}, false, func() (got, error) {
		ev, err := cal.Event(ctx, calendarID, eventID)
		if errors.Is(err, calendar.ErrNoEvent) {
			return got{}, nil
		}
		return got{ev: ev, found: err == nil}, err
	})
	if err != nil {
		return calendar.Event{}, err
	}
	if !g.found {
		return calendar.Event{}, calendar.ErrNoEvent
	}
	return g.ev, nil
}

// ErrNotConnected: the tenant has no calendar connection.
var ErrNotConnected = errors.New("the tenant has no calendar connection")

func noCalendar(err error, connected bool) error {
	if err != nil {
		return err
	}
	if !connected {
		return ErrNotConnected
	}
	return nil
}
