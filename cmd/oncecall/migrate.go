package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := newFlags("migrate", stderr).Parse(args); err != nil {
		return err
	}
	url := migrateDatabaseURL()
	if url == "" {
		var err error
		if url, err = needDatabaseURL(); err != nil {
			return err
		}
	}
	if err := app.Migrate(ctx, url); err != nil {
		return err
	}
	// Every cluster of ONCECALL_CLUSTERS has the same schema.
	clusters, err := parseClusters(os.Getenv("ONCECALL_CLUSTERS"))
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if err := app.Migrate(ctx, c.URL); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	fmt.Fprintf(stdout, "migrations applied (schema %s)\n", db.LatestVersion())
	return nil
}
