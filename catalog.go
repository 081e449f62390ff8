package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Location is a place a business sees its customers at. A chain may span
// timezones, so each location has its own; Address is how the place is
// spoken of to a caller.
type Location struct {
	ID        uuid.UUID
	TenantID  uuid.UUID
	Name      string
	Timezone  string
	Address   string
	CreatedAt time.Time
}

// Practitioner is a person who sees customers: at some locations, for some
// services. Their slots never overlap, wherever they are.
type Practitioner struct {
	ID          uuid.UUID
	TenantID    uuid.UUID
	Name        string
	LocationIDs []uuid.UUID
	ServiceIDs  []uuid.UUID
	CreatedAt   time.Time
}

// Service is what a customer books: it takes DurationMinutes, then
// BufferMinutes kept free after it. PriceAmount is in the minor units of
// Currency, for payment intents; HasPrice is false when it has no set
// price.
type Service struct {
	ID              uuid.UUID
	TenantID        uuid.UUID
	Name            string
	DurationMinutes int
	BufferMinutes   int
	HasPrice        bool
	PriceAmount     int64
	Currency        string
	CreatedAt       time.Time
}

// NewLocation is a location to create.
type NewLocation struct {
	TenantID uuid.UUID
	Name     string
	Timezone string
	Address  string
}

// NewPractitioner is a practitioner to create, linked to locations and
// services of the same tenant.
type NewPractitioner struct {
	TenantID    uuid.UUID
	Name        string
	LocationIDs []uuid.UUID
	ServiceIDs  []uuid.UUID
}

// NewService is a service to create.
type NewService struct {
	TenantID        uuid.UUID
	Name            string
	DurationMinutes int
	BufferMinutes   int
	HasPrice        bool
	PriceAmount     int64
	Currency        string
}
