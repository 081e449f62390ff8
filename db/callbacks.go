package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// RequestCallback records a callback. In a call (CallID set) that already
// has its callback of the same subject (the customer, else the phone) and
// CallbackRef, it amends that one instead: reason, window and contact are
// the new request's, and a cancelled one is requested again.
func (q queries) RequestCallback(ctx context.Context, c oncecall.NewCallback) (oncecall.Callback, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Callback{}, err
	}
	subject := c.Phone
	if c.CustomerID != uuid.Nil {
		subject = c.CustomerID.String()
	}
	row, err := q.q.RequestCallback(ctx, dbsqlc.RequestCallbackParams{
		ID: id, TenantID: c.TenantID, CustomerID: ptr(c.CustomerID), Phone: ptr(c.Phone), Subject: subject,
		WindowStart: c.WindowStart, WindowEnd: c.WindowEnd, Timezone: c.Timezone, Reason: c.Reason,
		ActionID: c.ActionID, CallID: ptr(c.CallID), CallPlatform: ptr(c.CallPlatform), CallbackRef: c.CallbackRef,
	})
	if err != nil {
		return oncecall.Callback{}, err
	}
	return callback(row), nil
}

// CancelCallback cancels one of the tenant's requested callbacks; ok is
// false when there is none to cancel (missing, or cancelled already).
func (q queries) CancelCallback(ctx context.Context, tenant, id uuid.UUID) (c oncecall.Callback, ok bool, err error) {
	row, err := q.q.CancelCallback(ctx, dbsqlc.CancelCallbackParams{TenantID: tenant, ID: id})
	if err = notFound(err); errors.Is(err, ErrNotFound) {
		return oncecall.Callback{}, false, nil
	} else if err != nil {
		return oncecall.Callback{}, false, err
	}
	return callback(row), true, nil
}

// CallbackByID returns one of the tenant's callbacks.
func (q queries) CallbackByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Callback, error) {
	row, err := q.q.CallbackByID(ctx, dbsqlc.CallbackByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Callback{}, notFound(err)
	}
	return callback(row), nil
}

// CallbacksOf lists at most limit of the tenant's callbacks of a customer
// or, when customer is uuid.Nil, to a phone number, by window.
func (q queries) CallbacksOf(ctx context.Context, tenant, customer uuid.UUID, phone string, limit int) ([]oncecall.Callback, error) {
	var rows []dbsqlc.Callback
	var err error
	if customer != uuid.Nil {
		rows, err = q.q.CallbacksOfCustomer(ctx, dbsqlc.CallbacksOfCustomerParams{TenantID: tenant, CustomerID: &customer, Limit: int32(limit)})
	} else {
		rows, err = q.q.CallbacksOfPhone(ctx, dbsqlc.CallbacksOfPhoneParams{TenantID: tenant, Phone: &phone, Limit: int32(limit)})
	}
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Callback, len(rows))
	for i, r := range rows {
		out[i] = callback(r)
	}
	return out, nil
}

func callback(r dbsqlc.Callback) oncecall.Callback {
	return oncecall.Callback{
		ID: r.ID, TenantID: r.TenantID, CustomerID: deref(r.CustomerID), Phone: deref(r.Phone),
		WindowStart: r.WindowStart.UTC(), WindowEnd: r.WindowEnd.UTC(), Timezone: r.Timezone, Reason: r.Reason,
		CallPlatform: deref(r.CallPlatform), CallID: deref(r.CallID), CallbackRef: r.CallbackRef, Status: oncecall.CallbackStatus(r.Status),
		CreatedAt: r.CreatedAt.UTC(), AmendedAt: utc(r.AmendedAt), CancelledAt: utc(r.CancelledAt),
	}
}

// utc is a nullable time in UTC; zero for NULL.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
