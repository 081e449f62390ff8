package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
)

// Message is one intended send in the outbox, with its text as rendered
// (openapi.yaml: Message); what it does not have is absent.
type Message struct {
	ID              uuid.UUID  `json:"id"`
	CustomerID      *uuid.UUID `json:"customer_id,omitempty"`
	Recipient       string     `json:"recipient"`
	Channel         string     `json:"channel"`
	Template        string     `json:"template"`
	SubjectLine     string     `json:"subject_line,omitempty"`
	Body            string     `json:"body"`
	SubjectID       string     `json:"subject_id,omitempty"`
	SendRef         string     `json:"send_ref,omitempty"`
	TemplateVersion int        `json:"template_version,omitempty"`
	Status          string     `json:"status"`
	CreatedAt       time.Time  `json:"created_at"`
}

// FromMessage is the wire shape of a message.
func FromMessage(m oncecall.Message) Message {
	return Message{
		ID: m.ID, CustomerID: m.CustomerID, Recipient: m.Recipient, Channel: m.Channel, Template: m.Template,
		SubjectLine: m.SubjectLine, Body: m.Body, SubjectID: m.SubjectID, SendRef: m.SendRef,
		TemplateVersion: m.TemplateVersion, Status: m.Status, CreatedAt: m.CreatedAt,
	}
}
