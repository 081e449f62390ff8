// Package reconcile finishes what requests could not: actions whose
// provider answer was lost (unknown steps), actions whose worker died
// (running past their lease), and follow-up steps still to send. Work is
// claimed with FOR UPDATE SKIP LOCKED and a lease, so any number of replicas
// can run it; a lease expiry is never taken as evidence of anything.
package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/telemetry"
)

// Config tunes the reconciler.
type Config struct {
	// Interval between passes. Default 2s.
	Interval time.Duration
	// Lease is how long a pass holds an action. Default 60s.
	Lease time.Duration
	// Batch is how many actions one pass leases at most. Default 50.
	Batch int
	// HoldWarning is how long before a payment hold's capture deadline
	// (Stripe's capture_before) the hold is flagged for an operator if no
	// charge has captured it. Default 24h.
	HoldWarning time.Duration
}

// Reconciler runs passes over unfinished actions.
type Reconciler struct {
	store  *db.Store
	driver *step.Driver
	cfg    Config
	log    zerolog.Logger
	// Observe, when set, counts results ("completed", "error").
	Observe func(result string)
}

// New returns a Reconciler with defaults applied to cfg.
func New(store *db.Store, driver *step.Driver, cfg Config, log zerolog.Logger) *Reconciler {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 50
	}
	if cfg.HoldWarning <= 0 {
		cfg.HoldWarning = 24 * time.Hour
	}
	return &Reconciler{store: store, driver: driver, cfg: cfg, log: log}
}

// Stats counts what a pass did.
type Stats struct {
	Abandoned int // running actions past their lease, now treated as possibly executed
	Due       int // actions with a step due for a send or a check
	Completed int // actions that reached a known outcome in this pass
	// HoldsFlagged counts payment holds near their capture deadline that
	// this pass put in the operator queue.
	HoldsFlagged int
	// HoldsExpired counts intents whose hold passed its capture deadline
	// uncaptured (the provider released it), marked expired by this pass.
	HoldsExpired int
}

// RunOnce makes one pass. The pass holds its leases under a token of its
// own; before driving each action it renews that action's lease, and an
// action another reconciler has taken over meanwhile is left to it.
func (r *Reconciler) RunOnce(ctx context.Context) (Stats, error) {
	var st Stats
	holds, err := r.store.FlagExpiringHolds(ctx, r.cfg.HoldWarning)
	if err != nil {
		return st, err
	}
	st.HoldsFlagged = len(holds)
	for _, h := range holds {
		r.log.Warn().Str("action_id", h.ActionID.String()).Str("payment_intent_id", h.IntentID.String()).
			Str("provider_ref", h.Ref).Time("capture_before", h.CaptureBefore).
			Msg("payment hold near its capture deadline: flagged for an operator")
	}
	if st.HoldsExpired, err = r.store.ExpireLapsedHolds(ctx); err != nil {
		return st, err
	}
	owner := uuid.New()
	// Only actions whose next step goes to a provider this process is
	// configured for: another server's are left to it.
	served, err := r.driver.Serves(ctx)
	if err != nil {
		return st, err
	}
	abandoned, err := r.store.LeaseAbandoned(ctx, owner, r.cfg.Lease, r.cfg.Batch, served)
	if err != nil {
		return st, err
	}
	due, err := r.store.LeaseDue(ctx, owner, r.cfg.Lease, r.cfg.Batch, served)
	if err != nil {
		return st, err
	}
	st.Abandoned, st.Due = len(abandoned), len(due)
	for _, l := range append(abandoned, due...) {
		held, err := r.store.RenewLease(ctx, l.ID, owner, r.cfg.Lease)
		if err != nil {
			return st, err
		}
		if !held {
			continue
		}
		a, err := r.store.ActionByID(ctx, l.TenantID, l.ID)
		if err != nil {
			return st, err
		}
		// A span of its own, linked to the request that left the action
		// unsettled when that request was traced.
		actx, span := telemetry.StartSettle(ctx, "reconcile", a.ID.String(), a.Operation, a.TraceContext)
		after, err := r.driver.Drive(actx, a, owner)
		if err != nil {
			telemetry.EndSettle(span, "", "error", "drive_failed")
			r.count("error")
			r.log.Error().Err(err).Str("action_id", a.ID.String()).Msg("reconcile action")
			continue
		}
		result := string(after.State)
		if a.State != oncecall.Completed && after.State == oncecall.Completed {
			st.Completed++
			r.count("completed")
		}
		if after.NeedsOperator {
			result = "needs_operator"
		}
		telemetry.EndSettle(span, string(after.Outcome), result, "")
	}
	return st, nil
}

// Run makes a pass every Interval until ctx is done.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		st, err := r.RunOnce(ctx)
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return nil
		case err != nil:
			r.log.Warn().Err(err).Msg("reconcile pass failed")
		case st.Abandoned+st.Due+st.HoldsFlagged+st.HoldsExpired > 0:
			r.log.Info().Int("abandoned", st.Abandoned).Int("due", st.Due).Int("completed", st.Completed).Int("holds_expired", st.HoldsExpired).Msg("reconcile pass")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *Reconciler) count(result string) {
	if r.Observe != nil {
		r.Observe(result)
	}
}
