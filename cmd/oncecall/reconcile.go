package main

import (
	"context"
	"fmt"
	"io"
	"os"

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
	url, err := needDatabaseURL()
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
	pool, err := app.OpenDB(ctx, url, migrateDatabaseURL(), 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	log := logger(stderr)
	store := dbStore(pool)
	driver := step.NewDriver(store, app.Operations(), providers, sc, log)
	// The local provider too, as serve has it: a write before an action's
	// required one that no remote provider serves is made by it.
	driver.Local = provider.Set{provider.Messaging: message.Local{Store: store}}
	// The tenants' own calendars whose secrets this server reads.
	cc.Store, cc.Log = store, log
	driver.Accounts = calendars.New(cc)
	r := reconcile.New(store, driver, rc, log)
	if !*once {
		return r.Run(ctx)
	}
	st, err := r.RunOnce(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reconcile: abandoned=%d due=%d completed=%d\n", st.Abandoned, st.Due, st.Completed)
	return nil
}
