package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

// Customer is a customer record (openapi.yaml: Customer); contact details
// not on file are absent.
type Customer struct {
	ID          uuid.UUID `json:"id"`
	Name        string    `json:"name"`
	Phone       string    `json:"phone,omitempty"`
	Email       string    `json:"email,omitempty"`
	ExternalRef string    `json:"external_ref,omitempty"`
	Points      int64     `json:"points"`
	CreatedAt   time.Time `json:"created_at"`
}

// FromCustomer is the wire shape of a customer.
func FromCustomer(c oncecall.Customer) Customer {
	return Customer{
		ID: c.ID, Name: c.Name, Phone: c.Phone, Email: c.Email, ExternalRef: c.ExternalRef,
		Points: c.Points, CreatedAt: c.CreatedAt,
	}
}

// FromCustomers is FromCustomer of each customer.
func FromCustomers(c []oncecall.Customer) []Customer { return list(c, FromCustomer) }

// Note is a note appended to a customer record (openapi.yaml: Note).
type Note struct {
	ID         uuid.UUID `json:"id"`
	CustomerID uuid.UUID `json:"customer_id"`
	Text       string    `json:"text"`
	CreatedAt  time.Time `json:"created_at"`
}

// FromNote is the wire shape of a note.
func FromNote(n oncecall.Note) Note {
	return Note{ID: n.ID, CustomerID: n.CustomerID, Text: n.Text, CreatedAt: n.CreatedAt}
}

// PointsEntry is one change of a customer's loyalty balance (openapi.yaml:
// PointsEntry).
type PointsEntry struct {
	ID         uuid.UUID `json:"id"`
	CustomerID uuid.UUID `json:"customer_id"`
	Delta      int64     `json:"delta"`
	Reason     string    `json:"reason"`
	Balance    int64     `json:"balance"`
	CreatedAt  time.Time `json:"created_at"`
}

// FromPointsEntry is the wire shape of a ledger entry.
func FromPointsEntry(e oncecall.PointsEntry) PointsEntry {
	return PointsEntry{
		ID: e.ID, CustomerID: e.CustomerID, Delta: e.Delta, Reason: e.Reason, Balance: e.Balance, CreatedAt: e.CreatedAt,
	}
}
