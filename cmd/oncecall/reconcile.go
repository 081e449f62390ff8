package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/message"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/provider/calendars"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/reconcile"
)

func reconcileCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reconcile", stderr)
	once := fs.Bool("once", false, "make one pass and exit (default: run until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	clusters, err := everyCluster()
	if err != nil {
		return err
	}
	providers, err := providersFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	rc, err := reconcileConfig()
	if err != nil {
		return err
	}
	sc, err := stepConfig()
	if err != nil {
		return err
	}
	cc, err := calendarsConfig(os.Getenv)
	if err != nil {
		return err
	}
	log := logger(stderr)
	stopTracing, err := startTracing(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	defer flushTraces(ctx, stopTracing, log)
	// One reconciler per cluster, each over its own cluster's actions.
	rs := make([]*reconcile.Reconciler, len(clusters))
	for i, c := range clusters {
		migrateURL := ""
		if i == 0 { // DATABASE_URL's
			migrateURL = migrateDatabaseURL()
		}
		pool, err := app.OpenDB(ctx, c.URL, migrateURL, 4)
		if err != nil {
			return fmt.Errorf("%s%w", clusterPrefix(c, clusters), err)
		}
		defer pool.Close()
		store := dbStore(pool)
		driver := step.NewDriver(store, app.Operations(), providers, sc, log)
		// The local provider too, as serve has it: a write before an action's
		// required one that no remote provider serves is made by it.
		driver.Local = provider.Set{provider.Messaging: message.Local{Store: store}}
		// The tenants' own calendars whose secrets this server reads.
		cal := cc
		cal.Store, cal.Log = store, log
		driver.Accounts = calendars.New(cal)
		rs[i] = reconcile.New(store, driver, rc, log)
	}
	if !*once {
		errs := make([]error, len(rs))
		var wg sync.WaitGroup
		for i, r := range rs {
			wg.Go(func() { errs[i] = r.Run(ctx) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for i, r := range rs {
		st, err := r.RunOnce(ctx)
		if err != nil {
			return fmt.Errorf("%s%w", clusterPrefix(clusters[i], clusters), err)
		}
		fmt.Fprintf(stdout, "%sreconcile: abandoned=%d due=%d completed=%d\n", clusterPrefix(clusters[i], clusters), st.Abandoned, st.Due, st.Completed)
	}
	return nil
}
