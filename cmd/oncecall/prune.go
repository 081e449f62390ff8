package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/prune"
)

// retentionFlags declares the retention settings serve and prune share.
func retentionFlags(fs *flag.FlagSet, envs *envDefaults) *retention {
	r := &retention{}
	fs.DurationVar(&r.response, "response-retention", envs.duration("RESPONSE_RETENTION", 24*time.Hour), "how long a completed action keeps its replayable body (env RESPONSE_RETENTION)")
	fs.DurationVar(&r.action, "action-retention", envs.duration("ACTION_RETENTION", 720*time.Hour), "how long a completed action is kept; after it, its key is free again (env ACTION_RETENTION)")
	fs.IntVar(&r.batch, "prune-batch", envs.int("ONCECALL_PRUNE_BATCH", 1000), "rows per pruning statement (env ONCECALL_PRUNE_BATCH)")
	fs.Float64Var(&r.duty, "prune-duty", envs.float("ONCECALL_PRUNE_DUTY", prune.DefaultDuty), "share of a prune's time spent in statements, resting between batches for the rest; 1 prunes batch after batch (env ONCECALL_PRUNE_DUTY)")
	return r
}

func pruneCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("prune", stderr)
	var envs envDefaults
	dryRun := fs.Bool("dry-run", false, "count what would be pruned, change nothing")
	keep := retentionFlags(fs, &envs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if envs.err != nil {
		return envs.err
	}
	if err := keep.check(); err != nil {
		return err
	}
	clusters, err := everyCluster()
	if err != nil {
		return err
	}
	for i, c := range clusters {
		migrateURL := ""
		if i == 0 { // DATABASE_URL's
			migrateURL = migrateDatabaseURL()
		}
		if err := pruneCluster(ctx, c.URL, migrateURL, *dryRun, keep, clusterPrefix(c, clusters), stdout); err != nil {
			return fmt.Errorf("%s%w", clusterPrefix(c, clusters), err)
		}
	}
	return nil
}

// pruneCluster prunes the database at url (migrated first, on migrateURL
// when set, as every command does).
func pruneCluster(ctx context.Context, url, migrateURL string, dryRun bool, keep *retention, prefix string, stdout io.Writer) error {
	pool, err := app.OpenDB(ctx, url, migrateURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := db.New(pool)
	p := prune.New(store, prune.Config{
		ResponseRetention: keep.response, ActionRetention: keep.action, BatchSize: keep.batch, Duty: keep.duty,
	})
	// Retention is measured by the database's clock.
	now, err := store.Now(ctx)
	if err != nil {
		return err
	}
	if dryRun {
		c, err := p.DryRun(ctx, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%sdry run: would clear %d response bodies (older than %s) and delete %d actions (older than %s)\n",
			prefix, c.Responses, keep.response, c.Actions, keep.action)
		return nil
	}
	c, err := p.Run(ctx, now)
	if err != nil {
		return fmt.Errorf("%w (so far: %d response bodies cleared, %d actions deleted)", err, c.Responses, c.Actions)
	}
	fmt.Fprintf(stdout, "%scleared %d response bodies (older than %s) and deleted %d actions (older than %s) in %d batches\n",
		prefix, c.Responses, keep.response, c.Actions, keep.action, c.Batches)
	return nil
}
