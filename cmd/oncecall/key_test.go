package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/dashatool"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

type createdKey struct {
	TenantID string `json:"tenant_id"`
	APIKey   string `json:"api_key"`
	Scope    string `json:"scope"`
}

// Not parallel: it changes the environment.
func TestKeysWithAScope(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	runJSON := func(args ...string) createdKey {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out, &out); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out.String())
		}
		var k createdKey
		if err := json.Unmarshal(out.Bytes(), &k); err != nil {
			t.Fatalf("%v printed %s", args, out.String())
		}
		return k
	}
	scopeOf := func(key string) oncecall.Scope {
		t.Helper()
		_, scope, err := store.APIKeyOwner(ctx, key)
		if err != nil {
			t.Fatalf("key not stored: %v", err)
		}
		return scope
	}

	voice := runJSON("tenant", "create", "--name", "voice", "--scope", "dasha", "--json")
	if voice.Scope != "dasha" || scopeOf(voice.APIKey) != oncecall.ScopeDasha {
		t.Fatalf("tenant create --scope dasha: %+v", voice)
	}
	plain := runJSON("tenant", "create", "--name", "plain", "--json")
	if scopeOf(plain.APIKey) != oncecall.ScopeFull {
		t.Fatalf("tenant create without --scope: %+v", plain)
	}
	byName := runJSON("key", "create", "--tenant", "plain", "--scope", "dasha", "--json")
	if byName.TenantID != plain.TenantID || scopeOf(byName.APIKey) != oncecall.ScopeDasha {
		t.Fatalf("key create by name: %+v", byName)
	}
	for _, scope := range []oncecall.Scope{oncecall.ScopeVoice, oncecall.ScopeVapi, oncecall.ScopeRetell, oncecall.ScopeElevenLabs} {
		if k := runJSON("key", "create", "--tenant", "voice", "--scope", string(scope), "--json"); scopeOf(k.APIKey) != scope {
			t.Fatalf("key create --scope %s: %+v", scope, k)
		}
	}
	byID := runJSON("key", "create", "--tenant", voice.TenantID, "--json")
	if byID.TenantID != voice.TenantID || scopeOf(byID.APIKey) != oncecall.ScopeFull {
		t.Fatalf("key create by id: %+v", byID)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM api_keys WHERE tenant_id = $1", plain.TenantID).Scan(&n); err != nil || n != 2 {
		t.Fatalf("keys of plain = %d %v", n, err)
	}
	var out bytes.Buffer
	for _, args := range [][]string{
		{"key", "create", "--tenant", "nobody"},
		{"key", "create", "--tenant", uuid.NewString()},
		{"key", "create"},
		{"key", "create", "--tenant", "plain", "--scope", "admin"},
		{"tenant", "create", "--name", "x", "--scope", "read"},
		{"key"},
	} {
		if err := run(ctx, args, &out, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM tenants WHERE name = 'x'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a tenant with a bad scope was created")
	}

	// tools export --tenant lists the tenant's own templates.
	err = store.InTx(ctx, func(tx *db.Tx) error {
		_, _, err := tx.CreateTemplate(ctx, db.NewTemplate{
			TenantID: uuid.MustParse(plain.TenantID), ActionID: uuid.New(), Name: "table_ready", Body: "Hi {{.name}}", Required: []string{"name"},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"tools", "export", "--base-url", "https://calls.example.org", "--tenant", "plain"}, &out, &out); err != nil {
		t.Fatalf("tools export --tenant: %v", err)
	}
	var defs []dashatool.Definition
	if err := json.Unmarshal(out.Bytes(), &defs); err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if d.Name != "send_message" {
			continue
		}
		p := d.Schema["properties"].(map[string]any)["template"].(map[string]any)
		enum, _ := json.Marshal(p["enum"])
		if string(enum) != `["appointment_confirmation","appointment_reminder","generic","payment_receipt","table_ready"]` ||
			!strings.Contains(p["description"].(string), "table_ready (variables: name)") {
			t.Fatalf("send_message template for the tenant: %v", p)
		}
		return
	}
	t.Fatal("no send_message definition")
}

// An empty --scope (an unset shell variable: --scope "$SCOPE") is an error,
// not a full key: neither a key nor a tenant is created.
// Not parallel: it changes the environment.
func TestEmptyScopeIsAnError(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var out bytes.Buffer
	if err := run(ctx, []string{"tenant", "create", "--name", "plain", "--json"}, &out, &out); err != nil {
		t.Fatalf("tenant create: %v: %s", err, out.String())
	}
	for _, args := range [][]string{
		{"key", "create", "--tenant", "plain", "--scope", ""},
		{"key", "create", "--tenant", "plain", "--scope="},
		{"key", "create", "--tenant", "plain", "--scope", " "},
		{"tenant", "create", "--name", "empty", "--scope", ""},
	} {
		out.Reset()
		err := run(ctx, args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "scope") {
			t.Errorf("%q: %v (printed %q), want an error naming the scope", args, err, out.String())
		}
	}
	var keys, tenants int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM api_keys), (SELECT count(*) FROM tenants)").Scan(&keys, &tenants); err != nil {
		t.Fatal(err)
	}
	if keys != 1 || tenants != 1 {
		t.Fatalf("after refused --scope values: %d keys and %d tenants, want 1 and 1", keys, tenants)
	}
}
