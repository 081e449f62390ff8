// Package step drives the remote steps of actions: it sends each step with
// its persisted provider key, records what the provider answered, and
// resolves steps whose outcome is unknown only from evidence (a re-send the
// provider deduplicates, or an authoritative lookup). The request path and
// the reconciler share it, so a step is handled the same way whoever runs it.
package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
)

// Config bounds recovery.
type Config struct {
	// Backoff is the delay before the first re-check of an unresolved step;
	// it doubles per check up to MaxBackoff. Defaults 1s and 1m.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxChecks inconclusive checks, or MaxAge since the action was claimed,
	// send the action to an operator. Defaults 20 and 24h.
	MaxChecks int
	MaxAge    time.Duration
}

// Driver performs and recovers steps.
type Driver struct {
	store     *db.Store
	ops       *op.Registry
	providers provider.Set
	cfg       Config
	log       zerolog.Logger
	// Observe, when set, is told each step result ("succeeded", "rejected",
	// "not_sent", "ambiguous", "inconclusive", "needs_operator").
	Observe func(capability, result string, took time.Duration)
}

// NewDriver returns a Driver with defaults applied to cfg.
func NewDriver(store *db.Store, ops *op.Registry, providers provider.Set, cfg Config, log zerolog.Logger) *Driver {
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.MaxChecks <= 0 {
		cfg.MaxChecks = 20
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 24 * time.Hour
	}
	return &Driver{store: store, ops: ops, providers: providers, cfg: cfg, log: log}
}

// Remote reports whether capability is served by a remote provider.
func (d *Driver) Remote(capability string) bool {
	_, ok := d.providers.Remote(capability)
	return ok
}

// Drive advances every due step of a, in order, and settles the action:
// completed when its required step is resolved, unknown otherwise, and
// flagged for an operator when recovery has run out of evidence. The caller
// holds the action's lease.
func (d *Driver) Drive(ctx context.Context, a db.Action) (db.Action, error) {
	steps, err := d.store.Steps(ctx, a.ID)
	if err != nil {
		return a, fmt.Errorf("load steps: %w", err)
	}
	needsOperator := false
	var required *db.Step
	for i := range steps {
		s := &steps[i]
		if s.Required {
			required = s
		} else if required != nil && required.State != db.StepSucceeded {
			break // follow-ups wait for the write they follow
		}
		if s.State == db.StepSucceeded || s.State == db.StepRejected || s.NextCheckAt.After(time.Now()) {
			if s.Required && s.State != db.StepSucceeded && s.State != db.StepRejected {
				break
			}
			continue
		}
		stuck, err := d.advance(ctx, a, s)
		if errors.Is(err, errMoved) {
			// Another driver holds the step now; it settles the action.
			d.log.Info().Str("action_id", a.ID.String()).Str("step", s.Name).Msg("step moved by another driver; leaving it")
			return d.store.ActionByID(ctx, a.TenantID, a.ID)
		}
		if err != nil {
			return a, err
		}
		needsOperator = needsOperator || stuck
		if s.Required && s.State != db.StepSucceeded {
			break
		}
	}
	if err := d.settle(ctx, a, required, needsOperator); err != nil {
		return a, err
	}
	return d.store.ActionByID(ctx, a.TenantID, a.ID)
}

