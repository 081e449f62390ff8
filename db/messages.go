package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// Message is one intended send in the outbox, with its text as rendered.
type Message struct {
	ID         uuid.UUID  `json:"id"`
	CustomerID *uuid.UUID `json:"customer_id,omitempty"`
	Recipient  string     `json:"recipient"`
	Channel    string     `json:"channel"`
	Template   string     `json:"template"`
	// SubjectLine is the e-mail subject; empty for SMS.
	SubjectLine string `json:"subject_line,omitempty"`
	Body        string `json:"body"`
	// SubjectID is what the message is about (an appointment id, ...).
	SubjectID string `json:"subject_id,omitempty"`
	SendRef   string `json:"send_ref,omitempty"`
	// TemplateVersion is the version of the tenant template the text was
	// rendered from; 0 (absent) for a built-in template.
	TemplateVersion int       `json:"template_version,omitempty"`
	Status          string    `json:"status"`
	CreatedAt       time.Time `json:"created_at"`
}

// NewMessage is a message to queue.
type NewMessage struct {
	TenantID    uuid.UUID
	ActionID    uuid.UUID
	CustomerID  *uuid.UUID
	Recipient   string
	Channel     string
	Template    string
	SubjectLine string
	Body        string
	SubjectID   string
	SendRef     string
	// TemplateVersion is 0 for a built-in template.
	TemplateVersion int
}

// CreateMessage queues a message in the outbox.
func (q queries) CreateMessage(ctx context.Context, m NewMessage) (Message, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Message{}, err
	}
	row, err := q.q.CreateMessage(ctx, dbsqlc.CreateMessageParams{
		ID: id, TenantID: m.TenantID, CustomerID: m.CustomerID, Recipient: m.Recipient, Channel: m.Channel,
		Template: m.Template, SubjectLine: ptr(m.SubjectLine), Body: m.Body, SubjectID: ptr(m.SubjectID),
		SendRef: ptr(m.SendRef), ActionID: m.ActionID, TemplateVersion: ptr(int32(m.TemplateVersion)),
	})
	if err != nil {
		return Message{}, err
	}
	return message(row), nil
}

// MessageByID returns one of the tenant's messages.
func (q queries) MessageByID(ctx context.Context, tenant, id uuid.UUID) (Message, error) {
	row, err := q.q.MessageByID(ctx, dbsqlc.MessageByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return Message{}, notFound(err)
	}
	return message(row), nil
}

func message(r dbsqlc.Message) Message {
	return Message{
		ID: r.ID, CustomerID: r.CustomerID, Recipient: r.Recipient, Channel: r.Channel, Template: r.Template,
		SubjectLine: deref(r.SubjectLine), Body: r.Body, SubjectID: deref(r.SubjectID), SendRef: deref(r.SendRef),
		TemplateVersion: int(deref(r.TemplateVersion)), Status: r.Status, CreatedAt: r.CreatedAt.UTC(),
	}
}
