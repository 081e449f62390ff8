package main

import (
	"context"
	"fmt"
	"io"

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
	fmt.Fprintf(stdout, "migrations applied (schema %s)\n", db.LatestVersion())
	return nil
}
