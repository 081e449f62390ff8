package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
)

// JobsConfig tunes the River clients that work oncecall's durable jobs
// (today the late results' deliveries), one per cluster.
type JobsConfig struct {
	// LateWorkers bounds how many late results this process sends at once.
	// Default 8.
	LateWorkers int
	// PollInterval is how often an idle client looks for new jobs (River
	// runs poll-only here: no LISTEN/NOTIFY is needed). Default 250ms.
	PollInterval time.Duration
	// RescueAfter is how long a job may stay running before another
	// replica takes it again (its worker died with its process). Default
	// 2 minutes, above the delivery's 30s timeout.
	RescueAfter time.Duration
	// Disabled keeps this process from working jobs (another replica
	// does); jobs are still queued.
	Disabled bool
}

// newJobs is the River client that works the jobs of one cluster's pool,
// with the workers the cluster's router registered.
func newJobs(pool *pgxpool.Pool, workers *river.Workers, cfg JobsConfig, log zerolog.Logger) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:               map[string]river.QueueConfig{db.LateQueue: {MaxWorkers: cmp.Or(cfg.LateWorkers, 8)}},
		Workers:              workers,
		PollOnly:             true,
		FetchPollInterval:    cmp.Or(cfg.PollInterval, 250*time.Millisecond),
		FetchCooldown:        50 * time.Millisecond,
		RescueStuckJobsAfter: cmp.Or(cfg.RescueAfter, 2*time.Minute),
		// River's own logs: its warnings and errors, with oncecall's.
		Logger: slog.New(zerolog.NewSlogHandler(log.With().Str("component", "jobs").Logger().Level(zerolog.WarnLevel))),
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	return c, nil
}

// runJobs works jobs until ctx ends, then lets the running ones finish
// within the shutdown's own deadline.
func runJobs(ctx context.Context, c *river.Client[pgx.Tx], stop time.Duration) error {
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), stop)
	defer cancel()
	if err := c.Stop(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop job queue: %w", err)
	}
	return nil
}

// jobClients makes the River client that works the jobs of each cluster
// (home's and Config.Clusters'), with the workers its router registered.
func (m *Main) jobClients(home *cluster) error {
	for _, c := range append([]*cluster{home}, m.extra...) {
		var err error
		if c.jobs, err = newJobs(c.pool, c.workers, m.cfg.Jobs, m.cfg.Log); err != nil {
			return err
		}
	}
	m.jobs = home.jobs
	return nil
}
