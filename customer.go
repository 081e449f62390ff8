package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Customer is a customer record of a tenant.
type Customer struct {
	ID   uuid.UUID
	Name string
	// Phone (E.164), Email (lower-cased) and ExternalRef (the tenant's own
	// id of the customer) are empty when not on file.
	Phone       string
	Email       string
	ExternalRef string
	// Points is the loyalty points balance.
	Points    int64
	CreatedAt time.Time
}

// Note is a note appended to a customer record.
type Note struct {
	ID         uuid.UUID
	CustomerID uuid.UUID
	Text       string
	CreatedAt  time.Time
}

// PointsEntry is one change of a customer's loyalty balance.
type PointsEntry struct {
	ID         uuid.UUID
	CustomerID uuid.UUID
	Delta      int64
	Reason     string
	// Balance is the customer's balance after this change.
	Balance   int64
	CreatedAt time.Time
}
