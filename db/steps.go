package db

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
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
	// ProviderKind and ProviderAccount name the provider the step is sent
	// to (see oncecall.Step); the Store's planner names them when they are
	// empty (SetStepPlanner).
	ProviderKind    string
	ProviderAccount string
}

// StepPlanner names, on the steps of an action being claimed (in order),
// the provider each is sent to: the process's configuration decides it. It
// leaves a step that is already named as it is.
type StepPlanner func(steps []NewStep)

// StepProvider is a provider a server is configured for: the capability it
// serves, and its kind and account (the local provider's kind is "local").
type StepProvider struct {
	Capability, Kind, Account string
}

// StepUpdate is what an attempt or a check learned about a step.
type StepUpdate struct {
	State       string
	ProviderRef string
	RejectCode  string
	// Sent is true when a write request was (possibly) sent by this attempt.
	Sent      bool
	Checks    int
	LastError string
	// Backoff is how long from now (the database's clock) the step waits
	// before its next attempt or check.
	Backoff time.Duration
	// ProviderUntil, when set, is how long the provider keeps the write
	// open (a hold's capture deadline); it is kept once learned.
	ProviderUntil time.Time
	// Result, when set, is what the provider gave back for the write (see
	// oncecall.Step.Result); it is kept once learned.
	Result map[string]string
}

// Send is a driver's request to send a step, with the evidence it relies
// on (see BeginSend).
type Send struct {
	Action  uuid.UUID
	Name    string
	Owner   uuid.UUID
	Version int
	// Window is how long the write may be in flight: the action's lease is
	// extended to cover it.
	Window time.Duration
	// Retention, when set, is the provider's key retention: the send must
	// reach the provider within it, counted from the action's claim.
	Retention time.Duration
	// Settle, when set, is how long after the last send a lookup's "not
	// found" is conclusive: the send must come after it.
	Settle time.Duration
	// ProviderKind and ProviderAccount name the sender's provider, which a
	// step claimed before steps named theirs takes from now on.
	ProviderKind, ProviderAccount string
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
	// TenantID, when set, keeps only that tenant's actions.
	TenantID uuid.UUID
	Limit    int
}

// InsertSteps records an action's remote steps with their provider keys
// and the providers they are sent to (named by the Store's planner for the
// steps the caller did not name); called in the claim's transaction,
// before any dispatch.
func (q queries) InsertSteps(ctx context.Context, action uuid.UUID, steps []NewStep) error {
	if q.plan != nil && slices.ContainsFunc(steps, func(s NewStep) bool { return s.ProviderKind == "" }) {
		steps = slices.Clone(steps)
		q.plan(steps)
	}
	for i, s := range steps {
		var kind, account *string
		if s.ProviderKind != "" {
			kind, account = &s.ProviderKind, &s.ProviderAccount
		}
		if err := q.q.InsertStep(ctx, dbsqlc.InsertStepParams{
			ActionID: action, Name: s.Name, Seq: int32(i), Capability: s.Capability, Required: s.Required,
			Operation: s.Operation, ProviderKey: s.ProviderKey, ExternalRef: s.ExternalRef, Payload: s.Payload,
			ProviderKind: kind, ProviderAccount: account,
		}); err != nil {
			return err
		}
	}
	return nil
}

// Steps returns an action's steps in order.
func (q queries) Steps(ctx context.Context, action uuid.UUID) ([]oncecall.Step, error) {
	rows, err := q.q.StepsOfAction(ctx, action)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Step, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Step{
			ActionID: r.ActionID, Name: r.Name, Seq: int(r.Seq), Capability: r.Capability, Required: r.Required,
			Operation: r.Operation, ProviderKey: r.ProviderKey, ExternalRef: r.ExternalRef, Payload: r.Payload,
			ProviderKind: deref(r.ProviderKind), ProviderAccount: deref(r.ProviderAccount), State: r.State, ProviderRef: deref(r.ProviderRef), RejectCode: deref(r.RejectCode),
			Attempts: int(r.Attempts), Checks: int(r.Checks), LastError: deref(r.LastError),
			LastSentAt: r.LastSentAt, NextCheckAt: r.NextCheckAt, UpdatedAt: r.UpdatedAt, Version: int(r.Version),
			ActionCreatedAt: r.ActionCreatedAt, DBNow: r.DbNow,
		}
		if len(r.Result) > 0 {
			if err := json.Unmarshal(r.Result, &out[i].Result); err != nil {
				return nil, fmt.Errorf("step %s's result: %w", r.Name, err)
			}
		}
	}
	return out, nil
}

