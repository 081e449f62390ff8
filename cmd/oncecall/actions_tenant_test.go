package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestActionsListAcrossTenants(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ids := map[string]uuid.UUID{}
	for _, name := range []string{"acme", "globex"} {
		tenant, action := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
		if _, err := pool.Exec(ctx, "INSERT INTO tenants (id, name) VALUES ($1, $2)", tenant, name); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state)
			VALUES ($1, $2, 'k', 'appointment.book', 'f', '{}', 'running')`, action, tenant); err != nil {
			t.Fatal(err)
		}
		ids[name], ids[name+"-action"] = tenant, action
	}
	list := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"actions", "list"}, args...), &out, &out); err != nil {
			t.Fatalf("actions list %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	row := func(out, name string) bool {
		return regexp.MustCompile(`(?m)^` + ids[name+"-action"].String() + ` +` + name + ` +appointment\.book +running `).MatchString(out)
	}
	all := list()
	if !strings.HasPrefix(all, "ACTION  ") || !strings.Contains(strings.SplitN(all, "\n", 2)[0], "TENANT") || !row(all, "acme") || !row(all, "globex") {
		t.Fatalf("actions list:\n%s", all)
	}
	for _, ref := range []string{"acme", ids["acme"].String()} {
		if out := list("--tenant", ref); !row(out, "acme") || strings.Contains(out, "globex") {
			t.Fatalf("actions list --tenant %s:\n%s", ref, out)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"actions", "list", "--tenant", "initech"}, &out, &out); err == nil || !strings.Contains(err.Error(), `no tenant "initech"`) {
		t.Fatalf("an unknown tenant: %v", err)
	}
}