// settle records the action's outcome once its required step is resolved.
func (d *Driver) settle(ctx context.Context, a db.Action, required *db.Step, needsOperator bool) error {
	var res idem.Result
	var err error
	switch {
	case required == nil:
		return d.store.Release(ctx, a.ID)
	case required.State == db.StepSucceeded && a.State != db.Completed:
		res, err = d.ops.Confirmed(a, provider.Record{ID: required.ProviderRef, ExternalRef: required.ExternalRef, Status: "committed"})
	case required.State == db.StepRejected && a.State != db.Completed:
		res, err = op.Reject(required.RejectCode, map[string]string{"provider_code": required.RejectCode})
	case a.State == db.Completed:
		return d.store.Release(ctx, a.ID) // only follow-ups moved
	default:
		if err := d.store.MarkUnknown(ctx, a.ID); err != nil {
			return err
		}
		if needsOperator {
			return d.store.SetNeedsOperator(ctx, a.ID)
		}
		return d.store.Release(ctx, a.ID)
	}
	if err != nil {
		return err
	}
	return d.store.InTx(ctx, func(tx *db.Tx) error {
		if err := tx.ResolveAction(ctx, a.ID, db.Completion{
			Outcome: res.Outcome, Reason: res.Reason, Status: res.Status, ResourceID: res.ResourceID, Result: res.Body,
		}); err != nil {
			return err
		}
		return tx.AddEvent(ctx, a.ID, "completed", required.Name, map[string]string{"outcome": string(res.Outcome), "reason": res.Reason})
	})
}

// advance sends a step or checks it, records what was learned and reports
// whether the step needs an operator.
func (d *Driver) advance(ctx context.Context, a db.Action, s *db.Step) (needsOperator bool, err error) {
	p, ok := d.providers.Remote(s.Capability)
	if !ok {
		return d.inconclusive(ctx, a, s, "no remote provider is configured for "+s.Capability)
	}
	t := p.Traits()
	now := time.Now()
	if s.State == db.StepPending {
		return false, d.send(ctx, a, s, p)
	}
	// Unknown: the write may exist. A provider that honours keys
	// deduplicates a re-send within its retention, measured from the claim
	// (the earliest the key could have been used).
	if t.HonoursKeys && now.Before(a.CreatedAt.Add(t.KeyRetention)) {
		return false, d.send(ctx, a, s, p)
	}
	rec, found, err := d.lookup(ctx, p, s)
	switch {
	case err != nil:
		return d.inconclusive(ctx, a, s, "lookup failed: "+errText(err))
	case found && rec.Status == "rejected":
		return false, d.record(ctx, a, s, "evidence", db.StepUpdate{State: db.StepRejected, RejectCode: rec.Code}, rec.ID)
	case found:
		return false, d.record(ctx, a, s, "evidence", db.StepUpdate{State: db.StepSucceeded, ProviderRef: rec.ID}, rec.ID)
	case t.HonoursKeys:
		// Past the key's retention the provider no longer protects a
		// re-send, and a local key never extends that protection.
		d.observe(s.Capability, "needs_operator", 0)
		return true, d.record(ctx, a, s, "needs_operator", db.StepUpdate{
			State: db.StepUnknown, Checks: s.Checks + 1, LastError: "not found past the provider's key retention",
			NextCheckAt: now.Add(d.cfg.MaxBackoff),
		}, "")
	case t.AuthoritativeLookup && s.LastSentAt != nil && now.After(s.LastSentAt.Add(t.VisibilityDelay)):
		// An authoritative "not found" after the visibility delay: the
		// write does not exist, so sending it is the first write.
		return false, d.send(ctx, a, s, p)
	default:
		return d.inconclusive(ctx, a, s, "not found yet; the lookup is not conclusive")
	}
}

func (d *Driver) lookup(ctx context.Context, p provider.Provider, s *db.Step) (provider.Record, bool, error) {
	if p.Traits().HonoursKeys {
		return p.LookupByKey(ctx, s.Capability, s.ProviderKey)
	}
	recs, err := p.LookupByRef(ctx, s.Capability, s.ExternalRef)
	if err != nil || len(recs) == 0 {
		return provider.Record{}, false, err
	}
	return recs[0], true, nil
}

// errMoved: the step changed since this driver read it (another driver
// sent or checked it), so this driver must not send it.
var errMoved = errors.New("the step was moved by another driver")