// BeginSend records, just before a step is sent, that it may be sent from
// now on (state unknown, last_sent_at now), provided the sender still holds
// the action's lease, the step is at the version it read, and the evidence
// of s still holds by the database's clock. It reports false otherwise: the
// caller must not send.
func (q queries) BeginSend(ctx context.Context, s Send) (bool, error) {
	n, err := q.q.BeginSend(ctx, dbsqlc.BeginSendParams{
		ActionID: s.Action, Name: s.Name, Owner: &s.Owner, Version: int32(s.Version),
		SendWindow: interval(s.Window), Retention: optionalInterval(s.Retention), Settle: optionalInterval(s.Settle),
		ProviderKind: s.ProviderKind, ProviderAccount: s.ProviderAccount,
	})
	return n == 1, err
}

// RecordStep stores what was learned about a step at version. It reports
// false, storing nothing, when owner no longer holds the action's lease or
// the step has changed since.
func (q queries) RecordStep(ctx context.Context, action uuid.UUID, name string, owner uuid.UUID, version int, u StepUpdate) (bool, error) {
	sent := int32(0)
	if u.Sent {
		sent = 1
	}
	var result []byte
	if len(u.Result) > 0 {
		var err error
		if result, err = json.Marshal(u.Result); err != nil {
			return false, err
		}
	}
	n, err := q.q.RecordStep(ctx, dbsqlc.RecordStepParams{
		Result: result,
		State:  u.State, ProviderRef: ptr(u.ProviderRef), RejectCode: ptr(u.RejectCode), Sent: sent,
		Checks: int32(u.Checks), LastError: ptr(u.LastError), Backoff: interval(u.Backoff),
		ProviderUntil: optionalTime(u.ProviderUntil), ActionID: action, Name: name, Owner: &owner, Version: int32(version),
	})
	return n == 1, err
}

// AddEvent appends to an action's timeline. detail must not hold customer data.
// NoticeStep records a provider's verified notice about a step: an unknown
// step becomes due for a check now. It reports whether a step was unknown.
func (q queries) NoticeStep(ctx context.Context, action uuid.UUID, step string, detail any) (bool, error) {
	b, err := json.Marshal(detail)
	if err != nil {
		return false, err
	}
	n, err := q.q.NoticeStep(ctx, dbsqlc.NoticeStepParams{StepAction: action, StepName: step, Detail: b})
	return n > 0, err
}

// NoticeStepRef is NoticeStep for a notice naming the provider's reference
// of the write: an unknown step keeps the first one it is told as where its
// next check looks first.
func (q queries) NoticeStepRef(ctx context.Context, action uuid.UUID, step, providerRef string, detail any) (bool, error) {
	b, err := json.Marshal(detail)
	if err != nil {
		return false, err
	}
	n, err := q.q.NoticeStepRef(ctx, dbsqlc.NoticeStepRefParams{StepAction: action, StepName: step, ProviderRef: providerRef, Detail: b})
	return n > 0, err
}

// ProviderRefHeld reports whether a step other than (action, step) holds a
// provider reference of the capability among the steps recorded.
func (q queries) ProviderRefHeld(ctx context.Context, capability, ref string, action uuid.UUID, step string) (bool, error) {
	return q.q.ProviderRefHeld(ctx, dbsqlc.ProviderRefHeldParams{Capability: capability, ProviderRef: &ref, StepAction: action, StepName: step})
}

// ClaimProviderRef claims, for the step (action, step) of tenant, a
// provider reference of the capability found by a search, and reports
// whether another step holds it: one that claimed it first (a concurrent
// claim waits for this transaction, and finds it taken once it commits), or
// one recorded with it (ProviderRefHeld). A claim is kept only when the
// transaction commits.
func (tx *Tx) ClaimProviderRef(ctx context.Context, capability, ref string, tenant, action uuid.UUID, step string) (held bool, err error) {
	if err := tx.q.ClaimProviderRef(ctx, dbsqlc.ClaimProviderRefParams{
		Capability: capability, ProviderRef: ref, TenantID: tenant, ActionID: action, Step: step,
	}); err != nil {
		return false, err
	}
	// A statement of its own: it sees a claim committed while the insert
	// waited for it.
	c, err := tx.q.ProviderRefClaim(ctx, dbsqlc.ProviderRefClaimParams{Capability: capability, ProviderRef: ref})
	if err != nil {
		return false, err
	}
	if c.ActionID != action || c.Step != step {
		return true, nil
	}
	return tx.ProviderRefHeld(ctx, capability, ref, action, step)
}

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
func (q queries) Events(ctx context.Context, action uuid.UUID) ([]oncecall.Event, error) {
	rows, err := q.q.EventsOfAction(ctx, action)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Event, len(rows))
	for i, r := range rows {
		out[i] = oncecall.Event{At: r.At.UTC(), Kind: r.Kind, Step: deref(r.Step), Detail: r.Detail}
	}
	return out, nil
}

