package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/sim/calsimtest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// asCommand makes this test binary run as the oncecall command itself
// (main), so that tests can see what a real process prints and exits with,
// without building one.
const asCommand = "ONCECALL_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		main()
		os.Exit(0)
	}
	code := pgtest.Main(m)
	calsimtest.Remove()
	os.Exit(code)
}

func TestHealthcheckFollowsReadyz(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"healthcheck", "--url", srv.URL + "/readyz"}, &out, &out); err != nil {
		t.Fatalf("ready service: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := run(t.Context(), []string{"healthcheck", "--url", srv.URL + "/readyz"}, &out, &out); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("unready service: %v", err)
	}
	srv.Close()
	if err := run(t.Context(), []string{"healthcheck", "--url", srv.URL + "/readyz", "--timeout", "1s"}, &out, &out); err == nil {
		t.Fatalf("no service: healthy")
	}
}

func TestDefaultHealthURLFollowsTheListenPort(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/readyz",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/readyz",
		"[::]:7000":      "http://127.0.0.1:7000/readyz",
		"not an address": "http://127.0.0.1:8080/readyz",
	} {
		if got := defaultHealthURL(addr); got != want {
			t.Errorf("%q: %s, want %s", addr, got, want)
		}
	}
}

// Not parallel: it changes the environment.
func TestServeRequiresDatabaseURLWhenAsked(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("ONCECALL_REQUIRE_DATABASE_URL", "1")
	dir := t.TempDir()
	var out bytes.Buffer
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("serve without DATABASE_URL: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an embedded database was prepared in %s", dir)
	}
	t.Setenv("ONCECALL_REQUIRE_DATABASE_URL", "maybe")
	if err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, &out, &out); err == nil || !strings.Contains(err.Error(), "ONCECALL_REQUIRE_DATABASE_URL") {
		t.Fatalf("malformed variable: %v", err)
	}
}

// Not parallel: it changes the environment.
func TestPruneCommand(t *testing.T) {
	url := pgtest.NewDB(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv("RESPONSE_RETENTION", "1h")
	t.Setenv("ACTION_RETENTION", "48h")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tenant := uuid.Must(uuid.NewV7())
	if _, err := conn.Exec(ctx, "INSERT INTO tenants (id, name) VALUES ($1, 'acme')", tenant); err != nil {
		t.Fatal(err)
	}
	for key, age := range map[string]time.Duration{"fresh": time.Minute, "body-expired": 2 * time.Hour, "expired": 72 * time.Hour} {
		_, err := conn.Exec(ctx, `
			INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state,
			                     outcome, http_status, result, completed_at)
			VALUES ($1, $2, $3, 'appointment.book', 'fp', '{}', 'completed', 'confirmed', 201, '{}', $4)`,
			uuid.Must(uuid.NewV7()), tenant, key, time.Now().Add(-age))
		if err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"prune", "--dry-run"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "would clear 1 response bodies (older than 1h0m0s) and delete 1 actions (older than 48h0m0s)") {
		t.Fatalf("dry run printed: %s", out.String())
	}
	var left, bodies int
	count := func() {
		t.Helper()
		if err := conn.QueryRow(ctx, "SELECT count(*), count(result) FROM actions").Scan(&left, &bodies); err != nil {
			t.Fatal(err)
		}
	}
	if count(); left != 3 || bodies != 3 {
		t.Fatalf("the dry run changed something: %d actions, %d bodies", left, bodies)
	}
	out.Reset()
	if err := run(ctx, []string{"prune", "--action-retention", "100h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "cleared 2 response bodies (older than 1h0m0s) and deleted 0 actions (older than 100h0m0s)") {
		t.Fatalf("prune printed: %s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"prune"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if count(); left != 2 || bodies != 1 || !strings.Contains(out.String(), "deleted 1 actions") {
		t.Fatalf("after prune: %d actions, %d bodies; printed %s", left, bodies, out.String())
	}
}

// Not parallel: it changes the environment.
func TestMigrationsRunOnMigrateDatabaseURL(t *testing.T) {
	const unreachable = "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"
	var out bytes.Buffer

	empty := pgtest.NewEmptyDB(t)
	t.Setenv("DATABASE_URL", unreachable)
	t.Setenv("ONCECALL_MIGRATE_DATABASE_URL", empty)
	if err := run(t.Context(), []string{"migrate"}, &out, &out); err != nil {
		t.Fatalf("migrate on ONCECALL_MIGRATE_DATABASE_URL: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), empty)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if ok, err := db.Applied(t.Context(), conn); err != nil || !ok {
		t.Fatalf("migrations applied on ONCECALL_MIGRATE_DATABASE_URL: %v %v", ok, err)
	}

	// serve migrates there too, before it opens its pool on DATABASE_URL.
	t.Setenv("DATABASE_URL", pgtest.NewDB(t))
	t.Setenv("ONCECALL_MIGRATE_DATABASE_URL", unreachable)
	err = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "connect to database") {
		t.Fatalf("serve with an unreachable ONCECALL_MIGRATE_DATABASE_URL: %v", err)
	}

	t.Setenv("DATABASE_URL", "")
	err = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "ONCECALL_MIGRATE_DATABASE_URL is set but DATABASE_URL is not") {
		t.Fatalf("serve with only ONCECALL_MIGRATE_DATABASE_URL: %v", err)
	}
}
