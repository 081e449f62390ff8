package db_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// globalTables are the tables that are not one tenant's (docs/scaling.md#a-citus-ready-schema):
// under Citus they are reference tables (or stay on the coordinator), every other table is
// distributed by tenant_id. A new table is one tenant's unless it is named here with a reason.
var globalTables = map[string]string{
	"tenants":           "the tenants themselves",
	"api_keys":          "looked up by the key's hash before the tenant is known",
	"operators":         "console staff; tenant_id NULL is every tenant",
	"operator_links":    "an operator's sign-in links, looked up by the link's hash",
	"operator_sessions": "an operator's sessions, looked up by the cookie's hash",
	"operator_audit":    "the console's audit trail, across tenants",
	"schema_migrations": "the migrations this database applied",
	"provider_ref_claims": "a provider's reference is the provider's, across tenants: the step that claimed " +
		"a write found by a search (migration 0041)",
	"tenant_directory": "which cluster each tenant lives on: read before the tenant's cluster is known, in the home cluster",
	// River's job queue (migrations 0054, 0055): the late results' outbox. A job names its
	// tenant in its arguments; the rows it delivers are the tenant's own (late_results).
	"river_job":          "River's jobs, fetched by any replica whatever their tenant",
	"river_leader":       "River's elected leader (its maintenance services)",
	"river_migration":    "River's own record of its schema versions",
	"river_queue":        "River's queues",
	"river_notification": "River's notification outbox (unused by PostgreSQL clients)",
}

