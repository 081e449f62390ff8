package db_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Every migration file is the one that shipped: db/migrations/checksums
// holds each file's SHA-256 (sha256sum's format), and a file that differs
// from its line was edited after release, which a database that applied
// the earlier text never sees (migration 0010 was, four times). A new
// migration needs exactly one step: its line in the list.
func TestMigrationFilesMatchTheirShippedChecksums(t *testing.T) {
	t.Parallel()
	listed := map[string]string{}
	f, err := os.Open("migrations/checksums")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("migrations/checksums: line %q is not `<sha256>  <file>` (sha256sum's format)", sc.Text())
		}
		listed[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(body)
		sum := hex.EncodeToString(h[:])
		want, ok := listed[name]
		switch {
		case !ok:
			t.Errorf("new migration %s has no checksum: add this line to db/migrations/checksums "+
				"(the only step a new migration needs):\n%s  %s", name, sum, name)
		case want != sum:
			t.Errorf("migration %s differs from the version that shipped (sha256 %s, listed %s): "+
				"a released migration is never edited, since databases that applied it never run it again; "+
				"restore it and put the change in a new migration", name, sum, want)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("db/migrations/checksums lists %s, which is gone: a released migration is never removed", name)
	}
}

// oldMigrate applies migration texts the way migrate did before checksums:
// a schema_migrations table of versions only, one row per file.
func oldMigrate(t *testing.T, url string, files [][2]string) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
		version text PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", f[0]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, f[1])
			return err
		})
		if err != nil {
			t.Fatalf("old migrate %s: %v", f[0], err)
		}
	}
}

// shippedMigrations reads db/migrations/<version>.sql for each version, or
// the file under testdata/ when the version is "<version>@<file>".
func shippedMigrations(t *testing.T, versions ...string) [][2]string {
	t.Helper()
	var out [][2]string
	for _, v := range versions {
		path := filepath.Join("migrations", v+".sql")
		if version, fixture, ok := strings.Cut(v, "@"); ok {
			v, path = version, filepath.Join("testdata", fixture)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{v, string(body)})
	}
	return out
}

// A database migrated by any earlier build of main (migrate recorded
// versions only, and 0010 changed in four commits after it first shipped)
// is upgraded by today's migrate, which records every checksum; then every
// operation answered by a function of 0010 works: create and change a
// customer, book and cancel. (Before migration 0012, a database whose 0010
// was an earlier text got 0011 only and answered 500: function
// oncecall_customer(...) does not exist.)
func TestMigrateUpgradesDatabasesOfEarlierBuilds(t *testing.T) {
	t.Parallel()
	upTo9 := []string{"0001_core", "0002_appointments", "0003_payments_messages_customers", "0004_steps",
		"0005_retention", "0006_fencing", "0007_schedule", "0008_templates_scopes_calls", "0009_sql_answers"}
	builds := map[string][]string{
		"0f72fbf (through 0009)":       upTo9,
		"b7d823c (first 0010)":         append(slices.Clone(upTo9), "0010_claim_key@0010_claim_key/b7d823c.sql"),
		"a125a5a":                      append(slices.Clone(upTo9), "0010_claim_key@0010_claim_key/a125a5a.sql"),
		"abe2892":                      append(slices.Clone(upTo9), "0010_claim_key@0010_claim_key/abe2892.sql"),
		"f8daef4":                      append(slices.Clone(upTo9), "0010_claim_key@0010_claim_key/f8daef4.sql"),
		"f8daef4, then ad4d63e (0011)": append(slices.Clone(upTo9), "0010_claim_key@0010_claim_key/f8daef4.sql", "0011_key_free_wait_only"),
		"ffdb5b2 (final 0010)":         append(slices.Clone(upTo9), "0010_claim_key"),
		"ad4d63e (0011)":               append(slices.Clone(upTo9), "0010_claim_key", "0011_key_free_wait_only"),
	}
	for name, versions := range builds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewEmptyDB(t)
			oldMigrate(t, url, shippedMigrations(t, versions...))

			e := apptest.StartOn(t, url)
			tenant, key := e.Tenant("upgraded")
			slot := e.Slot(tenant.ID, 1)
			c := e.Post("/v1/customers", key, "c1", map[string]any{"name": "Upgraded Customer"})
			if c.Status != http.StatusCreated {
				t.Fatalf("create customer: %d %s", c.Status, c.Body)
			}
			customer, _ := c.JSON(t)["result"].(map[string]any)["id"].(string)
			if r := e.Request(http.MethodPatch, "/v1/customers/"+customer, key, map[string]any{"name": "Renamed Customer"},
				"Idempotency-Key", "c2"); r.Status != http.StatusOK {
				t.Fatalf("update customer: %d %s", r.Status, r.Body)
			}
			b := e.Post("/v1/appointments", key, "b1", map[string]any{"customer_id": customer, "slot_id": slot})
			if b.Status != http.StatusCreated {
				t.Fatalf("book: %d %s", b.Status, b.Body)
			}
			appointment, _ := b.JSON(t)["result"].(map[string]any)["id"].(string)
			if r := e.Post("/v1/appointments/"+appointment+"/cancel", key, "x1", map[string]any{}); r.Status != http.StatusOK {
				t.Fatalf("cancel: %d %s", r.Status, r.Body)
			}
			if n := e.Count(`SELECT count(*) FROM appointments a JOIN customers c ON c.id = a.customer_id
				WHERE a.id = $1 AND a.status = 'cancelled' AND c.name = 'Renamed Customer'`, appointment); n != 1 {
				t.Fatalf("cancelled appointment of the renamed customer: %d rows, want 1", n)
			}
			if n := e.Count("SELECT count(*) FROM schema_migrations WHERE checksum IS NULL"); n != 0 {
				t.Fatalf("%d migrations left without a checksum", n)
			}
			// Today's migrate again (a restart): the recorded checksums match.
			if err := app.Migrate(t.Context(), url); err != nil {
				t.Fatalf("migrate again: %v", err)
			}
		})
	}
}

// A migration whose applied text differs from this build's file (its
// recorded checksum differs) stops migrate, and so the server's start, with
// a message naming it; nothing is applied.
func TestMigrateRefusesAChangedMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDB(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// As if this database had applied another 0010 and not yet the newest
	// migration.
	if _, err := conn.Exec(ctx, "UPDATE schema_migrations SET checksum = $1 WHERE version = '0010_claim_key'", strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM schema_migrations WHERE version = $1", db.LatestVersion()); err != nil {
		t.Fatal(err)
	}

	err = db.Migrate(ctx, conn)
	if !errors.Is(err, db.ErrMigrationChanged) || !strings.Contains(err.Error(), "0010_claim_key.sql") {
		t.Fatalf("migrate: %v, want %v naming 0010_claim_key.sql", err, db.ErrMigrationChanged)
	}
	if ok, err := db.Applied(ctx, conn); err != nil || ok {
		t.Fatalf("latest migration applied after a refusal: %v %v", ok, err)
	}
	m, err := app.Start(ctx, app.Config{Addr: "127.0.0.1:0", DatabaseURL: url, Log: zerolog.Nop()})
	if err == nil {
		m.Close()
	}
	if !errors.Is(err, db.ErrMigrationChanged) {
		t.Fatalf("server start: %v, want %v", err, db.ErrMigrationChanged)
	}
}
