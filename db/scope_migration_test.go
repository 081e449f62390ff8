package db_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// A dasha key made before migration 0030 opened every voice platform's
// routes; 0030 narrows the dasha scope to Dasha's routes, and makes such a
// key a voice key, so it opens what it opened (a Vapi message here), and
// still nothing of the REST API.
func TestDashaKeysMadeBefore0030KeepOpeningEveryVoicePlatform(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var before []string
	for _, f := range files {
		if v := strings.TrimSuffix(filepath.Base(f), ".sql"); v < "0030" {
			before = append(before, v)
		}
	}
	url := pgtest.NewEmptyDB(t)
	oldMigrate(t, url, shippedMigrations(t, before...))
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	tenant, key := uuid.New(), db.APIKeyPrefix+strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := conn.Exec(t.Context(), "INSERT INTO tenants (id, name) VALUES ($1, 'before')", tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "INSERT INTO api_keys (key_hash, tenant_id, prefix, scope) VALUES ($1, $2, $3, 'dasha')",
		db.HashAPIKey(key), tenant, key[:7]); err != nil {
		t.Fatal(err)
	}
	if err := app.Migrate(t.Context(), url); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	e := apptest.StartOn(t, url)
	if n := e.Count("SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND scope = 'voice'", tenant); n != 1 {
		t.Fatalf("the dasha key made before 0030 is not a voice key")
	}
	msg := `{"message":{"type":"status-update","status":"in-progress","call":{"id":"before-0030"}}}`
	if r := e.Request(http.MethodPost, "/v1/vapi/webhook", key, msg); r.Status != http.StatusOK {
		t.Fatalf("the old dasha key on Vapi's route: %d %s", r.Status, r.Body)
	}
	if r := e.Get("/v1/slots", key); r.Status != http.StatusForbidden {
		t.Fatalf("the old dasha key on the REST API: %d %s", r.Status, r.Body)
	}
}