// send dispatches the step with its persisted provider key. It first
// records that the step may be sent from now on, if nobody moved the step
// since it was read: drivers whose leases overlapped (a worker or a
// reconciler that outlived its lease, and the one that took over) never
// both send, and one that dies mid-send leaves the step unknown with a
// last_sent_at that covers its send, for recovery by evidence.
func (d *Driver) send(ctx context.Context, a db.Action, s *db.Step, p provider.Provider) error {
	ok, err := d.store.BeginSend(ctx, a.ID, s.Name, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("begin sending step %s: %w", s.Name, err)
	}
	if !ok {
		return errMoved
	}
	start := time.Now()
	rec, err := p.Write(ctx, provider.Write{
		Capability: s.Capability, Key: s.ProviderKey, ExternalRef: s.ExternalRef,
		Operation: s.Operation, Payload: s.Payload,
	})
	class := "succeeded"
	if err != nil {
		class = provider.Classify(err)
	}
	d.observe(s.Capability, class, time.Since(start))
	u := db.StepUpdate{Sent: class != "not_sent", Checks: s.Checks, NextCheckAt: time.Now().Add(d.backoff(s.Attempts))}
	var rej *provider.Rejected
	switch {
	case err == nil:
		u.State, u.ProviderRef = db.StepSucceeded, rec.ID
	case errors.As(err, &rej):
		u.State, u.RejectCode = db.StepRejected, rej.Code
	case class == "not_sent":
		u.State, u.LastError = db.StepPending, errText(err)
	default:
		u.State, u.LastError = db.StepUnknown, errText(err)
	}
	return d.record(ctx, a, s, "sent:"+class, u, rec.ID)
}

func (d *Driver) inconclusive(ctx context.Context, a db.Action, s *db.Step, why string) (bool, error) {
	checks := s.Checks + 1
	stuck := checks >= d.cfg.MaxChecks || time.Since(a.CreatedAt) > d.cfg.MaxAge
	kind := "inconclusive"
	if stuck {
		kind = "needs_operator"
	}
	d.observe(s.Capability, kind, 0)
	return stuck, d.record(ctx, a, s, kind, db.StepUpdate{
		State: s.State, Checks: checks, LastError: why, NextCheckAt: time.Now().Add(d.backoff(checks)),
	}, "")
}

// record stores a step update and its timeline event, and reflects it in s.
func (d *Driver) record(ctx context.Context, a db.Action, s *db.Step, kind string, u db.StepUpdate, ref string) error {
	if u.ProviderRef == "" && u.State == db.StepSucceeded {
		u.ProviderRef = ref
	}
	err := d.store.InTx(ctx, func(tx *db.Tx) error {
		if err := tx.RecordStep(ctx, a.ID, s.Name, u); err != nil {
			return err
		}
		return tx.AddEvent(ctx, a.ID, kind, s.Name, map[string]any{
			"state": u.State, "provider_ref": u.ProviderRef, "reject_code": u.RejectCode, "error": u.LastError,
		})
	})
	if err != nil {
		return fmt.Errorf("record step %s: %w", s.Name, err)
	}
	d.log.Info().Str("action_id", a.ID.String()).Str("step", s.Name).Str("capability", s.Capability).
		Str("provider_ref", u.ProviderRef).Str("event", kind).Str("state", u.State).Msg("step")
	s.State, s.ProviderRef, s.RejectCode, s.Checks = u.State, u.ProviderRef, u.RejectCode, u.Checks
	if u.Sent {
		now := time.Now()
		s.LastSentAt = &now
		s.Attempts++
	}
	s.NextCheckAt = u.NextCheckAt
	return nil
}

func (d *Driver) backoff(n int) time.Duration {
	b := d.cfg.Backoff
	for i := 0; i < n && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxBackoff)
}

func (d *Driver) observe(capability, result string, took time.Duration) {
	if d.Observe != nil {
		d.Observe(capability, result, took)
	}
}

// errText keeps an error for the ledger; provider errors never carry
// customer data (they describe transport failures and codes).
func errText(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