// ReleaseAction ends owner's lease on an action: a running action becomes
// unknown (its required step is unresolved), and the action is flagged for
// an operator when needsOperator. False when owner no longer held the lease.
func (q queries) ReleaseAction(ctx context.Context, action, owner uuid.UUID, needsOperator bool) (bool, error) {
	n, err := q.q.ReleaseAction(ctx, dbsqlc.ReleaseActionParams{ID: action, Owner: &owner, NeedsOperator: needsOperator})
	return n == 1, err
}

// RenewLease extends owner's lease on an action by lease from now; false
// when another driver has taken the action over.
func (q queries) RenewLease(ctx context.Context, action, owner uuid.UUID, lease time.Duration) (bool, error) {
	n, err := q.q.RenewLease(ctx, dbsqlc.RenewLeaseParams{ID: action, Owner: &owner, Lease: interval(lease)})
	return n == 1, err
}

// TakeLease gives owner the lease of an action that nobody holds and that is
// unfinished or waiting for an operator; false otherwise.
func (q queries) TakeLease(ctx context.Context, action, owner uuid.UUID, lease time.Duration) (bool, error) {
	n, err := q.q.TakeLease(ctx, dbsqlc.TakeLeaseParams{ID: action, Owner: &owner, Lease: interval(lease)})
	return n == 1, err
}

// ClearNeedsOperator takes a completed action out of the operator's queue
// and ends owner's lease on it.
func (q queries) ClearNeedsOperator(ctx context.Context, action, owner uuid.UUID) (bool, error) {
	n, err := q.q.ClearNeedsOperator(ctx, dbsqlc.ClearNeedsOperatorParams{ID: action, Owner: &owner})
	return n == 1, err
}

// LeaseAbandoned leases, for owner, running actions whose lease expired:
// their worker may have sent a step before it died. Only actions whose
// next open step is planned for one of served (or that have none).
func (s *Store) LeaseAbandoned(ctx context.Context, owner uuid.UUID, lease time.Duration, limit int, served []StepProvider) ([]Leased, error) {
	var out []Leased
	caps, kinds, accounts := servedArgs(served)
	err := s.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.q.LeaseAbandoned(ctx, dbsqlc.LeaseAbandonedParams{
			Owner: &owner, Lease: interval(lease), MaxRows: int32(limit), Capabilities: caps, Kinds: kinds, Accounts: accounts,
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := tx.AddEvent(ctx, r.ID, "lease_expired", "", map[string]string{"note": "worker lease expired; unknown steps go by evidence"}); err != nil {
				return err
			}
			out = append(out, Leased{ID: r.ID, TenantID: r.TenantID})
		}
		return nil
	})
	return out, err
}

// LeaseDue leases, for owner, actions that have a step due for an attempt
// or a check, whose next open step is planned for one of served (or that
// have none).
func (s *Store) LeaseDue(ctx context.Context, owner uuid.UUID, lease time.Duration, limit int, served []StepProvider) ([]Leased, error) {
	caps, kinds, accounts := servedArgs(served)
	rows, err := s.q.LeaseDue(ctx, dbsqlc.LeaseDueParams{
		Owner: &owner, Lease: interval(lease), MaxRows: int32(limit), Capabilities: caps, Kinds: kinds, Accounts: accounts,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Leased, len(rows))
	for i, r := range rows {
		out[i] = Leased{ID: r.ID, TenantID: r.TenantID}
	}
	return out, nil
}

// servedArgs spreads served into the three arrays the lease queries read
// side by side.
func servedArgs(served []StepProvider) (caps, kinds, accounts []string) {
	caps, kinds, accounts = make([]string, len(served)), make([]string, len(served)), make([]string, len(served))
	for i, p := range served {
		caps[i], kinds[i], accounts[i] = p.Capability, p.Kind, p.Account
	}
	return caps, kinds, accounts
}

// ListActions lists actions of every tenant, newest first (operators).
func (q queries) ListActions(ctx context.Context, f ActionFilter) ([]oncecall.Action, error) {
	rows, err := q.q.ListActions(ctx, dbsqlc.ListActionsParams{State: ptr(f.State), OnlyNeedsOperator: f.NeedsOperator, TenantID: ptr(f.TenantID), MaxRows: int32(f.Limit)})
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Action, len(rows))
	for i, r := range rows {
		out[i] = action(r)
	}
	return out, nil
}

// ActionAnyTenant returns an action by id whatever its tenant (operators).
func (q queries) ActionAnyTenant(ctx context.Context, id uuid.UUID) (oncecall.Action, error) {
	row, err := q.q.ActionByIDAnyTenant(ctx, id)
	if err != nil {
		return oncecall.Action{}, notFound(err)
	}
	return action(row), nil
}

// optionalTime is t, or NULL when it is zero.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
