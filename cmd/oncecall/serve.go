package main

import (
	"context"
	"io"
	"os"

	"github.com/oncecall/oncecall/internal/app"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", env("ONCECALL_ADDR", ":8080"), "listen address (env ONCECALL_ADDR)")
	dataDir := fs.String("data-dir", env("ONCECALL_DATA_DIR", ".oncecall"), "embedded database folder, used when DATABASE_URL is unset (env ONCECALL_DATA_DIR)")
	noReconcile := fs.Bool("no-reconcile", env("ONCECALL_RECONCILE", "on") == "off", "do not run the reconciler in this process (env ONCECALL_RECONCILE=off)")
	if err := fs.Parse(args); err != nil {
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
	log := logger(stderr)
	m, err := app.Start(ctx, app.Config{
		Addr: *addr, DatabaseURL: os.Getenv("DATABASE_URL"), DataDir: *dataDir, Log: log,
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
