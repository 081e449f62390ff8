package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
)

const keyUsage = "usage: oncecall key create --tenant ID_OR_NAME [--scope SCOPE] [--json]\n" +
	"       oncecall key retell --tenant ID_OR_NAME (--api-key-env VAR | --remove)"

// key creates another API key for an existing tenant, e.g. a dasha-scoped
// one to paste into a voice agent's tool definitions.
func key(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if helpAsked(args, keyUsage, stdout) {
		return nil
	}
	if len(args) > 0 && args[0] == "retell" {
		return retellKey(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "create" {
		return errors.New(keyUsage)
	}
	fs := newFlags("key create", stderr)
	tenantRef := fs.String("tenant", "", "the tenant: its id, or its name (the oldest tenant of that name) (required)")
	scopeName := fs.String("scope", string(oncecall.ScopeFull), "the key's scope: full (every /v1 route), voice (every voice platform's webhooks), or one platform's webhooks only: dasha, vapi, retell or elevenlabs")
	asJSON := fs.Bool("json", false, `print {"tenant_id": ..., "api_key": ..., "scope": ...}`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	scope, err := oncecall.ParseScope(*scopeName)
	if err != nil {
		return err
	}
	ref := strings.TrimSpace(*tenantRef)
	if ref == "" {
		return errors.New("--tenant is required; " + keyUsage)
	}
	store, closeDB, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	t, err := findTenant(ctx, store, ref)
	if err != nil {
		return err
	}
	k, err := store.AddScopedAPIKey(ctx, t.ID, scope)
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"tenant_id": t.ID.String(), "api_key": k, "scope": string(scope)})
	}
	fmt.Fprintf(stdout, "API key for tenant %s (%s), scope %s (shown once, store it now): %s\n", t.Name, t.ID, scope, k)
	return nil
}

// findTenant finds a tenant by id, or by name (the oldest of that name).
func findTenant(ctx context.Context, store *db.Store, ref string) (oncecall.Tenant, error) {
	var t oncecall.Tenant
	var err error
	if id, perr := uuid.Parse(ref); perr == nil {
		t, err = store.TenantByID(ctx, id)
	} else {
		t, err = store.TenantByName(ctx, ref)
	}
	if errors.Is(err, db.ErrNotFound) {
		return oncecall.Tenant{}, fmt.Errorf("no tenant %q: give its id or its name as oncecall tenant create printed it", ref)
	}
	if err != nil {
		return oncecall.Tenant{}, fmt.Errorf("find tenant: %w", err)
	}
	return t, nil
}
