package db_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/db/dbsqlc"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// The reconciler asks every two seconds for actions with a step due
// (LeaseDue). Nearly every action ever taken is completed with nothing
// due, so the question must be answered from the open steps and the
// unfinished actions (their partial indexes), never by reading every
// action: on a table of a million actions a sequential scan with a
// per-row look at the steps took seconds of CPU a pass, every pass.
// This holds the answer (exactly the due actions, none of those the
// reconciler must leave alone) and the plan, as the store first runs it
// (a custom plan) and as PostgreSQL may cache it (a generic plan).
func TestLeaseDueReadsOnlyOpenStepsAndUnfinishedActions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)

	tenant := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO tenants (id, name) VALUES ($1, 'lease due test')`, tenant); err != nil {
		t.Fatal(err)
	}
	// 20,000 completed actions, each with its step succeeded: history.
	if _, err := pool.Exec(ctx, `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome, completed_at)
		SELECT md5('done-' || g)::uuid, $1, 'done-' || g, 'message.send', 'fp', '{}', 'completed', 'confirmed', now()
		FROM generate_series(1, 20000) g`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload, state)
		SELECT md5('done-' || g)::uuid, 'send', 1, 'messaging', true, 'send', 'key-' || g, 'ext-' || g, '{}', 'succeeded'
		FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}

	// Each case: an action (state, needs_operator, lease) and its one step
	// (state, required, due or not), and whether LeaseDue must take it.
	type tc struct {
		name          string
		state         string
		operator      bool
		leased        bool
		stepState     string
		required, due bool
		// provider is the step's planned provider (kind/account); none for
		// a step claimed before steps named theirs.
		provider string
		want     bool
	}
	cases := []tc{
		{name: "completed, a step due (a follow-up message)", state: "completed", stepState: "pending", due: true, want: true},
		{name: "unknown, its required step resolved", state: "unknown", stepState: "succeeded", required: true, want: true},
		{name: "unknown, its required step due for a check", state: "unknown", stepState: "unknown", required: true, due: true, want: true},
		{name: "completed, a step due later", state: "completed", stepState: "pending"},
		{name: "unknown, its required step due later", state: "unknown", stepState: "pending", required: true},
		{name: "waiting for an operator", state: "unknown", operator: true, stepState: "unknown", required: true, due: true},
		{name: "leased by another driver", state: "unknown", leased: true, stepState: "unknown", required: true, due: true},
		{name: "running (its worker's)", state: "running", stepState: "pending", required: true, due: true},
		{name: "due, planned for this server's provider", state: "unknown", stepState: "unknown", required: true, due: true, provider: "http/http://a", want: true},
		{name: "due, planned for another provider", state: "unknown", stepState: "unknown", required: true, due: true, provider: "http/http://b"},
	}
	ids := make([]uuid.UUID, len(cases))
	for i, c := range cases {
		ids[i] = uuid.New()
		outcome := map[string]any{"completed": "confirmed", "unknown": "pending", "running": nil}[c.state]
		lease := map[bool]string{true: "1 hour", false: "-1 minute"}[c.leased]
		if _, err := pool.Exec(ctx, `
			INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome,
			                     needs_operator, lease_until, completed_at)
			VALUES ($1, $2, $3, 'message.send', 'fp', '{}', $4, $5, $6, now() + $7::interval,
			        CASE WHEN $4 = 'completed' THEN now() END)`,
			ids[i], tenant, fmt.Sprintf("case-%d", i), c.state, outcome, c.operator, lease); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		next := map[bool]string{true: "-1 second", false: "1 hour"}[c.due]
		kind, account, _ := strings.Cut(c.provider, "/")
		if _, err := pool.Exec(ctx, `
			INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref,
			                          payload, state, next_check_at, provider_kind, provider_account)
			VALUES ($1, 'send', 1, 'messaging', $2, 'send', $3, $3, '{}', $4, now() + $5::interval, nullif($6, ''), nullif($7, ''))`,
			ids[i], c.required, fmt.Sprintf("case-%d", i), c.stepState, next, kind, account); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE actions; ANALYZE action_steps`); err != nil {
		t.Fatal(err)
	}

	// The plan first: LeaseDue leases what it finds.
	rec := &recorder{}
	// This server serves messaging with the http provider at http://a.
	served := []db.StepProvider{{Capability: "messaging", Kind: "http", Account: "http://a"}}
	params := dbsqlc.LeaseDueParams{
		Owner: new(uuid.New()), Lease: pgtype.Interval{Microseconds: 30e6, Valid: true}, MaxRows: 50,
		Capabilities: []string{"messaging"}, Kinds: []string{"http"}, Accounts: []string{"http://a"},
	}
	if _, err := dbsqlc.New(rec).LeaseDue(ctx, params); !errors.Is(err, errRecorded) || !strings.Contains(rec.sql, "action_steps") {
		t.Fatalf("recording LeaseDue's statement: %v, %q", err, rec.sql)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	check := func(label, sql string, args ...any) {
		t.Helper()
		plan, out := explain(t, conn, label, sql, args...)
		plan.walk(func(n planNode) {
			if n.NodeType == "Seq Scan" && (n.RelationName == "actions" || n.RelationName == "action_steps") {
				t.Errorf("%s scans %s sequentially:\n%s", label, n.RelationName, out)
			}
		})
	}
	check("the custom plan", "EXPLAIN (FORMAT JSON) "+rec.sql, params.Owner, params.Lease, params.MaxRows,
		params.Capabilities, params.Kinds, params.Accounts)
	defer planGeneric(t, conn, "lease_due", rec.sql)()
	check("the generic plan", fmt.Sprintf(
		"EXPLAIN (FORMAT JSON) EXECUTE lease_due('%s', '30 seconds', 50, '{messaging}', '{http}', '{http://a}')", uuid.New()))

	// Then the answer.
	owner := uuid.New()
	leased, err := db.New(pool).LeaseDue(ctx, owner, 30*time.Second, 50, served)
	if err != nil {
		t.Fatal(err)
	}
	var got []uuid.UUID
	for _, l := range leased {
		if l.TenantID != tenant {
			t.Errorf("leased %s of tenant %s, want %s", l.ID, l.TenantID, tenant)
		}
		got = append(got, l.ID)
	}
	for i, c := range cases {
		if slices.Contains(got, ids[i]) != c.want {
			t.Errorf("%s: leased %v, want %v", c.name, !c.want, c.want)
		}
	}
	if len(got) != 4 {
		t.Errorf("leased %d actions, want the 4 due here", len(got))
	}
	// The rows: exactly the due actions are leased to owner, for the
	// lease asked; none of the history is touched.
	var mine, history int
	if err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE lease_owner = $1 AND lease_until > now() + interval '20 seconds'
		                          AND lease_until <= now() + interval '30 seconds'),
		       count(*) FILTER (WHERE idempotency_key LIKE 'done-%' AND lease_owner IS NOT NULL)
		FROM actions WHERE tenant_id = $2`, owner, tenant).Scan(&mine, &history); err != nil {
		t.Fatal(err)
	}
	if mine != 4 || history != 0 {
		t.Errorf("rows leased to the pass: %d (want 4); completed history leased: %d (want 0)", mine, history)
	}
}
