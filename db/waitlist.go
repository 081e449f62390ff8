package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// JoinWaitlist adds a waitlist entry. In a call (CallID set) that already
// has its entry of the customer, it amends that one instead: service,
// practitioner, date and note are the new request's, and a cancelled one is
// active again. e.Before is a date YYYY-MM-DD or empty.
func (q queries) JoinWaitlist(ctx context.Context, e oncecall.NewWaitlistEntry) (oncecall.WaitlistEntry, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.WaitlistEntry{}, err
	}
	var before pgtype.Date
	if e.Before != "" {
		day, err := time.Parse(time.DateOnly, e.Before)
		if err != nil {
			return oncecall.WaitlistEntry{}, fmt.Errorf("waitlist: before %q: %w", e.Before, err)
		}
		before = pgtype.Date{Time: day, Valid: true}
	}
	row, err := q.q.JoinWaitlist(ctx, dbsqlc.JoinWaitlistParams{
		TenantID: e.TenantID, ID: id, CustomerID: e.CustomerID, ServiceID: ptr(e.ServiceID), PractitionerID: ptr(e.PractitionerID),
		BeforeDate: before, Note: e.Note, ActionID: e.ActionID, CallPlatform: ptr(e.CallPlatform), CallID: ptr(e.CallID),
	})
	if err != nil {
		return oncecall.WaitlistEntry{}, err
	}
	return waitlistEntry(row), nil
}

// CancelWaitlistEntry cancels one of the tenant's active waitlist entries;
// ok is false when there is none to cancel (missing, or cancelled already).
func (q queries) CancelWaitlistEntry(ctx context.Context, tenant, id uuid.UUID) (e oncecall.WaitlistEntry, ok bool, err error) {
	row, err := q.q.CancelWaitlistEntry(ctx, dbsqlc.CancelWaitlistEntryParams{TenantID: tenant, ID: id})
	if err = notFound(err); errors.Is(err, ErrNotFound) {
		return oncecall.WaitlistEntry{}, false, nil
	} else if err != nil {
		return oncecall.WaitlistEntry{}, false, err
	}
	return waitlistEntry(row), true, nil
}

// WaitlistEntryByID returns one of the tenant's waitlist entries.
func (q queries) WaitlistEntryByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.WaitlistEntry, error) {
	row, err := q.q.WaitlistEntryByID(ctx, dbsqlc.WaitlistEntryByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.WaitlistEntry{}, notFound(err)
	}
	return waitlistEntry(row), nil
}

// Waitlist lists at most limit of the tenant's waitlist entries, newest
// first: of status (empty: any), and older than the entry after (uuid.Nil:
// from the newest).
func (q queries) Waitlist(ctx context.Context, tenant uuid.UUID, status oncecall.WaitlistStatus, after uuid.UUID, limit int) ([]oncecall.WaitlistEntry, error) {
	rows, err := q.q.ListWaitlist(ctx, dbsqlc.ListWaitlistParams{
		TenantID: tenant, Status: ptr(string(status)), After: ptr(after), Max: int32(limit),
	})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.WaitlistEntry, len(rows))
	for i, r := range rows {
		out[i] = waitlistEntry(r)
	}
	return out, nil
}

func waitlistEntry(r dbsqlc.WaitlistEntry) oncecall.WaitlistEntry {
	e := oncecall.WaitlistEntry{
		ID: r.ID, TenantID: r.TenantID, CustomerID: r.CustomerID, ServiceID: deref(r.ServiceID), PractitionerID: deref(r.PractitionerID),
		Note: r.Note, CallPlatform: deref(r.CallPlatform), CallID: deref(r.CallID), Status: oncecall.WaitlistStatus(r.Status),
		CreatedAt: r.CreatedAt.UTC(), AmendedAt: utc(r.AmendedAt), CancelledAt: utc(r.CancelledAt),
	}
	if r.BeforeDate.Valid {
		e.Before = r.BeforeDate.Time.Format(time.DateOnly)
	}
	return e
}
