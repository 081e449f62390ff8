package prune_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/prune"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// base is the test's "now"; rows are dated relative to it, so the pruner's
// clock, not the wall clock, decides what is due.
var base = time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	pool   *pgxpool.Pool
	store  *db.Store
	tenant uuid.UUID
}

func setup(t *testing.T) env {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := db.New(pool)
	tn, _, err := store.CreateTenant(t.Context(), "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	return env{pool: pool, store: store, tenant: tn.ID}
}

// action inserts an action with the given state, completed (when state is
// completed) or created at `at`.
func (e env) action(t *testing.T, key, state string, needsOperator bool, at time.Time) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	var outcome, completedAt any
	if state == "completed" {
		outcome, completedAt = "confirmed", at
	}
	_, err := e.pool.Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state,
		                     needs_operator, outcome, http_status, resource_id, result, created_at, completed_at)
		VALUES ($1, $2, $3, 'appointment.book', 'fp', '{"phone":"+15550100123"}', $4, $5, $6, 201, 'r-1', '{"id":"r-1"}', $7, $8)`,
		id, e.tenant, key, state, needsOperator, outcome, at, completedAt)
	if err != nil {
		t.Fatalf("insert action: %v", err)
	}
	return id
}

// completed inserts n completed actions with a body, keyed prefix-1 to
// prefix-n, completed (and created) at at.
func (e env) completed(t *testing.T, prefix string, n int, at time.Time) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `
		INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state,
		                     outcome, http_status, resource_id, result, created_at, completed_at)
		SELECT gen_random_uuid(), $1, $2 || i, 'appointment.book', 'fp', '{}', 'completed',
		       'confirmed', 201, 'r-' || i, '{"id":"x"}', $3, $3
		FROM generate_series(1, $4::int) AS i`, e.tenant, prefix+"-", at, n)
	if err != nil {
		t.Fatalf("insert %d %s actions: %v", n, prefix, err)
	}
}

// row reports whether the action exists and whether it still has its body;
// the normalised request (customer data) must go with the body.
func (e env) row(t *testing.T, id uuid.UUID) (exists, hasBody bool) {
	t.Helper()
	var hasRequest bool
	err := e.pool.QueryRow(t.Context(), "SELECT true, result IS NOT NULL, request <> '{}'::jsonb FROM actions WHERE id = $1", id).Scan(&exists, &hasBody, &hasRequest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("read action: %v", err)
	}
	if hasBody != hasRequest {
		t.Fatalf("action %s: body kept %v but request kept %v; they are pruned together", id, hasBody, hasRequest)
	}
	return exists, hasBody
}

func TestRetentionFollowsTheClock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := prune.New(e.store, prune.Config{ResponseRetention: 24 * time.Hour, ActionRetention: 30 * 24 * time.Hour})
	done := e.action(t, "done", "completed", false, base)
	// Unresolved actions far older than any retention.
	old := base.AddDate(-1, 0, 0)
	unresolved := map[string]uuid.UUID{
		"running":          e.action(t, "running", "running", false, old),
		"unknown":          e.action(t, "unknown", "unknown", false, old),
		"unknown+operator": e.action(t, "unknown-op", "unknown", true, old),
		// Flagged for an operator although completed: still not pruned.
		"completed+operator": e.action(t, "done-op", "completed", true, old),
	}

	steps := []struct {
		at                   time.Duration // after base
		wantExists, wantBody bool
		want                 prune.Counts
	}{
		{23 * time.Hour, true, true, prune.Counts{}},
		{24*time.Hour + time.Second, true, false, prune.Counts{Responses: 1}},
		{30*24*time.Hour - time.Second, true, false, prune.Counts{}},
		{30*24*time.Hour + time.Second, false, false, prune.Counts{Actions: 1}},
		{365 * 24 * time.Hour, false, false, prune.Counts{}},
	}
	for _, s := range steps {
		now := base.Add(s.at)
		dry, err := p.DryRun(t.Context(), now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(t.Context(), now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Responses != s.want.Responses || got.Actions != s.want.Actions {
			t.Errorf("at +%v: pruned %+v, want %+v", s.at, got, s.want)
		}
		if dry.Responses != got.Responses || dry.Actions != got.Actions {
			t.Errorf("at +%v: dry run said %+v, run did %+v", s.at, dry, got)
		}
		exists, body := e.row(t, done)
		if exists != s.wantExists || body != s.wantBody {
			t.Errorf("at +%v: exists=%v body=%v, want %v %v", s.at, exists, body, s.wantExists, s.wantBody)
		}
	}
	for name, id := range unresolved {
		if exists, body := e.row(t, id); !exists || !body {
			t.Errorf("%s action was pruned (exists=%v body=%v)", name, exists, body)
		}
	}
}

func TestPrunes100kActionsInBatches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n, batch = 100_000, 1000
	e.completed(t, "bulk", n, base.AddDate(0, -2, 0))
	// Younger than the action retention: only their bodies go.
	e.completed(t, "recent", 2500, base.AddDate(0, 0, -2))

	var mu sync.Mutex
	reported := map[string]int64{}
	largest := int64(0)
	p := prune.New(e.store, prune.Config{BatchSize: batch, Duty: 1, Pruned: func(kind string, k int64) {
		mu.Lock()
		defer mu.Unlock()
		reported[kind] += k
		largest = max(largest, k)
	}})
	dry, err := p.DryRun(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Actions != n || dry.Responses != 2500 {
		t.Fatalf("dry run: %+v", dry)
	}
	got, err := p.Run(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if got.Actions != n || got.Responses != 2500 {
		t.Fatalf("pruned %+v, want %d actions and 2500 bodies", got, n)
	}
	// 100 full batches and a short one for actions, 2 full and a short one for bodies.
	if got.Batches != 104 || largest > batch {
		t.Fatalf("batches = %d (largest %d), want 104 of at most %d", got.Batches, largest, batch)
	}
	if reported[prune.KindAction] != n || reported[prune.KindResponse] != 2500 {
		t.Fatalf("reported %v", reported)
	}
	var left, bodies int
	if err := e.pool.QueryRow(t.Context(), "SELECT count(*), count(result) FROM actions").Scan(&left, &bodies); err != nil {
		t.Fatal(err)
	}
	if left != 2500 || bodies != 0 {
		t.Fatalf("after prune: %d actions, %d bodies; want 2500 and 0", left, bodies)
	}
	if got.Rested != 0 {
		t.Fatalf("rested %v at a duty of 1", got.Rested)
	}
	t.Logf("pruned %d actions and %d bodies in %d statements", got.Actions, got.Responses, got.Batches)
}

// A pruner at a duty of a quarter rests three times as long as each full
// batch took before the next, and a rest ends with the run's context.
func TestRestsBetweenBatches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const batches, batch = 20, 200
	e.completed(t, "old", batches*batch, base.AddDate(0, -2, 0))
	p := prune.New(e.store, prune.Config{BatchSize: batch, Duty: 0.25})
	began := time.Now()
	got, err := p.Run(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began)
	if got.Actions != batches*batch {
		t.Fatalf("pruned %+v, want %d actions", got, batches*batch)
	}
	// 20 full batches rest 3 times their time each; the two short ones
	// (the last of actions, the only one of bodies) rest not at all.
	if got.Rested < 2*got.Busy || elapsed < got.Busy+got.Rested {
		t.Fatalf("busy %v, rested %v, elapsed %v: want rests of about 3 times the statements' time", got.Busy, got.Rested, elapsed)
	}

	// A run cancelled while it rests returns at once with the context's error.
	e.completed(t, "again", 2*batch, base.AddDate(0, -2, 0))
	ctx, cancel := context.WithCancel(t.Context())
	slow := prune.New(e.store, prune.Config{BatchSize: batch, Duty: 0.0001, Pruned: func(string, int64) { cancel() }})
	got, err = slow.Run(ctx, base)
	if !errors.Is(err, context.Canceled) || got.Actions != batch || got.Batches != 1 {
		t.Fatalf("cancelled while resting: %+v, %v; want one batch and context.Canceled", got, err)
	}
}

func TestSkipsLockedRowsWithoutWaiting(t *testing.T) {
	t.Parallel()
	e := setup(t)
	locked := e.action(t, "locked", "completed", false, base.AddDate(0, -2, 0))
	free := e.action(t, "free", "completed", false, base.AddDate(0, -2, 0))

	// Another session holds the row, as a concurrent request or pruner would.
	tx, err := e.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(t.Context()))
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM actions WHERE id = $1 FOR UPDATE", locked); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p := prune.New(e.store, prune.Config{})
	got, err := p.Run(ctx, base)
	if err != nil {
		t.Fatalf("prune waited on a locked row: %v", err)
	}
	if got.Actions != 1 {
		t.Fatalf("pruned %+v, want the unlocked action only", got)
	}
	if exists, _ := e.row(t, free); exists {
		t.Fatalf("the unlocked action is still there")
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Run(t.Context(), base); err != nil || got.Actions != 1 {
		t.Fatalf("next run: %+v %v", got, err)
	}
	if exists, _ := e.row(t, locked); exists {
		t.Fatalf("the formerly locked action survived the next run")
	}
}

// A completed action can still have a step to finish (a confirmation
// message after a booking): the action and its step stay, whatever their age.
func TestKeepsCompletedActionsWithAnUnresolvedStep(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := prune.New(e.store, prune.Config{ResponseRetention: time.Hour, ActionRetention: 2 * time.Hour})
	id := e.action(t, "booked-message-unknown", "completed", false, base)
	if _, err := e.pool.Exec(t.Context(), `
		INSERT INTO action_steps (action_id, name, seq, capability, required, operation, provider_key, external_ref, payload, state)
		VALUES ($1, 'messaging', 1, 'messaging', false, 'message.send', 'pk', 'ref', '{}', 'unknown')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(t.Context(), base.AddDate(1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if exists, _ := e.row(t, id); !exists {
		t.Fatalf("the action was pruned with its unresolved step")
	}
	var steps int
	if err := e.pool.QueryRow(t.Context(), "SELECT count(*) FROM action_steps WHERE action_id = $1", id).Scan(&steps); err != nil || steps != 1 {
		t.Fatalf("unresolved steps left = %d (%v), want 1", steps, err)
	}
	// Deleting the action directly cannot take the step with it either.
	if _, err := e.pool.Exec(t.Context(), "DELETE FROM actions WHERE id = $1", id); err == nil {
		t.Fatalf("an action with a step was deleted: its step went with it")
	}
}
