package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Not parallel: it changes the environment. key retell stores the key read
// from the named variable, replaces it, and removes it; bad usage changes
// nothing.
func TestKeyRetellSetsAndRemovesTheTenantsRetellKey(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := db.New(pool)
	tenant, _, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, args := range [][]string{
		{"key", "retell", "--tenant", "acme"},
		{"key", "retell", "--tenant", "acme", "--api-key-env", "RETELL_KEY_UNSET"},
		{"key", "retell", "--tenant", "acme", "--api-key-env", "RETELL_KEY", "--remove"},
		{"key", "retell", "--api-key-env", "RETELL_KEY"},
		{"key", "retell", "--tenant", "nobody", "--api-key-env", "RETELL_KEY"},
	} {
		t.Setenv("RETELL_KEY", "key_one")
		if err := run(ctx, args, &out, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := store.RetellKey(ctx, tenant.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("bad usage stored a key: %v", err)
	}
	for _, want := range []string{"key_one", "key_two"} {
		t.Setenv("RETELL_KEY", want)
		if err := run(ctx, []string{"key", "retell", "--tenant", "acme", "--api-key-env", "RETELL_KEY"}, &out, &out); err != nil {
			t.Fatalf("set %s: %v: %s", want, err, out.String())
		}
		if got, err := store.RetellKey(ctx, tenant.ID); err != nil || got != want {
			t.Fatalf("stored %q, %v; want %q", got, err, want)
		}
	}
	if bytes.Contains(out.Bytes(), []byte("key_two")) {
		t.Fatalf("the key was printed: %s", out.String())
	}
	if err := run(ctx, []string{"key", "retell", "--tenant", tenant.ID.String(), "--remove"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RetellKey(ctx, tenant.ID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("after --remove: %v", err)
	}
}
