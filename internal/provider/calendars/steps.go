package calendars

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendar"
)

var _ provider.Accounts = (*Service)(nil)

// Kinds are the provider kinds of tenants' calendars, as steps name them.
var Kinds = []string{oncecall.CalendarGoogle, oncecall.CalendarMicrosoft, oncecall.CalendarCalcom}

// Reach returns the provider that sends a calendar step planned for a
// tenant's connection (Identity): false when this server cannot reach it
// (no such connection, another provider now, or its secret not readable
// here).
func (s *Service) Reach(ctx context.Context, capability string, id provider.Identity) (provider.Provider, bool, error) {
	if capability != provider.Calendar || !slices.Contains(Kinds, id.Kind) {
		return nil, false, nil
	}
	connID, err := uuid.Parse(id.Account)
	if err != nil {
		return nil, false, nil //nolint:nilerr // an account that is no connection's id is not reachable
	}
	conn, err := s.cfg.Store.CalendarConnectionByID(ctx, connID)
	if errors.Is(err, db.ErrNotFound) || err == nil && conn.Provider != id.Kind {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	cal, err := s.adapter(ctx, conn)
	if errors.Is(err, ErrNoSecret) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &Steps{Steps: calendar.Steps{Calendar: cal}, svc: s, conn: conn}, true, nil
}

type reachEntry struct {
	list []provider.Reached
	at   time.Time
}

// Reachable lists the connections whose secret this server reads: the
// calendar steps its reconciler may lease.
func (s *Service) Reachable(ctx context.Context) ([]provider.Reached, error) {
	s.mu.Lock()
	e := s.reach
	s.mu.Unlock()
	if !e.at.IsZero() && time.Since(e.at) < s.cfg.TenantTTL {
		return e.list, nil
	}
	conns, err := s.cfg.Store.CalendarConnections(ctx)
	if err != nil {
		return nil, err
	}
	e = reachEntry{at: time.Now()}
	for _, c := range conns {
		if _, err := s.cfg.Secrets.Read(c.Credentials); err == nil {
			e.list = append(e.list, provider.Reached{Capability: provider.Calendar, Identity: Identity(c)})
		}
	}
	s.mu.Lock()
	s.reach = e
	s.mu.Unlock()
	return e.list, nil
}

// Steps sends the calendar steps of one tenant's connection: it checks the
// calendar right before a create or a move and sends nothing for a time
// the calendar shows taken (SLOT_UNAVAILABLE); every write drops what the
// service read of the calendar.
type Steps struct {
	calendar.Steps
	svc  *Service
	conn oncecall.CalendarConnection
}

var (
	_ provider.Provider    = (*Steps)(nil)
	_ provider.WriteLookup = (*Steps)(nil)
	_ provider.Identified  = (*Steps)(nil)
)

// Identity is the connection's.
func (p *Steps) Identity() provider.Identity { return Identity(p.conn) }

// Write checks, then sends the step through calendar.Steps.
func (p *Steps) Write(ctx context.Context, w provider.Write) (provider.Record, error) {
	op, ok := calendar.OpOf(w.Operation)
	if !ok {
		return p.Steps.Write(ctx, w) // rejected there
	}
	pl, err := calendar.ParsePayload(w.Payload, op)
	if err != nil {
		return p.Steps.Write(ctx, w) // rejected there, with the reason
	}
	if pl.TenantID != p.conn.TenantID.String() {
		return provider.Record{}, &provider.Rejected{Code: calendar.InvalidPayload, Message: "the step names another tenant than its calendar's"}
	}
	if err := p.check(ctx, op, pl); err != nil {
		return provider.Record{}, err
	}
	defer p.svc.Invalidate(p.conn.TenantID, pl.Practitioner.CalendarID)
	return p.Steps.Write(ctx, w)
}

// LookupWrite finds what the step did (calendar.Steps); what it finds
// may be newer than the cache.
func (p *Steps) LookupWrite(ctx context.Context, w provider.Write) (provider.Record, bool, error) {
	rec, found, err := p.Steps.LookupWrite(ctx, w)
	if found && rec.Data["calendar_id"] != "" {
		p.svc.Invalidate(p.conn.TenantID, rec.Data["calendar_id"])
	}
	return rec, found, err
}

// check reads the calendar, fresh, before a create or a move: a time it
// shows taken is refused without sending. A read that fails sends nothing
// either (the step is tried again).
func (p *Steps) check(ctx context.Context, op calendar.Op, pl calendar.Payload) error {
	span := pl.Span()
	cal := pl.Practitioner.CalendarID
	switch op {
	case calendar.OpCreate:
		a, err := p.svc.Availability(ctx, p.conn.TenantID, cal, span.Start, span.End, true)
		if err != nil {
			return fmt.Errorf("%w: read the calendar before booking: %w", provider.ErrNotSent, err)
		}
		if !a.Free(span) {
			return &provider.Rejected{Code: calendar.SlotUnavailable, Message: "the calendar shows the time taken; nothing was sent"}
		}
	case calendar.OpMove:
		a, err := p.svc.Availability(ctx, p.conn.TenantID, cal, span.Start, span.End, true)
		if err != nil {
			return fmt.Errorf("%w: read the calendar before moving: %w", provider.ErrNotSent, err)
		}
		if a.Slots {
			return nil // the booking system decides, and refuses a taken time itself
		}
		evs, err := p.Calendar.Events(ctx, calendar.EventQuery{CalendarID: cal, From: span.Start, To: span.End})
		if err != nil {
			return fmt.Errorf("%w: read the calendar before moving: %w", provider.ErrNotSent, err)
		}
		if slices.ContainsFunc(evs, func(ev calendar.Event) bool { return ev.ID != pl.Event.ID && ev.Span.Overlaps(span) }) {
			return &provider.Rejected{Code: calendar.SlotUnavailable, Message: "the calendar shows the new time taken; nothing was sent"}
		}
	}
	return nil
}
