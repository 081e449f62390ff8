package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// errRecorded ends a query the recorder only looked at.
var errRecorded = errors.New("recorded, not run")

// recorder is a dbsqlc.DBTX that keeps the text of the statement a
// generated query sends, so a test plans exactly what the store runs.
type recorder struct{ sql string }

func (r *recorder) Exec(_ context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	r.sql = sql
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, _ ...any) (pgx.Rows, error) {
	r.sql = sql
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, _ ...any) pgx.Row {
	r.sql = sql
	return errRow{}
}

type errRow struct{}

func (errRow) Scan(...any) error { return errRecorded }

// planNode is one node of EXPLAIN (FORMAT JSON)'s plan tree.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(visit func(planNode)) {
	visit(n)
	for _, c := range n.Plans {
		c.walk(visit)
	}
}

// explain runs sql (an EXPLAIN (FORMAT JSON) of a statement) on conn
// and returns the plan tree and the JSON it was decoded from; label names
// the plan in failures.
func explain(t *testing.T, conn *pgxpool.Conn, label, sql string, args ...any) (planNode, []byte) {
	t.Helper()
	var out []byte
	if err := conn.QueryRow(t.Context(), sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("%s: decoding %s: %v", label, out, err)
	}
	return plans[0].Plan, out
}

// planGeneric prepares sql on conn as name and has conn plan it as
// PostgreSQL may once it caches a plan (generically), until the returned
// function resets that, which must run before conn is released.
func planGeneric(t *testing.T, conn *pgxpool.Conn, name, sql string) (reset func()) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), "PREPARE "+name+" AS "+sql); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	return func() { conn.Exec(context.WithoutCancel(t.Context()), "RESET plan_cache_mode") }
}

// ProviderRefHeld (a driver's check that a write found by a search is not
// another step's) looks a reference up among every step ever recorded:
// on a large action_steps it is planned as a scan of the provider_ref
// index (migration 0026), never as a sequential scan of the table, both
// as the store first runs it (a custom plan for its arguments) and as
// PostgreSQL may cache it (a generic plan).
func TestProviderRefHeldUsesProviderRefIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)

	rec := &recorder{}
	ref := "pi_000000012345"
	if _, err := dbsqlc.New(rec).ProviderRefHeld(ctx, dbsqlc.ProviderRefHeldParams{
		Capability: "payments", ProviderRef: &ref, StepAction: uuid.New(), StepName: "charge",
	}); !errors.Is(err, errRecorded) || !strings.Contains(rec.sql, "provider_ref") {
		t.Fatalf("recording ProviderRefHeld's statement: %v, %q", err, rec.sql)
	}

	// 20,000 steps, each of its own action, each with its own reference;
	// one in twenty has none yet, and the states and capabilities vary as
	// a ledger's do.
	tenant := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO tenants (id, name) VALUES ($1, 'index test')`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request)
		SELECT md5('action-' || g)::uuid, $1, 'key-' || g, 'payment.charge', 'fp', '{}'
		FROM generate_series(1, 20000) g`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key,
		                          external_ref, payload, state, provider_ref)
		SELECT md5('action-' || g)::uuid, 'charge', 1,
		       (ARRAY['payments', 'messaging', 'calendar'])[1 + g % 3], true, 'charge', 'key-' || g,
		       'ext-' || g, '{}',
		       (ARRAY['succeeded', 'succeeded', 'unknown', 'rejected', 'pending'])[1 + g % 5],
		       CASE WHEN g % 20 <> 0 THEN 'pi_' || lpad(g::text, 12, '0') END
		FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE action_steps`); err != nil {
		t.Fatal(err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	args := []any{"payments", ref, uuid.New(), "charge"}
	check := func(label, sql string, args ...any) {
		t.Helper()
		plan, out := explain(t, conn, label, sql, args...)
		indexed := false
		plan.walk(func(n planNode) {
			switch {
			case n.NodeType == "Seq Scan" && n.RelationName == "action_steps":
				t.Errorf("%s scans action_steps sequentially:\n%s", label, out)
			case n.IndexName == "action_steps_provider_ref" &&
				(n.NodeType == "Index Scan" || n.NodeType == "Index Only Scan" || n.NodeType == "Bitmap Index Scan"):
				indexed = true
			}
		})
		if !indexed {
			t.Errorf("%s does not scan the index action_steps_provider_ref:\n%s", label, out)
		}
	}
	check("the custom plan", "EXPLAIN (FORMAT JSON) "+rec.sql, args...)

	defer planGeneric(t, conn, "provider_ref_held", rec.sql)()
	check("the generic plan", fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE provider_ref_held('payments', '%s', '%s', 'charge')",
		ref, uuid.New()))
}
