package app

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/oncecall/oncecall/internal/prune"
	"github.com/oncecall/oncecall/reconcile"
)

// Serve serves until ctx is done, then drains in-flight requests. While it
// serves, the pruner runs every PruneInterval.
func (m *Main) Serve(ctx context.Context) error {
	home := &cluster{store: m.store, core: m.core, reconciler: m.reconciler, jobs: m.jobs}
	all := append([]*cluster{home}, m.extra...)
	if m.cfg.PruneInterval > 0 {
		pruneCtx, stopPrune := context.WithCancel(ctx)
		var pruned sync.WaitGroup
		defer func() { stopPrune(); pruned.Wait() }()
		for _, c := range all {
			pc := m.cfg.Prune
			pc.Pruned, pc.Log = m.metrics.Pruned, m.cfg.Log
			p := prune.New(c.store, pc)
			pruned.Go(func() { p.Every(pruneCtx, m.cfg.PruneInterval, c.store.Now) })
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- m.srv.Serve(m.ln) }()
	var reconciled sync.WaitGroup
	rctx, stopReconciler := context.WithCancel(ctx)
	if !m.cfg.ReconcileDisabled {
		for _, c := range all {
			reconciled.Go(func() {
				c.reconciler.Run(rctx) //nolint:errcheck // returns nil when rctx ends; logs its own failures
			})
		}
	}
	defer reconciled.Wait()
	defer stopReconciler()
	// The durable jobs stop after the requests drained (a late result
	// queued by the last of them is worked by this or another replica).
	var worked sync.WaitGroup
	jctx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	if !m.cfg.Jobs.Disabled {
		for _, c := range all {
			worked.Go(func() {
				if err := runJobs(jctx, c.jobs, m.cfg.ShutdownTimeout); err != nil {
					m.cfg.Log.Error().Err(err).Msg("job queue")
				}
			})
		}
	}
	defer worked.Wait()
	defer stopJobs()
	m.cfg.Log.Info().Str("addr", m.Addr()).Int("clusters", len(all)).Msg("serving")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.ShutdownTimeout)
	defer cancel()
	if err := m.srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("drain requests: %w", err)
	}
	// Remote writes that outlived their requests record their results
	// before the pools close.
	for _, c := range all {
		if err := c.core.Drain(shutdown); err != nil {
			return fmt.Errorf("drain remote writes: %w", err)
		}
	}
	return nil
}

// Reconciler is the running program's reconciler.
func (m *Main) Reconciler() *reconcile.Reconciler { return m.reconciler }

// Close releases the pool and stops the provider simulator and the
// embedded database.
func (m *Main) Close() error {
	if m.ln != nil {
		m.ln.Close()
	}
	if m.pool != nil {
		m.pool.Close()
	}
	for _, c := range m.extra {
		c.pool.Close()
	}
	err := m.closeSimulator()
	if m.pg != nil {
		return errors.Join(err, m.pg.Stop())
	}
	return err
}
