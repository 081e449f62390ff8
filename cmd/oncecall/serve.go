package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/oncecall/oncecall/internal/app"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", env("ONCECALL_ADDR", ":8080"), "listen address (env ONCECALL_ADDR)")
	dataDir := fs.String("data-dir", env("ONCECALL_DATA_DIR", ".oncecall"), "embedded database folder, used when DATABASE_URL is unset (env ONCECALL_DATA_DIR)")
	noReconcile := fs.Bool("no-reconcile", env("ONCECALL_RECONCILE", "on") == "off", "do not run the reconciler in this process (env ONCECALL_RECONCILE=off)")
	dashaWait := fs.String("dasha-wait", env("ONCECALL_DASHA_WAIT", "5s"), "how long a Dasha tool call waits for a running attempt of the same action before answering pending (env ONCECALL_DASHA_WAIT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	wait, err := time.ParseDuration(*dashaWait)
	if err != nil || wait <= 0 || wait > time.Minute {
		return fmt.Errorf("--dasha-wait %q must be a duration from 1ms to 1m, such as 5s", *dashaWait)
	}
	providers, err := providersFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	rc, err := reconcileConfig()
	if err != nil {
		return err
	}
	log := logger(stderr)
	m, err := app.Start(ctx, app.Config{
		Addr: *addr, DatabaseURL: os.Getenv("DATABASE_URL"), DataDir: *dataDir, Log: log, DashaWait: wait,
		Providers: providers, Steps: stepConfig(), Reconcile: rc, ReconcileDisabled: *noReconcile,
		OperatorToken: os.Getenv("ONCECALL_OPERATOR_TOKEN"),
	})
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Embedded() != nil {
		if err := m.SeedDemo(ctx, stdout); err != nil {
			return err
		}
	}
	return m.Serve(ctx)
}