// TestKeysLeadWithTenant reads the migrated schema from the catalog: every table not in
// globalTables has a NOT NULL tenant_id, each of its primary keys and unique indexes leads with
// tenant_id, and each of its foreign keys to another such table includes tenant_id (a row can
// only point at a row of its own tenant). That is what distributing the tables by tenant_id
// needs: a shard enforces a unique index only when the index includes the distribution column,
// and a tenant's rows then move between clusters by their keys alone.
func TestKeysLeadWithTenant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)

	var breaches []string
	rows, err := pool.Query(ctx, `
		SELECT c.relname,
		       coalesce((SELECT a.attnotnull FROM pg_attribute a
		                 WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped), false),
		       (SELECT count(*) FROM pg_attribute a
		        WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped) > 0
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
		ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	tenantTables := map[string]bool{}
	for rows.Next() {
		var name string
		var notNull, has bool
		if err := rows.Scan(&name, &notNull, &has); err != nil {
			t.Fatal(err)
		}
		if _, ok := globalTables[name]; ok {
			continue
		}
		tenantTables[name] = true
		if !notNull {
			breaches = append(breaches, fmt.Sprintf("table %s has no NOT NULL tenant_id (name it in globalTables if it is no tenant's)", name))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	rows, err = pool.Query(ctx, `
		SELECT t.relname, i.relname, pg_get_indexdef(x.indexrelid),
		       coalesce((SELECT a.attname FROM pg_attribute a
		                 WHERE a.attrelid = x.indrelid AND a.attnum = x.indkey[0]), '') AS first
		FROM pg_index x
		JOIN pg_class t ON t.oid = x.indrelid
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = 'public' AND (x.indisunique OR x.indisprimary)
		ORDER BY t.relname, i.relname`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, index, def, first string
		if err := rows.Scan(&table, &index, &def, &first); err != nil {
			t.Fatal(err)
		}
		if tenantTables[table] && first != "tenant_id" {
			breaches = append(breaches, fmt.Sprintf("unique index %s of %s does not lead with tenant_id: %s", index, table, def))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	rows, err = pool.Query(ctx, `
		SELECT c.conname, t.relname, r.relname, pg_get_constraintdef(c.oid),
		       EXISTS (SELECT 1 FROM pg_attribute a
		               WHERE a.attrelid = c.conrelid AND a.attname = 'tenant_id' AND a.attnum = ANY (c.conkey))
		FROM pg_constraint c
		JOIN pg_class t ON t.oid = c.conrelid
		JOIN pg_class r ON r.oid = c.confrelid
		WHERE c.contype = 'f'
		ORDER BY t.relname, c.conname`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, table, ref, def string
		var withTenant bool
		if err := rows.Scan(&name, &table, &ref, &def, &withTenant); err != nil {
			t.Fatal(err)
		}
		if tenantTables[table] && tenantTables[ref] && !withTenant {
			breaches = append(breaches, fmt.Sprintf("foreign key %s of %s does not name tenant_id: %s", name, table, def))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, b := range breaches {
		t.Error(b)
	}
}

// onConflict finds an ON CONFLICT clause and its target, if any; insertInto the table of the
// INSERT before it.
var (
	onConflict = regexp.MustCompile(`(?is)\bON\s+CONFLICT\s*(\(([^()]*(\([^()]*\))?[^()]*)\))?`)
	insertInto = regexp.MustCompile(`(?is)\bINSERT\s+INTO\s+([a-z_]+)`)
	// lockOrSignal is what correctness must not rest on: advisory locks, LISTEN and NOTIFY.
	lockOrSignal = regexp.MustCompile(`(?i)\bpg_(try_)?advisory_(xact_)?lock(_shared)?\s*\(|\bpg_notify\s*\(|\b(LISTEN|NOTIFY)\s+[a-z_"]`)
)

// hintsOnly are the places that take an advisory lock, each with what holds when the lock does
// not (docs/scaling.md#locks-and-signals), a file or a file and its sqlc query's name. Any other
// use fails TestQueriesKeepToTheirTenant.
var hintsOnly = map[string]string{
	"db/migrate.go": "each migration is claimed by its row in schema_migrations (INSERT ... ON CONFLICT DO NOTHING " +
		"in the migration's own transaction); the lock only spares a second migrator the wait on that row",
	"db/migrations/0010_claim_key.sql": "oncecall_key_free: the wait for a concurrent attempt of the same key; " +
		"the unique index actions (tenant_id, idempotency_key) decides which attempt owns the key",
	"db/migrations/0011_key_free_wait_only.sql": "as 0010",
	"db/migrations/0054_river_queue.sql": "River's 002 creates a trigger that NOTIFYs inserts and its 004, in the same " +
		"migration, drops it; River's clients here poll (PollOnly), and a job's row in river_job is what is worked",
}

// restsOnLock are the advisory locks correctness still rests on, each with why
// (docs/scaling.md#locks-and-signals). The list only shrinks.
var restsOnLock = map[string]string{}

var queryName = regexp.MustCompile(`(?m)^-- name: (\w+)`)

// TestQueriesKeepToTheirTenant reads queries/*.sql and the statements in db/*.go: an ON CONFLICT
// target on a tenant's table leads with tenant_id (so it matches a key of the schema that
// TestKeysLeadWithTenant holds), and nothing takes an advisory lock, LISTENs or NOTIFYs
// except the places in hintsOnly.
func TestQueriesKeepToTheirTenant(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range goFiles {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	migrations, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 || len(migrations) < 20 {
		t.Fatalf("found %d query files and %d migrations: run from the db package", len(files), len(migrations))
	}
	checked := 0
	for _, f := range append(files, migrations...) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		rel := filepath.ToSlash(filepath.Clean(filepath.Join("db", f)))
		for _, m := range lockOrSignal.FindAllStringIndex(text, -1) {
			where := rel
			if names := queryName.FindAllStringSubmatch(text[:m[0]], -1); len(names) > 0 {
				where += " " + names[len(names)-1][1]
			}
			_, hint := hintsOnly[rel]
			_, rests := restsOnLock[where]
			if !hint && !rests {
				t.Errorf("%s:%d: %q: correctness must not rest on advisory locks, LISTEN or NOTIFY (a hint with a row claim or polling behind it goes in hintsOnly, with what holds without it)",
					where, lineOf(text, m[0]), text[m[0]:m[1]])
			}
		}
		if slices.Contains(migrations, f) {
			continue // migrations of earlier keys are history; the catalog test reads their result
		}
		for _, m := range onConflict.FindAllStringSubmatchIndex(text, -1) {
			checked++
			ins := insertInto.FindAllStringSubmatch(text[:m[0]], -1)
			if len(ins) == 0 && strings.HasSuffix(f, ".go") {
				continue // a comment
			}
			if len(ins) == 0 {
				t.Errorf("%s:%d: ON CONFLICT without an INSERT before it", rel, lineOf(text, m[0]))
				continue
			}
			table := strings.ToLower(ins[len(ins)-1][1])
			if _, global := globalTables[table]; global || m[4] < 0 {
				continue // a global table, or no target: any key of the table, all of which lead with tenant_id
			}
			target := strings.TrimSpace(text[m[4]:m[5]])
			first := strings.ToLower(strings.TrimSpace(strings.SplitN(target, ",", 2)[0]))
			if first != "tenant_id" {
				t.Errorf("%s:%d: ON CONFLICT (%s) on %s does not lead with tenant_id", rel, lineOf(text, m[0]), target, table)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d ON CONFLICT clauses: the pattern no longer finds them", checked)
	}
}

func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }
