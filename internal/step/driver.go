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
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/telemetry"
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
	// "not_sent", "ambiguous", "waiting", "inconclusive", "needs_operator").
	Observe func(ctx context.Context, capability, result string, took time.Duration)
	// Local serves the writes before an action's required one (see
	// op.Befores) whose capability no remote provider serves: an
	// SMS queued in oncecall's outbox.
	Local provider.Set
	// Accounts, when set, reaches the providers stored with tenants (a
	// tenant's own calendar) that steps are planned for by name.
	Accounts provider.Accounts
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

// providerOf is the provider this process sends a write of capability
// to: its remote provider, or, for a write before the action's required
// one that no remote provider serves, the local one.
func (d *Driver) providerOf(capability string, before bool) (provider.Provider, bool) {
	p, ok := d.providers.Remote(capability)
	if !ok && before {
		p, ok = d.Local.Remote(capability)
	}
	return p, ok
}

// Plan names, on the steps of an action being claimed (in order), the
// provider each is sent to (provider.IdentityOf), from this process's
// configuration; a step no provider here serves is left unnamed, and one
// the operation already named (a tenant's own calendar) is left as it is.
// The Store calls it for every step it records (db.Store.SetStepPlanner).
func (d *Driver) Plan(steps []db.NewStep) {
	first := slices.IndexFunc(steps, func(s db.NewStep) bool { return s.Required })
	for i := range steps {
		if steps[i].ProviderKind != "" {
			continue
		}
		if p, ok := d.providerOf(steps[i].Capability, i < first); ok {
			id := provider.IdentityOf(p)
			steps[i].ProviderKind, steps[i].ProviderAccount = id.Kind, id.Account
		}
	}
}

// Serves lists the providers this process is configured for, by
// capability (the local ones too, and the tenants' own it can reach): the
// steps the reconciler's leases may take (db.Store.LeaseDue).
func (d *Driver) Serves(ctx context.Context) ([]db.StepProvider, error) {
	var out []db.StepProvider
	for _, set := range []provider.Set{d.providers, d.Local} {
		for capability := range set {
			if p, ok := set.Remote(capability); ok {
				id := provider.IdentityOf(p)
				out = append(out, db.StepProvider{Capability: capability, Kind: id.Kind, Account: id.Account})
			}
		}
	}
	if d.Accounts == nil {
		return out, nil
	}
	reached, err := d.Accounts.Reachable(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the accounts this server reaches: %w", err)
	}
	for _, r := range reached {
		out = append(out, db.StepProvider{Capability: r.Capability, Kind: r.Kind, Account: r.Account})
	}
	return out, nil
}

// serving is the provider of step s if this process is configured for the
// one s was planned for (its kind and account), or reaches it among the
// tenants' own (Accounts); a step claimed before steps named their
// provider is served as it was then (providerOf).
func (d *Driver) serving(ctx context.Context, s *oncecall.Step, before bool) (provider.Provider, bool, error) {
	if s.ProviderKind == "" {
		p, ok := d.providerOf(s.Capability, before)
		return p, ok, nil
	}
	want := provider.Identity{Kind: s.ProviderKind, Account: s.ProviderAccount}
	for _, set := range []provider.Set{d.providers, d.Local} {
		if p, ok := set.Remote(s.Capability); ok && provider.IdentityOf(p) == want {
			return p, true, nil
		}
	}
	if d.Accounts == nil {
		return nil, false, nil
	}
	return d.Accounts.Reach(ctx, s.Capability, want)
}

// Drive advances every due step of a, in order, and settles the action:
// completed when its required step is resolved, unknown otherwise, and
// flagged for an operator when recovery has run out of evidence. owner is
// the token of the caller's lease on the action: every change Drive makes is
// fenced by it, so a caller whose lease was taken over changes nothing.
func (d *Driver) Drive(ctx context.Context, a oncecall.Action, owner uuid.UUID) (oncecall.Action, error) {
	steps, err := d.store.Steps(ctx, a.ID)
	if err != nil {
		return a, fmt.Errorf("load steps: %w", err)
	}
	needsOperator := false
	var required, refused *oncecall.Step
	first := slices.IndexFunc(steps, func(s oncecall.Step) bool { return s.Required })
	for i := range steps {
		s := &steps[i]
		// A write before the required one (op.Befores) waits for the
		// one before it; a follow-up waits for the required write.
		before := i < first
		if s.Required {
			required = s
		} else if required != nil && required.State != oncecall.StepSucceeded {
			break // follow-ups wait for the write they follow
		}
		if !resolved(s) && s.Due() {
			p, ok, err := d.serving(ctx, s, before)
			if err != nil {
				return a, fmt.Errorf("step %s: reach its provider: %w", s.Name, err)
			}
			if !ok {
				// Planned for a provider this process is not configured
				// for: left as it is to a server that is (or an operator).
				d.log.Info().Str("action_id", a.ID.String()).Str("step", s.Name).Str("provider", s.ProviderKind).
					Msg("step planned for a provider not configured here; leaving it")
				break
			}
			if s.Payload, err = withResults(s.Payload, steps[:i]); err != nil {
				return a, fmt.Errorf("step %s: %w", s.Name, err)
			}
			stuck, err := d.advance(ctx, a, s, owner, p)
			if errors.Is(err, errMoved) {
				// Another driver holds the action now, or the evidence this one
				// acted on expired: whoever holds the lease settles it.
				d.log.Info().Str("action_id", a.ID.String()).Str("step", s.Name).Msg("step moved or lease lost; leaving it")
				return d.moved(ctx, a)
			}
			if err != nil {
				return a, err
			}
			needsOperator = needsOperator || stuck
		}
		if (s.Required || before) && s.State != oncecall.StepSucceeded {
			if before && s.State == oncecall.StepRejected {
				refused, required = s, &steps[first]
			}
			break
		}
	}
	if err := d.settle(ctx, a, owner, required, refused, needsOperator); err != nil {
		return a, err
	}
	return d.store.ActionByID(ctx, a.TenantID, a.ID)
}

// moved reads a after another driver took it over. A completion read here
// is that driver's, whose COMMIT may have had its wait for the synchronous
// standby cancelled: it is returned only once known to be on the standbys
// (db.Store.Replicated), so that a request waiting on this driver does not
// confirm what a failover would lose. Until then the caller gets an error
// and a stays as this driver last knew it.
func (d *Driver) moved(ctx context.Context, a oncecall.Action) (oncecall.Action, error) {
	now, err := d.store.ActionByID(ctx, a.TenantID, a.ID)
	if err != nil || now.State != oncecall.Completed {
		return now, err
	}
	if err := d.store.Replicated(ctx); err != nil {
		return a, err
	}
	return now, nil
}

func resolved(s *oncecall.Step) bool {
	return s.State == oncecall.StepSucceeded || s.State == oncecall.StepRejected
}

// settle records the action's outcome once its required step is resolved,
// or a write before it was refused, and otherwise ends the lease (a running
// action becomes unknown).
func (d *Driver) settle(ctx context.Context, a oncecall.Action, owner uuid.UUID, required, refused *oncecall.Step, needsOperator bool) error {
	var res idem.Result
	var err error
	decided := required
	switch {
	case refused != nil && a.State != oncecall.Completed:
		// The required write is never made: nothing it needed exists.
		decided = refused
		res, err = op.Reject(refused.RejectCode, map[string]string{"provider_code": refused.RejectCode, "step": refused.Name})
	case required != nil && required.State == oncecall.StepSucceeded && a.State != oncecall.Completed:
		res, err = d.ops.Confirmed(a, provider.Record{
			ID: required.ProviderRef, ExternalRef: required.ExternalRef, Status: "committed", Data: required.Result,
		})
	case required != nil && required.State == oncecall.StepRejected && a.State != oncecall.Completed:
		res, err = op.Reject(required.RejectCode, map[string]string{"provider_code": required.RejectCode})
	default:
		// Unresolved (unknown from now on), or completed with only
		// follow-ups moved.
		if ok, err := d.store.ReleaseAction(ctx, a.ID, owner, needsOperator); err != nil || !ok {
			return leaseLost(err, ok)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return d.store.InTx(ctx, func(tx *db.Tx) error {
		if refused != nil && required != nil && !resolved(required) {
			// The required step will never be sent: it is closed with the
			// refusal, so no pass picks it up again.
			ok, err := tx.RecordStep(ctx, a.ID, required.Name, owner, required.Version, db.StepUpdate{
				State: oncecall.StepRejected, RejectCode: refused.RejectCode, Checks: required.Checks,
				LastError: "not sent: step " + refused.Name + " was refused",
			})
			if err != nil || !ok {
				return leaseLost(err, ok)
			}
		}
		ok, err := tx.ResolveAction(ctx, a.ID, owner, db.Completion{
			Outcome: res.Outcome, Reason: res.Reason, Status: res.Status, ResourceID: res.ResourceID, Result: res.Body,
		}, needsOperator)
		if err != nil || !ok {
			return leaseLost(err, ok)
		}
		if err := d.ops.Settle(ctx, tx, a, res, decided.ProviderRef); err != nil {
			return fmt.Errorf("settle %s locally: %w", a.Operation, err)
		}
		return tx.AddEvent(ctx, a.ID, "completed", decided.Name, map[string]string{"outcome": string(res.Outcome), "reason": res.Reason})
	})
}

// leaseLost is err, or errMoved when a fenced statement changed nothing.
func leaseLost(err error, ok bool) error {
	if err == nil && !ok {
		return errMoved
	}
	return err
}

// sendWindow is how long a write to a provider with traits t may be in
// flight: its call timeout and a margin for recording the answer. A
// driver's lease covers it from the moment it marks the step sent.
func sendWindow(t provider.Traits) time.Duration { return t.CallTimeout() + time.Second }

// advance sends a step to p, its provider, or checks it there, records
// what was learned and reports whether the step needs an operator. Every
// time comparison uses the database's clock as read with the step;
// BeginSend checks the same conditions again, in SQL, at the instant it
// marks the step sent.
func (d *Driver) advance(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, p provider.Provider) (needsOperator bool, err error) {
	t := p.Traits()
	if s.State == oncecall.StepPending {
		return d.send(ctx, a, s, owner, p, db.Send{})
	}
	// Unknown: the write may exist. A provider that honours keys
	// deduplicates a re-send within its retention, measured from the claim
	// (the earliest the key could have been used), if the re-send can
	// arrive before the retention ends.
	window := sendWindow(t)
	if t.HonoursKeys && s.DBNow.Add(window).Before(s.ActionCreatedAt.Add(t.KeyRetention)) {
		return d.send(ctx, a, s, owner, p, db.Send{Retention: t.KeyRetention})
	}
	lookupCtx, span := telemetry.StartStep(ctx, "lookup", s.Name, s.Capability, s.Attempts)
	rec, found, err := d.lookup(lookupCtx, p, s)
	telemetry.EndStep(span, lookupResult(found, err), err != nil && !errors.Is(err, provider.ErrWaiting))
	settle := t.CallTimeout() + t.VisibilityDelay
	switch {
	case errors.Is(err, provider.ErrWaiting):
		return d.waiting(ctx, a, s, owner, db.StepUpdate{State: s.State, Checks: s.Checks, Backoff: d.backoff(s.Attempts)})
	case errors.Is(err, provider.ErrConflict), errors.Is(err, provider.ErrKeyConflict):
		// What the provider holds contradicts the write: no check or
		// re-send can change that.
		d.observe(ctx, s.Capability, "needs_operator", 0)
		return true, d.record(ctx, a, s, owner, "needs_operator", db.StepUpdate{
			State: s.State, Checks: s.Checks + 1, LastError: errText(err), Backoff: d.cfg.MaxBackoff,
		}, "")
	case errors.Is(err, provider.ErrLookalike):
		// Neither found nor absent: never a re-send; checked again (a
		// notice may name the write) until the operator's turn.
		return d.inconclusive(ctx, a, s, owner, errText(err))
	case err != nil:
		return d.inconclusive(ctx, a, s, owner, "lookup failed: "+errText(err))
	case found && rec.Status == "rejected":
		return false, d.record(ctx, a, s, owner, "evidence", db.StepUpdate{State: oncecall.StepRejected, RejectCode: rec.Code, Checks: s.Checks}, rec.ID)
	case found:
		u := db.StepUpdate{State: oncecall.StepSucceeded, ProviderRef: rec.ID, Checks: s.Checks, ProviderUntil: rec.Until, Result: rec.Data}
		if _, searched := p.(provider.Finder); !searched {
			return false, d.record(ctx, a, s, owner, "evidence", u, rec.ID)
		}
		// A write found by what it carries is this step's only if no other
		// step holds it: the first to claim its reference records it.
		err := d.recordIf(ctx, a, s, owner, "evidence", u, rec.ID, func(tx *db.Tx) error {
			held, err := tx.ClaimProviderRef(ctx, s.Capability, rec.ID, a.TenantID, a.ID, s.Name)
			if err == nil && held {
				err = errHeld
			}
			return err
		})
		if errors.Is(err, errHeld) {
			return d.inconclusive(ctx, a, s, owner, "the write found is another step's")
		}
		return false, err
	case t.HonoursKeys:
		// Past the key's retention the provider no longer protects a
		// re-send, and a local key never extends that protection.
		d.observe(ctx, s.Capability, "needs_operator", 0)
		return true, d.record(ctx, a, s, owner, "needs_operator", db.StepUpdate{
			State: oncecall.StepUnknown, Checks: s.Checks + 1, LastError: "not found past the provider's key retention",
			Backoff: d.cfg.MaxBackoff,
		}, "")
	case t.AuthoritativeLookup && s.LastSentAt != nil && s.DBNow.After(s.LastSentAt.Add(settle)):
		// An authoritative "not found" once the last send has settled (its
		// call timed out and the provider's visibility delay passed): the
		// write does not exist, so sending it is the first write.
		return d.send(ctx, a, s, owner, p, db.Send{Settle: settle})
	default:
		return d.inconclusive(ctx, a, s, owner, "not found yet; the lookup is not conclusive")
	}
}

func (d *Driver) lookup(ctx context.Context, p provider.Provider, s *oncecall.Step) (provider.Record, bool, error) {
	if wl, ok := p.(provider.WriteLookup); ok {
		return wl.LookupWrite(ctx, provider.Write{
			Capability: s.Capability, Key: s.ProviderKey, ExternalRef: s.ExternalRef, Operation: s.Operation, Payload: s.Payload,
		})
	}
	if p.Traits().HonoursKeys {
		return p.LookupByKey(ctx, s.Capability, s.ProviderKey)
	}
	if f, ok := p.(provider.Finder); ok {
		return f.Find(ctx, provider.Query{
			Write: provider.Write{
				Capability: s.Capability, Key: s.ProviderKey, ExternalRef: s.ExternalRef, Operation: s.Operation, Payload: s.Payload,
			},
			ProviderRef: s.ProviderRef, Since: s.ActionCreatedAt,
			Taken: func(ctx context.Context, id string) (bool, error) {
				return d.store.ProviderRefHeld(ctx, s.Capability, id, s.ActionID, s.Name)
			},
		})
	}
	recs, err := p.LookupByRef(ctx, s.Capability, s.ExternalRef)
	if err != nil || len(recs) == 0 {
		return provider.Record{}, false, err
	}
	return recs[0], true, nil
}

// errMoved: the step or the action changed since this driver read it
// (another driver took the lease, sent or checked the step), or the
// evidence it was about to act on expired: this driver must not act on it.
var errMoved = errors.New("the step was moved by another driver")

// errHeld: the write a search found is held by another step.
var errHeld = errors.New("the write found is another step's")

// send dispatches the step with its persisted provider key, relying on the
// evidence in ev (none for a pending step, which was certainly never sent).
// It first marks the step as possibly sent, fenced by the lease and the
// step's version and with ev checked against the database's clock, and
// extends the lease over the send: drivers whose leases overlapped never
// both send, and one that dies mid-send leaves the step unknown, for
// recovery by evidence.
func (d *Driver) send(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, p provider.Provider, ev db.Send) (needsOperator bool, err error) {
	t := p.Traits()
	ev.Action, ev.Name, ev.Owner, ev.Version, ev.Window = a.ID, s.Name, owner, s.Version, sendWindow(t)
	id := provider.IdentityOf(p)
	ev.ProviderKind, ev.ProviderAccount = id.Kind, id.Account
	start := time.Now()
	ok, err := d.store.BeginSend(ctx, ev)
	if err != nil {
		return false, fmt.Errorf("begin sending step %s: %w", s.Name, err)
	}
	if !ok {
		return false, errMoved
	}
	s.Version++
	// The lease covers the send window from the database's now, which is
	// no earlier than start: a call bounded from start ends inside it.
	callCtx, cancel := context.WithDeadline(ctx, start.Add(t.CallTimeout()))
	callCtx, span := telemetry.StartStep(callCtx, "send", s.Name, s.Capability, s.Attempts)
	rec, err := p.Write(callCtx, provider.Write{
		Capability: s.Capability, Key: s.ProviderKey, ExternalRef: s.ExternalRef,
		Operation: s.Operation, Payload: s.Payload,
	})
	cancel()
	class := "succeeded"
	if err != nil {
		class = provider.Classify(err)
	}
	telemetry.EndStep(span, class, class != "succeeded" && class != "rejected")
	d.observe(ctx, s.Capability, class, time.Since(start))
	resend := ev.Retention > 0 || ev.Settle > 0
	u := db.StepUpdate{Sent: class != "not_sent", Checks: s.Checks, Backoff: d.backoff(s.Attempts)}
	var rej *provider.Rejected
	switch {
	case err == nil:
		u.State, u.ProviderRef, u.ProviderUntil, u.Result = oncecall.StepSucceeded, rec.ID, rec.Until, rec.Data
	case errors.As(err, &rej):
		u.State, u.RejectCode = oncecall.StepRejected, rej.Code
	case class == "not_sent":
		u.State, u.LastError = oncecall.StepPending, errText(err)
	case class == "waiting":
		// Asked, and not decided yet: checked again with backoff.
		u.State = oncecall.StepUnknown
		return d.waiting(ctx, a, s, owner, u)
	case class == "key_conflict" || class == "conflict":
		// The provider holds another write under this key, or one that
		// contradicts this write: no re-send can tell what became of it.
		u.State, u.LastError, u.Checks, u.Backoff = oncecall.StepUnknown, errText(err), s.Checks+1, d.cfg.MaxBackoff
		needsOperator = true
	default:
		u.State, u.LastError = oncecall.StepUnknown, errText(err)
		if resend {
			// A re-send that is answered ambiguously again is a check that
			// found nothing: it counts towards the operator.
			u.Checks = s.Checks + 1
			needsOperator = d.outOfChecks(s, u.Checks)
		}
	}
	if needsOperator {
		d.observe(ctx, s.Capability, "needs_operator", 0)
	}
	return needsOperator, d.record(ctx, a, s, owner, "sent:"+class, u, rec.ID)
}

// outOfChecks reports whether a step with checks inconclusive checks, or
// as old as its action, is an operator's to decide.
func (d *Driver) outOfChecks(s *oncecall.Step, checks int) bool {
	return checks >= d.cfg.MaxChecks || s.DBNow.Sub(s.ActionCreatedAt) > d.cfg.MaxAge
}

// waiting records a check of a write whose outcome someone else decides
// later (provider.ErrWaiting): it does not count towards the operator, who
// is called only when the action is older than MaxAge.
func (d *Driver) waiting(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, u db.StepUpdate) (bool, error) {
	stuck := s.DBNow.Sub(s.ActionCreatedAt) > d.cfg.MaxAge
	kind := "waiting"
	if stuck {
		kind, u.LastError = "needs_operator", "still not decided past the longest an action may wait"
	}
	d.observe(ctx, s.Capability, kind, 0)
	return stuck, d.record(ctx, a, s, owner, kind, u, "")
}

func (d *Driver) inconclusive(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, why string) (bool, error) {
	checks := s.Checks + 1
	stuck := d.outOfChecks(s, checks)
	kind := "inconclusive"
	if stuck {
		kind = "needs_operator"
	}
	d.observe(ctx, s.Capability, kind, 0)
	return stuck, d.record(ctx, a, s, owner, kind, db.StepUpdate{
		State: s.State, Checks: checks, LastError: why, Backoff: d.backoff(checks),
	}, "")
}

// record stores a step update and its timeline event, fenced by the lease
// and the step's version, and reflects it in s.
func (d *Driver) record(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, kind string, u db.StepUpdate, ref string) error {
	return d.recordIf(ctx, a, s, owner, kind, u, ref, nil)
}

// recordIf is record after guard, in the same transaction: a guard's error
// records nothing and is returned.
func (d *Driver) recordIf(ctx context.Context, a oncecall.Action, s *oncecall.Step, owner uuid.UUID, kind string, u db.StepUpdate, ref string, guard func(*db.Tx) error) error {
	if u.ProviderRef == "" && u.State == oncecall.StepSucceeded {
		u.ProviderRef = ref
	}
	err := d.store.InTx(ctx, func(tx *db.Tx) error {
		if guard != nil {
			if err := guard(tx); err != nil {
				return err
			}
		}
		ok, err := tx.RecordStep(ctx, a.ID, s.Name, owner, s.Version, u)
		if err != nil || !ok {
			return leaseLost(err, ok)
		}
		return tx.AddEvent(ctx, a.ID, kind, s.Name, map[string]any{
			"state": u.State, "provider_ref": u.ProviderRef, "reject_code": u.RejectCode, "error": u.LastError,
		})
	})
	if errors.Is(err, errMoved) || errors.Is(err, errHeld) {
		return err
	}
	if err != nil {
		return fmt.Errorf("record step %s: %w", s.Name, err)
	}
	d.log.Info().Str("action_id", a.ID.String()).Str("step", s.Name).Str("capability", s.Capability).
		Str("provider_ref", u.ProviderRef).Str("event", kind).Str("state", u.State).Msg("step")
	s.State, s.ProviderRef, s.RejectCode, s.Checks = u.State, u.ProviderRef, u.RejectCode, u.Checks
	if u.Result != nil {
		s.Result = u.Result
	}
	s.Version++
	if u.Sent {
		s.Attempts++
	}
	s.NextCheckAt = s.DBNow.Add(u.Backoff)
	return nil
}

// lookupResult names what a lookup found, for its span.
func lookupResult(found bool, err error) string {
	switch {
	case errors.Is(err, provider.ErrWaiting):
		return "waiting"
	case err != nil:
		return "failed"
	case found:
		return "found"
	}
	return "not_found"
}

func (d *Driver) backoff(n int) time.Duration {
	b := d.cfg.Backoff
	for i := 0; i < n && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxBackoff)
}

func (d *Driver) observe(ctx context.Context, capability, result string, took time.Duration) {
	if d.Observe != nil {
		d.Observe(ctx, capability, result, took)
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
