package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// NewCustomer is a customer to create.
type NewCustomer struct {
	TenantID    uuid.UUID
	Name        string
	Phone       string
	Email       string
	ExternalRef string
}

// CreateCustomer inserts a customer.
func (q queries) CreateCustomer(ctx context.Context, c NewCustomer) (oncecall.Customer, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Customer{}, err
	}
	row, err := q.q.CreateCustomer(ctx, dbsqlc.CreateCustomerParams{
		ID: id, TenantID: c.TenantID, Name: c.Name, Phone: ptr(c.Phone), Email: ptr(c.Email), ExternalRef: ptr(c.ExternalRef),
	})
	if err != nil {
		return oncecall.Customer{}, err
	}
	return customer(row), nil
}

// CustomerExists reports whether the tenant has the customer.
func (q queries) CustomerExists(ctx context.Context, tenant, id uuid.UUID) (bool, error) {
	return q.q.CustomerExists(ctx, dbsqlc.CustomerExistsParams{TenantID: tenant, ID: id})
}

// CustomerByExternalRef finds a customer by the tenant's own reference.
func (q queries) CustomerByExternalRef(ctx context.Context, tenant uuid.UUID, ref string) (oncecall.Customer, error) {
	row, err := q.q.CustomerByExternalRef(ctx, dbsqlc.CustomerByExternalRefParams{TenantID: tenant, ExternalRef: &ref})
	if err != nil {
		return oncecall.Customer{}, notFound(err)
	}
	return customer(row), nil
}

// CustomerByID returns one of the tenant's customers.
func (q queries) CustomerByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Customer, error) {
	row, err := q.q.CustomerByID(ctx, dbsqlc.CustomerByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Customer{}, notFound(err)
	}
	return customer(row), nil
}

// CustomerByPhone finds a customer by E.164 phone number.
func (q queries) CustomerByPhone(ctx context.Context, tenant uuid.UUID, phone string) (oncecall.Customer, error) {
	row, err := q.q.CustomerByPhone(ctx, dbsqlc.CustomerByPhoneParams{TenantID: tenant, Phone: &phone})
	if err != nil {
		return oncecall.Customer{}, notFound(err)
	}
	return customer(row), nil
}

// FieldChange is one optional field of a CustomerChange: Set false leaves
// the field alone; Set with an empty Value clears it.
type FieldChange struct {
	Set   bool
	Value string
}

// CustomerChange sets some fields of a customer.
type CustomerChange struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        *string // nil leaves the name alone; it cannot be cleared
	Phone       FieldChange
	Email       FieldChange
	ExternalRef FieldChange
}

// UpdateCustomer applies a change; ErrNotFound when the tenant has no such
// customer. A phone or external reference another customer holds violates
// a unique index.
func (q queries) UpdateCustomer(ctx context.Context, c CustomerChange) (oncecall.Customer, error) {
	row, err := q.q.UpdateCustomer(ctx, dbsqlc.UpdateCustomerParams{
		TenantID: c.TenantID, ID: c.ID,
		SetName: c.Name != nil, Name: deref(c.Name),
		SetPhone: c.Phone.Set, Phone: ptr(c.Phone.Value),
		SetEmail: c.Email.Set, Email: ptr(c.Email.Value),
		SetExternalRef: c.ExternalRef.Set, ExternalRef: ptr(c.ExternalRef.Value),
	})
	if err != nil {
		return oncecall.Customer{}, notFound(err)
	}
	return customer(row), nil
}

// PointsChange is a change of a customer's loyalty balance.
type PointsChange struct {
	TenantID   uuid.UUID
	ActionID   uuid.UUID
	CustomerID uuid.UUID
	Delta      int64
	Reason     string
}

// AddPoints changes a customer's balance and records it in the ledger; ok is
// false, and nothing changes, when the customer is missing or the balance
// would go below zero.
func (q queries) AddPoints(ctx context.Context, c PointsChange) (e oncecall.PointsEntry, ok bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.PointsEntry{}, false, err
	}
	row, err := q.q.AddPoints(ctx, dbsqlc.AddPointsParams{
		ID: id, TenantID: c.TenantID, CustomerID: c.CustomerID, Delta: c.Delta, Reason: c.Reason, ActionID: c.ActionID,
	})
	if err = notFound(err); err == ErrNotFound {
		return oncecall.PointsEntry{}, false, nil
	}
	if err != nil {
		return oncecall.PointsEntry{}, false, err
	}
	return oncecall.PointsEntry{
		ID: row.ID, CustomerID: row.CustomerID, Delta: row.Delta, Reason: row.Reason,
		Balance: row.BalanceAfter, CreatedAt: row.CreatedAt.UTC(),
	}, true, nil
}

func customer(r dbsqlc.Customer) oncecall.Customer {
	return oncecall.Customer{
		ID: r.ID, Name: r.Name, Phone: deref(r.Phone), Email: deref(r.Email), ExternalRef: deref(r.ExternalRef),
		Points: r.Points, CreatedAt: r.CreatedAt.UTC(),
	}
}
