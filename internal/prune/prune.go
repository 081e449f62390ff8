// Package prune owns retention: it clears the replayable bodies of completed
// actions after the response retention and deletes completed actions after
// the action retention, in small batches that never hold long locks.
// Unresolved actions (running, unknown, waiting for an operator) and business
// rows are never touched. It runs inside serve and as `oncecall prune`.
package prune

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
)

// Kinds of pruned data, as reported to Config.Pruned.
const (
	KindResponse = "response" // a replayable body cleared
	KindAction   = "action"   // a compact action deleted
)

// Config configures a Pruner.
type Config struct {
	// ResponseRetention is how long a completed action keeps its replayable
	// body. Default 24h.
	ResponseRetention time.Duration
	// ActionRetention is how long a completed action is kept at all; after
	// it, reusing its key is new work. Default 720h (30 days).
	ActionRetention time.Duration
	// BatchSize bounds the rows one statement touches. Default 1000.
	BatchSize int
	// Duty is the share of a run's time spent in statements, in (0, 1]:
	// after a batch that took d the pruner rests d×(1−Duty)/Duty before the
	// next, so that pruning leaves the database to the calls being served.
	// Default 0.1; 1 runs batch after batch.
	Duty float64
	// Pruned, when set, is told after every batch how many rows of a kind it
	// pruned (metrics).
	Pruned func(kind string, n int64)
	// Log receives one line per run that pruned something, and errors.
	Log zerolog.Logger
}

// Counts is what a run did (or, for a dry run, would do).
type Counts struct {
	Responses int64 // bodies cleared
	Actions   int64 // actions deleted
	Batches   int   // statements run
	// Busy is the time spent in statements, Rested the time spent between
	// them (Config.Duty).
	Busy, Rested time.Duration
}

// DefaultDuty is Config.Duty's default: a tenth of the time in statements.
// At 1,000 rows a batch in about 40 ms (docs/performance.md#pruning-during-load)
// that is some 2,500 rows a second, ten times what 10 million actions a day
// need.
const DefaultDuty = 0.1

// Pruner applies the retention to a store.
type Pruner struct {
	store *db.Store
	cfg   Config
}

// New returns a Pruner with defaults applied to cfg.
func New(store *db.Store, cfg Config) *Pruner {
	if cfg.ResponseRetention <= 0 {
		cfg.ResponseRetention = 24 * time.Hour
	}
	if cfg.ActionRetention <= 0 {
		cfg.ActionRetention = 30 * 24 * time.Hour
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.Duty <= 0 || cfg.Duty > 1 {
		cfg.Duty = DefaultDuty
	}
	return &Pruner{store: store, cfg: cfg}
}

// Run prunes everything due at now, batch by batch, until nothing is left.
// Actions are deleted before bodies are cleared, so no body is cleared from
// an action about to go. Rows locked by someone else are skipped; the next
// run takes them.
func (p *Pruner) Run(ctx context.Context, now time.Time) (Counts, error) {
	var c Counts
	n, err := p.drain(ctx, &c, KindAction, func(ctx context.Context) (int64, error) {
		return p.store.PruneActions(ctx, now, p.cfg.ActionRetention, p.cfg.BatchSize)
	})
	c.Actions = n
	if err != nil {
		return c, fmt.Errorf("prune actions: %w", err)
	}
	n, err = p.drain(ctx, &c, KindResponse, func(ctx context.Context) (int64, error) {
		return p.store.PruneResponses(ctx, now, p.cfg.ResponseRetention, p.cfg.BatchSize)
	})
	c.Responses = n
	if err != nil {
		return c, fmt.Errorf("prune response bodies: %w", err)
	}
	return c, nil
}

// drain repeats one batch statement until a batch comes back short,
// resting after each batch that leaves more (Config.Duty).
func (p *Pruner) drain(ctx context.Context, c *Counts, kind string, batch func(context.Context) (int64, error)) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		began := time.Now()
		n, err := batch(ctx)
		took := time.Since(began)
		c.Busy += took
		if err != nil {
			return total, err
		}
		c.Batches++
		total += n
		if n > 0 && p.cfg.Pruned != nil {
			p.cfg.Pruned(kind, n)
		}
		if n < int64(p.cfg.BatchSize) {
			return total, nil
		}
		if err := p.rest(ctx, c, took); err != nil {
			return total, err
		}
	}
}

// rest waits after a batch that took took, so that statements take
// Config.Duty of the time.
func (p *Pruner) rest(ctx context.Context, c *Counts, took time.Duration) error {
	if p.cfg.Duty >= 1 {
		return nil
	}
	d := time.Duration(float64(took) * (1 - p.cfg.Duty) / p.cfg.Duty)
	t := time.NewTimer(d)
	defer t.Stop()
	began := time.Now()
	select {
	case <-ctx.Done():
		c.Rested += time.Since(began)
		return ctx.Err()
	case <-t.C:
		c.Rested += time.Since(began)
		return nil
	}
}

// DryRun counts what Run at now would prune, changing nothing.
func (p *Pruner) DryRun(ctx context.Context, now time.Time) (Counts, error) {
	n, err := p.store.CountPrunable(ctx, now, p.cfg.ResponseRetention, p.cfg.ActionRetention)
	if err != nil {
		return Counts{}, fmt.Errorf("count prunable actions: %w", err)
	}
	return Counts{Responses: n.Responses, Actions: n.Actions}, nil
}

// Every runs the pruner at once and then every interval until ctx is done,
// reading the time from now (the database's clock in production). A failed
// run is logged and retried at the next tick; shutdown is not an error.
func (p *Pruner) Every(ctx context.Context, interval time.Duration, now func(context.Context) (time.Time, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		began := time.Now()
		var c Counts
		at, err := now(ctx)
		if err == nil {
			c, err = p.Run(ctx, at)
		}
		switch {
		case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return
		case err != nil:
			p.cfg.Log.Warn().Err(err).Int64("responses", c.Responses).Int64("actions", c.Actions).Msg("prune failed")
		case c.Responses > 0 || c.Actions > 0:
			p.cfg.Log.Info().Int64("responses", c.Responses).Int64("actions", c.Actions).
				Int("batches", c.Batches).Dur("busy", c.Busy).Dur("latency", time.Since(began)).Msg("pruned")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
