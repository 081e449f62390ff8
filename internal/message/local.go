package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
)

// Local is the local messaging provider as a step's provider: it queues a
// step's message (a remoteSend payload) in oncecall's outbox. The step
// driver uses it for a message sent before an action's required write (the
// SMS carrying a payment link) when no remote provider serves messaging.
// The outbox row of an action is its key: a re-send finds the row the
// first send wrote and queues nothing more. An action queues at most one
// message this way.
type Local struct {
	Store *db.Store
}

// Identity: the local provider (provider.LocalKind), the same in every
// process on the database.
func (l Local) Identity() provider.Identity { return provider.Identity{Kind: provider.LocalKind} }

// Traits: the outbox remembers every write for good and is read at once.
func (l Local) Traits() provider.Traits {
	return provider.Traits{HonoursKeys: true, KeyRetention: 100 * 365 * 24 * time.Hour, AuthoritativeLookup: true, Timeout: 5 * time.Second}
}

// Write queues the step's message once per action.
func (l Local) Write(ctx context.Context, w provider.Write) (provider.Record, error) {
	var m remoteSend
	if err := json.Unmarshal(w.Payload, &m); err != nil || m.Recipient == "" || m.Body == "" {
		return provider.Record{}, &provider.Rejected{Code: "INVALID_MESSAGE", Message: "the message payload has no recipient or text"}
	}
	a, found, err := l.action(ctx, w.ExternalRef)
	if err != nil || !found {
		return provider.Record{}, errors.Join(provider.ErrAmbiguous, err, errors.New("the step's action is not found"))
	}
	if msg, err := l.Store.MessageOfAction(ctx, a.TenantID, a.ID); err == nil {
		return provider.Record{ID: msg.ID.String(), ExternalRef: w.ExternalRef, Status: "committed"}, nil
	} else if !errors.Is(err, db.ErrNotFound) {
		return provider.Record{}, fmt.Errorf("%w: %w", provider.ErrAmbiguous, err)
	}
	nm := db.NewMessage{
		TenantID: a.TenantID, ActionID: a.ID, Recipient: m.Recipient, Channel: m.Channel, Template: m.Template,
		SubjectLine: m.SubjectLine, Body: m.Body, TemplateVersion: m.TemplateVersion, SubjectID: m.SubjectID, SendRef: m.SendRef,
	}
	if m.CustomerID != "" {
		id, err := uuid.Parse(m.CustomerID)
		if err != nil {
			return provider.Record{}, &provider.Rejected{Code: "INVALID_MESSAGE", Message: "the message's customer_id is not an id"}
		}
		nm.CustomerID = &id
	}
	msg, err := l.Store.CreateMessage(ctx, nm)
	if err != nil {
		return provider.Record{}, fmt.Errorf("%w: %w", provider.ErrAmbiguous, err)
	}
	return provider.Record{ID: msg.ID.String(), ExternalRef: w.ExternalRef, Status: "committed"}, nil
}

// LookupWrite finds the outbox row the step's action queued.
func (l Local) LookupWrite(ctx context.Context, w provider.Write) (provider.Record, bool, error) {
	a, found, err := l.action(ctx, w.ExternalRef)
	if err != nil || !found {
		return provider.Record{}, false, err
	}
	msg, err := l.Store.MessageOfAction(ctx, a.TenantID, a.ID)
	if errors.Is(err, db.ErrNotFound) {
		return provider.Record{}, false, nil
	}
	if err != nil {
		return provider.Record{}, false, err
	}
	return provider.Record{ID: msg.ID.String(), ExternalRef: w.ExternalRef, Status: "committed"}, true, nil
}

// LookupByKey: the driver uses LookupWrite.
func (l Local) LookupByKey(context.Context, string, string) (provider.Record, bool, error) {
	return provider.Record{}, false, errors.New("the local messaging provider finds a step's message by its action")
}

// LookupByRef: the driver uses LookupWrite.
func (l Local) LookupByRef(ctx context.Context, _ string, ref string) ([]provider.Record, error) {
	rec, found, err := l.LookupWrite(ctx, provider.Write{ExternalRef: ref})
	if err != nil || !found {
		return nil, err
	}
	return []provider.Record{rec}, nil
}

func (l Local) action(ctx context.Context, ref string) (a struct{ ID, TenantID uuid.UUID }, found bool, err error) {
	id, _, _ := strings.Cut(ref, "/")
	action, err := uuid.Parse(id)
	if err != nil {
		return a, false, fmt.Errorf("the step's reference %q names no action", ref)
	}
	got, err := l.Store.ActionAnyTenant(ctx, action)
	if errors.Is(err, db.ErrNotFound) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	a.ID, a.TenantID = got.ID, got.TenantID
	return a, true, nil
}
