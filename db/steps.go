package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db/dbsqlc"
)

// Step states.
const (
	StepPending   = "pending"   // certainly not performed yet: safe to send
	StepUnknown   = "unknown"   // may have been performed: only evidence decides
	StepSucceeded = "succeeded" // the provider holds the write
	StepRejected  = "rejected"  // the provider refused it for good
)

// NewStep is a remote write declared when its action is claimed.
type NewStep struct {
	Name        string
	Capability  string
	Required    bool
	Operation   string
	ProviderKey string
	ExternalRef string
	Payload     []byte
}

// Step is one remote write of an action and what is known about it.
type Step struct {
	ActionID    uuid.UUID  `json:"-"`
	Name        string     `json:"name"`
	Seq         int        `json:"seq"`
	Capability  string     `json:"capability"`
	Required    bool       `json:"required"`
	Operation   string     `json:"operation"`
	ProviderKey string     `json:"provider_key"`
	ExternalRef string     `json:"external_ref"`
	Payload     []byte     `json:"-"`
	State       string     `json:"state"`
	ProviderRef string     `json:"provider_ref,omitempty"`
	RejectCode  string     `json:"reject_code,omitempty"`
	Attempts    int        `json:"attempts"`
	Checks      int        `json:"checks"`
	LastError   string     `json:"last_error,omitempty"`
	LastSentAt  *time.Time `json:"last_sent_at,omitempty"`
	NextCheckAt time.Time  `json:"next_check_at"`
}

// StepUpdate is what an attempt or a check learned about a step.
type StepUpdate struct {
	State       string
	ProviderRef string
	RejectCode  string
	// Sent is true when a write request was (possibly) sent by this attempt.
	Sent        bool
	Checks      int
	LastError   string
	NextCheckAt time.Time
}

// Event is one entry of an action's timeline.
type Event struct {
	At     time.Time       `json:"at"`
	Kind   string          `json:"kind"`
	Step   string          `json:"step,omitempty"`
	Detail json.RawMessage `json:"detail"`
}

// Leased is an action a reconciler now holds a lease on.
type Leased struct {
	ID       uuid.UUID
	TenantID uuid.UUID
}

// ActionFilter selects actions for operators.
type ActionFilter struct {
	State         string
	NeedsOperator bool
	Limit         int
}

// InsertSteps records an action's remote steps with their provider keys;
// called in the claim's transaction, before any dispatch.
func (q queries) InsertSteps(ctx context.Context, action uuid.UUID, steps []NewStep) error {
	for i, s := range steps {
		if err := q.q.InsertStep(ctx, dbsqlc.InsertStepParams{
			ActionID: action, Name: s.Name, Seq: int32(i), Capability: s.Capability, Required: s.Required,
			Operation: s.Operation, ProviderKey: s.ProviderKey, ExternalRef: s.ExternalRef, Payload: s.Payload,
		}); err != nil {
			return err
		}
	}
	return nil
}

// Steps returns an action's steps in order.
func (q queries) Steps(ctx context.Context, action uuid.UUID) ([]Step, error) {
	rows, err := q.q.StepsOfAction(ctx, action)
	if err != nil {
		return nil, err
	}
	out := make([]Step, len(rows))
	for i, r := range rows {
		out[i] = Step{
			ActionID: r.ActionID, Name: r.Name, Seq: int(r.Seq), Capability: r.Capability, Required: r.Required,
			Operation: r.Operation, ProviderKey: r.ProviderKey, ExternalRef: r.ExternalRef, Payload: r.Payload,
			State: r.State, ProviderRef: deref(r.ProviderRef), RejectCode: deref(r.RejectCode),
			Attempts: int(r.Attempts), Checks: int(r.Checks), LastError: deref(r.LastError),
			LastSentAt: r.LastSentAt, NextCheckAt: r.NextCheckAt,
		}
	}
	return out, nil
}

// RecordStep stores what was learned about a step.
func (q queries) RecordStep(ctx context.Context, action uuid.UUID, name string, u StepUpdate) error {
	sent := int32(0)
	if u.Sent {
		sent = 1
	}
	return q.q.RecordStep(ctx, dbsqlc.RecordStepParams{
		State: u.State, ProviderRef: ptr(u.ProviderRef), RejectCode: ptr(u.RejectCode), Sent: sent,
		Checks: int32(u.Checks), LastError: ptr(u.LastError), NextCheckAt: u.NextCheckAt,
		ActionID: action, Name: name,
	})
}

