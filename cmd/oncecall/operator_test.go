package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// oncecall operator adds a tenant's person with a one-time sign-in link
// under the public URL, refuses a weak initial password and a second
// person with the same address, lists the staff, and disables someone;
// each is in the audit trail as the command line's doing.
func TestOperatorCommandManagesTheStaff(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv("ONCECALL_PUBLIC_URL", "https://oncecall.clinic.example/")
	t.Setenv("USER", "root-of-the-box")
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"tenant", "create", "--name", "Riverside Clinic"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := run(ctx, []string{"operator", "add", "--name", "Ana Ruiz", "--email", "Ana@Clinic.example", "--role", "resolver", "--tenant", "Riverside Clinic"}, &out, &out)
	if err != nil || !strings.Contains(out.String(), "resolver of Riverside Clinic") ||
		!strings.Contains(out.String(), "https://oncecall.clinic.example/console/welcome?t=") {
		t.Fatalf("operator add: %v\n%s", err, out.String())
	}
	t.Setenv("INITIAL_PASSWORD", "password1234")
	err = run(ctx, []string{"operator", "add", "--name", "Bo", "--email", "bo@clinic.example", "--role", "admin", "--password-env", "INITIAL_PASSWORD"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "too easy to guess") {
		t.Fatalf("a weak initial password: %v", err)
	}
	err = run(ctx, []string{"operator", "add", "--name", "Ana 2", "--email", "ana@clinic.example", "--role", "viewer"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "another person") {
		t.Fatalf("the same address twice: %v", err)
	}
	if err := run(ctx, []string{"operator", "add", "--name", "Bo", "--email", "bo@clinic.example", "--role", "sheriff"}, &out, &out); err == nil {
		t.Fatal("a role that does not exist was accepted")
	}
	out.Reset()
	if err := run(ctx, []string{"operator", "list"}, &out, &out); err != nil || !strings.Contains(out.String(), "ana@clinic.example") ||
		!strings.Contains(out.String(), "Riverside Clinic") {
		t.Fatalf("operator list: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"operator", "disable", "--email", "ana@clinic.example"}, &out, &out); err != nil || !strings.Contains(out.String(), "disabled Ana Ruiz") {
		t.Fatalf("operator disable: %v\n%s", err, out.String())
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM operator_audit WHERE operator_name = 'root-of-the-box' AND via = 'command'
		AND kind IN ('person_added', 'person_disabled')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("audited staff changes: %d %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM operators WHERE disabled_at IS NOT NULL AND password_hash IS NULL`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the disabled person: %d %v", n, err)
	}
}
