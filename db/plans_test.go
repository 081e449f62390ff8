package db_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// grownTables are the tables that grow with every call a business takes.
// TestStatementsReadByIndex fills them with another tenant's history.
var grownTables = []string{"actions", "action_steps", "action_events", "appointments", "slots", "customers"}

// mayScan are the queries allowed to read a grown table from end to end,
// each with why. The list only shrinks.
var mayScan = map[string]string{
	"PruneActions": "its batch is a parameter (LIMIT $3): a generic plan assumes a tenth of the due rows and hashes " +
		"the tables; PostgreSQL keeps planning it with its values, which costs less the larger the table " +
		"(docs/performance.md#pruning-during-load measures it)",
	"ListActions": "the operators' list across tenants (oncecall actions, GET /v1/ops/actions) filters by what it is " +
		"given, sorted by created_at: no index serves every combination; an operator runs it, never a caller",
}

// Every query the store sends must find its rows of a grown table through
// an index, whatever else the database holds. A query that reads such a
// table from end to end costs in proportion to every tenant's history: a
// booking's statement that joined the slots on their id alone chose, as
// PostgreSQL caches it (a generic plan), to hash every slot of every tenant
// on each booking: 50 ms of CPU a booking with 750,000 slots. This asks
// PostgreSQL for the generic plan of every query sqlc generated (each as
// the store prepares it), on a database where another tenant holds a
// history in every grown table, and fails on any sequential scan of one.
func TestStatementsReadByIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)

	const n = 20000
	other := uuid.New()
	history := []string{
		`INSERT INTO tenants (id, name) VALUES ($1, 'plans test')`,
		`INSERT INTO customers (id, tenant_id, name)
		 SELECT md5('c' || g)::uuid, $1, 'Customer ' || g FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`INSERT INTO slots (id, tenant_id, starts_at, ends_at, resource)
		 SELECT md5('s' || g)::uuid, $1, now() + g * interval '30 minutes', now() + g * interval '30 minutes' + interval '30 minutes', 'room'
		 FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome, completed_at)
		 SELECT md5('a' || g)::uuid, $1, 'key-' || g, 'appointment.book', 'fp', '{}', 'completed', 'confirmed', now()
		 FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`INSERT INTO appointments (id, tenant_id, customer_id, slot_id, action_id)
		 SELECT md5('p' || g)::uuid, $1, md5('c' || g)::uuid, md5('s' || g)::uuid, md5('a' || g)::uuid
		 FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`INSERT INTO action_steps (tenant_id, action_id, name, seq, capability, required, operation, provider_key, external_ref, payload, state)
		 SELECT $1, md5('a' || g)::uuid, 'send', 1, 'messaging', true, 'send', 'key-' || g, 'ext-' || g, '{}', 'succeeded'
		 FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`INSERT INTO action_events (tenant_id, action_id, kind)
		 SELECT $1, md5('a' || g)::uuid, 'completed' FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
	}
	for _, q := range history {
		if _, err := pool.Exec(ctx, q, other); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}

	queries := generatedQueries(t)
	if len(queries) < 100 {
		t.Fatalf("found %d queries in dbsqlc; the parser missed them", len(queries))
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	scanned, used := map[string]bool{}, map[string]bool{}
	for _, q := range queries {
		if _, err := conn.Exec(ctx, "PREPARE q AS "+q.sql); err != nil {
			t.Errorf("%s: prepare: %v", q.name, err)
			continue
		}
		var params int
		if err := conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'q'`).Scan(&params); err != nil {
			t.Fatal(err)
		}
		args := strings.TrimSuffix(strings.Repeat("NULL,", params), ",")
		stmt := "EXPLAIN (FORMAT JSON) EXECUTE q"
		if params > 0 {
			stmt += "(" + args + ")"
		}
		plan, _ := explain(t, conn, q.name, stmt)
		if _, err := conn.Exec(ctx, `DEALLOCATE q`); err != nil {
			t.Fatal(err)
		}
		plan.walk(func(n planNode) {
			if n.IndexName != "" {
				used[n.IndexName] = true
			}
			if n.NodeType != "Seq Scan" || !slices.Contains(grownTables, n.RelationName) {
				return
			}
			if _, ok := mayScan[q.name]; ok {
				scanned[q.name] = true
				return
			}
			t.Errorf("%s (%s): reads every row of %s (a sequential scan in its generic plan); join and filter it through an index (most lead with tenant_id)",
				q.name, q.file, n.RelationName)
		})
	}
	for name := range mayScan {
		if !scanned[name] {
			t.Errorf("mayScan lists %s, which no longer scans a grown table: remove it", name)
		}
	}

	// Every index of a grown table is written by every insert into it: it
	// must be unique (a guarantee), read by a query, or listed in
	// readElsewhere with who reads it.
	rows, err := conn.Query(ctx, `
		SELECT i.indexrelid::regclass::text, i.indisunique
		FROM pg_index i WHERE i.indrelid::regclass::text = ANY($1)`, grownTables)
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string]bool{}
	for rows.Next() {
		var name string
		var unique bool
		if err := rows.Scan(&name, &unique); err != nil {
			t.Fatal(err)
		}
		indexes[name] = unique
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, unique := range indexes {
		_, elsewhere := readElsewhere[name]
		switch {
		case elsewhere && (unique || used[name]):
			t.Errorf("readElsewhere lists %s, which a query reads or which is unique: remove it", name)
		case !unique && !used[name] && !elsewhere:
			t.Errorf("index %s is written with every row and read by no query (nor unique): drop it in a migration, or list who reads it in readElsewhere", name)
		}
	}
	for name := range readElsewhere {
		if _, ok := indexes[name]; !ok {
			t.Errorf("readElsewhere lists %s, which does not exist", name)
		}
	}
}

// readElsewhere are the indexes of grown tables that no generated query's
// generic plan reads but something else does, each with what.
var readElsewhere = map[string]string{
	"slots_location_starts": "the free slots at a location (availability.sql with location_id given) may read it in a plan " +
		"made with the location's id; its generic plan, made for any filter, reads slots_tenant_starts. Slots are written " +
		"when a schedule is made, not with each call",
}

// generatedQuery is one query sqlc generated, as the store sends it.
type generatedQuery struct {
	name, file, sql string
}

// generatedQueries reads every query constant of package dbsqlc.
func generatedQueries(t *testing.T) []generatedQuery {
	t.Helper()
	files, err := filepath.Glob("dbsqlc/*.sql.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []generatedQuery
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(fmt.Errorf("%s: %w", f, err))
			}
			if m := queryName.FindStringSubmatch(s); m != nil && strings.HasPrefix(s, "-- name: ") {
				out = append(out, generatedQuery{name: m[1], file: filepath.Base(f), sql: s})
			}
			return true
		})
	}
	return out
}
