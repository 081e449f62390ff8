package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/schedule"
)

func tenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: oncecall tenant create --name NAME [--dasha-org ORG] [--timezone ZONE] [--scope full|dasha] [--json]"
	if len(args) == 0 || args[0] != "create" {
		return errors.New(usage)
	}
	fs := newFlags("tenant create", stderr)
	name := fs.String("name", "", "tenant name (required)")
	org := fs.String("dasha-org", "", "bind the tenant to this Dasha orgId")
	zone := fs.String("timezone", schedule.UTC, "the business's IANA timezone, e.g. Europe/London: weekly hours are read and times spoken to callers in it")
	scopeName := fs.String("scope", string(oncecall.ScopeFull), "the first API key's scope: full (every /v1 route) or dasha (only the Dasha webhooks)")
	asJSON := fs.Bool("json", false, `print {"tenant_id": ..., "api_key": ..., "timezone": ..., "scope": ...}`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	scope, err := oncecall.ParseScope(*scopeName)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" || len(*name) > 200 {
		return errors.New("--name is required (1 to 200 characters)")
	}
	if _, err := schedule.ParseZone(*zone); err != nil {
		return fmt.Errorf("--timezone: %w", err)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, key, err := store.CreateTenantWith(ctx, db.NewTenant{
		Name: strings.TrimSpace(*name), DashaOrgID: strings.TrimSpace(*org), Timezone: *zone, Scope: scope,
	})
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"tenant_id": t.ID.String(), "api_key": key, "timezone": *zone, "scope": string(scope)})
	}
	fmt.Fprintf(stdout, "tenant %s (%s, timezone %s) created\nAPI key, scope %s (shown once, store it now): %s\n", t.Name, t.ID, *zone, scope, key)
	return nil
}
