package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
)

func tenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: oncecall tenant create --name NAME [--dasha-org ORG] [--json]")
	}
	fs := newFlags("tenant create", stderr)
	name := fs.String("name", "", "tenant name (required)")
	org := fs.String("dasha-org", "", "bind the tenant to this Dasha orgId")
	asJSON := fs.Bool("json", false, `print {"tenant_id": ..., "api_key": ...}`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" || len(*name) > 200 {
		return errors.New("--name is required (1 to 200 characters)")
	}
	url, err := needDatabaseURL()
	if err != nil {
		return err
	}
	pool, err := app.OpenDB(ctx, url, migrateDatabaseURL(), 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	t, key, err := db.New(pool).CreateTenant(ctx, strings.TrimSpace(*name), strings.TrimSpace(*org))
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"tenant_id": t.ID.String(), "api_key": key})
	}
	fmt.Fprintf(stdout, "tenant %s (%s) created\nAPI key (shown once, store it now): %s\n", t.Name, t.ID, key)
	return nil
}
