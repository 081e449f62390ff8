package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

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
func (q queries) CreateMessage(ctx context.Context, m NewMessage) (oncecall.Message, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return oncecall.Message{}, err
	}
	row, err := q.q.CreateMessage(ctx, dbsqlc.CreateMessageParams{
		ID: id, TenantID: m.TenantID, CustomerID: m.CustomerID, Recipient: m.Recipient, Channel: m.Channel,
		Template: m.Template, SubjectLine: ptr(m.SubjectLine), Body: m.Body, SubjectID: ptr(m.SubjectID),
		SendRef: ptr(m.SendRef), ActionID: m.ActionID, TemplateVersion: ptr(int32(m.TemplateVersion)),
	})
	if err != nil {
		return oncecall.Message{}, err
	}
	return message(row), nil
}

// MessageByID returns one of the tenant's messages.
func (q queries) MessageByID(ctx context.Context, tenant, id uuid.UUID) (oncecall.Message, error) {
	row, err := q.q.MessageByID(ctx, dbsqlc.MessageByIDParams{TenantID: tenant, ID: id})
	if err != nil {
		return oncecall.Message{}, notFound(err)
	}
	return message(row), nil
}

func message(r dbsqlc.Message) oncecall.Message {
	return oncecall.Message{
		ID: r.ID, CustomerID: r.CustomerID, Recipient: r.Recipient, Channel: r.Channel, Template: r.Template,
		SubjectLine: deref(r.SubjectLine), Body: r.Body, SubjectID: deref(r.SubjectID), SendRef: deref(r.SendRef),
		TemplateVersion: int(deref(r.TemplateVersion)), Status: r.Status, CreatedAt: r.CreatedAt.UTC(),
	}
}

// MessageOfAction returns the message an action queued (the outbox row a
// step wrote through the local provider).
func (q queries) MessageOfAction(ctx context.Context, tenant, action uuid.UUID) (oncecall.Message, error) {
	row, err := q.q.MessageOfAction(ctx, dbsqlc.MessageOfActionParams{TenantID: tenant, ActionID: action})
	if err != nil {
		return oncecall.Message{}, notFound(err)
	}
	return message(row), nil
}
