package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Message is one intended send in the outbox, with its text as rendered.
type Message struct {
	ID uuid.UUID
	// CustomerID is the customer sent to, when the message named one.
	CustomerID *uuid.UUID
	// Recipient is the phone number (E.164) or e-mail address sent to.
	Recipient string
	// Channel is sms or email.
	Channel  string
	Template string
	// SubjectLine is the e-mail subject; empty for SMS.
	SubjectLine string
	Body        string
	// SubjectID is what the message is about (an appointment id, ...).
	SubjectID string
	SendRef   string
	// TemplateVersion is the version of the tenant template the text was
	// rendered from; 0 for a built-in template.
	TemplateVersion int
	Status          string
	CreatedAt       time.Time
}