// AddEvent appends to an action's timeline. detail must not hold customer data.
func (q queries) AddEvent(ctx context.Context, action uuid.UUID, kind, step string, detail any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if detail == nil {
		b = []byte("{}")
	}
	return q.q.AddEvent(ctx, dbsqlc.AddEventParams{ActionID: action, Kind: kind, Step: ptr(step), Detail: b})
}

// Events returns an action's timeline.
func (q queries) Events(ctx context.Context, action uuid.UUID) ([]Event, error) {
	rows, err := q.q.EventsOfAction(ctx, action)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{At: r.At.UTC(), Kind: r.Kind, Step: deref(r.Step), Detail: r.Detail}
	}
	return out, nil
}

// MarkUnknown moves a running action to unknown and releases its lease.
func (q queries) MarkUnknown(ctx context.Context, action uuid.UUID) error {
	return q.q.MarkActionUnknown(ctx, action)
}

// SetNeedsOperator flags an action for an operator and releases its lease.
func (q queries) SetNeedsOperator(ctx context.Context, action uuid.UUID) error {
	return q.q.SetNeedsOperator(ctx, action)
}

// Release drops a reconciler's lease on an action that is no longer running.
func (q queries) Release(ctx context.Context, action uuid.UUID) error {
	return q.q.ReleaseAction(ctx, action)
}

// LeaseAbandoned leases running actions whose lease expired and marks their
// pending steps unknown: their worker may have sent them before it died.
func (s *Store) LeaseAbandoned(ctx context.Context, lease time.Duration, limit int) ([]Leased, error) {
	var out []Leased
	err := s.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.q.LeaseAbandoned(ctx, dbsqlc.LeaseAbandonedParams{Lease: interval(lease), MaxRows: int32(limit)})
		if err != nil {
			return err
		}
		now := time.Now()
		for _, r := range rows {
			if err := tx.q.AbandonSteps(ctx, dbsqlc.AbandonStepsParams{SentBy: &now, ActionID: r.ID}); err != nil {
				return err
			}
			if err := tx.AddEvent(ctx, r.ID, "lease_expired", "", map[string]string{"note": "worker lease expired; pending steps treated as possibly sent"}); err != nil {
				return err
			}
			out = append(out, Leased{ID: r.ID, TenantID: r.TenantID})
		}
		return nil
	})
	return out, err
}

// LeaseDue leases actions that have a step due for an attempt or a check.
func (s *Store) LeaseDue(ctx context.Context, lease time.Duration, limit int) ([]Leased, error) {
	rows, err := s.q.LeaseDue(ctx, dbsqlc.LeaseDueParams{Lease: interval(lease), MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Leased, len(rows))
	for i, r := range rows {
		out[i] = Leased{ID: r.ID, TenantID: r.TenantID}
	}
	return out, nil
}

// ListActions lists actions of every tenant, newest first (operators).
func (q queries) ListActions(ctx context.Context, f ActionFilter) ([]Action, error) {
	rows, err := q.q.ListActions(ctx, dbsqlc.ListActionsParams{State: ptr(f.State), OnlyNeedsOperator: f.NeedsOperator, MaxRows: int32(f.Limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Action, len(rows))
	for i, r := range rows {
		out[i] = action(r)
	}
	return out, nil
}

// ActionAnyTenant returns an action by id whatever its tenant (operators).
func (q queries) ActionAnyTenant(ctx context.Context, id uuid.UUID) (Action, error) {
	row, err := q.q.ActionByIDAnyTenant(ctx, id)
	if err != nil {
		return Action{}, notFound(err)
	}
	return action(row), nil
}

// ResolveAction completes an unfinished action (reconciler evidence or an
// operator's resolution).
func (q queries) ResolveAction(ctx context.Context, id uuid.UUID, c Completion) error {
	status := int32(c.Status)
	return q.q.ResolveAction(ctx, dbsqlc.ResolveActionParams{
		ID: id, Outcome: ptr(string(c.Outcome)), Reason: ptr(c.Reason), HTTPStatus: &status,
		ResourceID: ptr(c.ResourceID), Result: c.Result,
	})
}
