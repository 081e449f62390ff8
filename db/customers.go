package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// Customer is a customer record of a tenant.
type Customer struct {
	ID          uuid.UUID `json:"id"`
	Name        string    `json:"name"`
	Phone       string    `json:"phone,omitempty"`
	Email       string    `json:"email,omitempty"`
	ExternalRef string    `json:"external_ref,omitempty"`
	Points      int64     `json:"points"`
	CreatedAt   time.Time `json:"created_at"`
}

// NewCustomer is a customer to create.
type NewCustomer struct {
	TenantID    uuid.UUID
	Name        string
	Phone       string
	Email       string
	ExternalRef string
}

// CreateCustomer inserts a customer.
func (q queries) CreateCustomer(ctx context.Context, c NewCustomer) (Customer, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Customer{}, err
	}
	row, err := q.q.CreateCustomer(ctx, dbsqlc.CreateCustomerParams{
		ID: id, TenantID: c.TenantID, Name: c.Name, Phone: ptr(c.Phone), Email: ptr(c.Email), ExternalRef: ptr(c.ExternalRef),
	})
	if err != nil {
		return Customer{}, err
	}
	return customer(row), nil
}

// CustomerExists reports whether the tenant has the customer.
func (q queries) CustomerExists(ctx context.Context, tenant, id uuid.UUID) (bool, error) {
	return q.q.CustomerExists(ctx, dbsqlc.CustomerExistsParams{TenantID: tenant, ID: id})
}

// CustomerByExternalRef finds a customer by the tenant's own reference.
func (q queries) CustomerByExternalRef(ctx context.Context, tenant uuid.UUID, ref string) (Customer, error) {
	row, err := q.q.CustomerByExternalRef(ctx, dbsqlc.CustomerByExternalRefParams{TenantID: tenant, ExternalRef: &ref})
	if err != nil {
		return Customer{}, notFound(err)
	}
	return customer(row), nil
}

func customer(r dbsqlc.Customer) Customer {
	return Customer{
		ID: r.ID, Name: r.Name, Phone: deref(r.Phone), Email: deref(r.Email), ExternalRef: deref(r.ExternalRef),
		Points: r.Points, CreatedAt: r.CreatedAt.UTC(),
	}
}
