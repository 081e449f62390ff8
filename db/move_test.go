package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

type movePair struct {
	home           *db.Store
	homeURL, other string
}

func newMovePair(t *testing.T) movePair {
	t.Helper()
	homeURL := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), homeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return movePair{home: db.New(pool), homeURL: homeURL, other: pgtest.NewDB(t)}
}

func (p movePair) move(t *testing.T, tenant uuid.UUID, from, to, toName string) (db.MoveResult, error) {
	t.Helper()
	ctx := t.Context()
	src, err := pgx.Connect(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(context.Background())
	dst, err := pgx.Connect(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(context.Background())
	return db.TenantMove{Home: p.home, Source: src, Target: dst, TargetName: toName, Tenant: tenant,
		Drain: time.Second, MaxPause: time.Minute}.Run(ctx)
}

func countRows(t *testing.T, url, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A tenant with an action still running stays where it is, unpaused, and
// nothing of it reaches the target.
func TestMoveRefusesARunningAction(t *testing.T) {
	p := newMovePair(t)
	ctx := t.Context()
	tn, _, err := p.home.CreateTenant(ctx, "moving", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.home.Pool().Exec(ctx, `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request)
		VALUES ($1, $2, 'k1', 'appointment.book', 'f', '{}')`, uuid.New(), tn.ID); err != nil {
		t.Fatal(err)
	}
	_, err = p.move(t, tn.ID, p.homeURL, p.other, "b")
	if refused, ok := errors.AsType[*db.RefusedError](err); !ok {
		t.Fatalf("move with a running action: %v, want refused", err)
	} else {
		t.Logf("refused: %v", refused)
	}
	dir, err := p.home.Directory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pl, ok := dir[tn.ID]; ok {
		t.Errorf("after a refused move the directory has %+v for the tenant, want nothing (home, not paused)", pl)
	}
	if n := countRows(t, p.other, "SELECT count(*) FROM tenants WHERE id = $1", tn.ID); n != 0 {
		t.Errorf("the target has the tenant after a refused move")
	}
	if n := countRows(t, p.homeURL, "SELECT count(*) FROM actions WHERE tenant_id = $1", tn.ID); n != 1 {
		t.Errorf("the source has %d actions of the tenant, want 1", n)
	}
}

// A tenant moves to a cluster and back: every row comes along (ids of
// bigserial columns too, and the target's sequence goes past them), the
// directory follows, and a second move of it while it is paused is
// refused.
func TestMoveThereAndBack(t *testing.T) {
	p := newMovePair(t)
	ctx := t.Context()
	tn, _, err := p.home.CreateTenant(ctx, "moving", "")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := p.home.CreateTenant(ctx, "staying", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uuid.UUID{tn.ID, other.ID} {
		action := uuid.New()
		if _, err := p.home.Pool().Exec(ctx, `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request, state, outcome)
			VALUES ($1, $2, 'k1', 'appointment.book', 'f', '{}', 'completed', 'confirmed')`, action, id); err != nil {
			t.Fatal(err)
		}
		if _, err := p.home.Pool().Exec(ctx, `INSERT INTO action_events (action_id, kind) VALUES ($1, 'claimed')`, action); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.move(t, tn.ID, p.homeURL, p.other, "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moved %d rows, paused %v", res.Rows(), res.Paused)
	if c, _ := p.home.TenantCluster(ctx, tn.ID); c != "b" {
		t.Errorf("the directory places the tenant on %q, want b", c)
	}
	for _, q := range []string{"SELECT count(*) FROM tenants WHERE id = $1", "SELECT count(*) FROM actions WHERE tenant_id = $1",
		"SELECT count(*) FROM action_events WHERE tenant_id = $1", "SELECT count(*) FROM api_keys WHERE tenant_id = $1"} {
		if n := countRows(t, p.other, q, tn.ID); n != 1 {
			t.Errorf("%s on the target: %d, want 1", q, n)
		}
		if n := countRows(t, p.homeURL, q, tn.ID); n != 0 {
			t.Errorf("%s on the source: %d, want 0", q, n)
		}
		if n := countRows(t, p.homeURL, q, other.ID); n != 1 {
			t.Errorf("%s of the other tenant: %d, want 1", q, n)
		}
	}
	// The target's action_events sequence is past the copied ids.
	if n := countRows(t, p.other, `SELECT count(*) FROM action_events
		WHERE id >= (SELECT last_value FROM action_events_id_seq) AND id <> (SELECT last_value FROM action_events_id_seq)`); n != 0 {
		t.Errorf("the target's sequence is behind %d copied ids", n)
	}
	// A move to where it lives is refused, and leaves it unpaused.
	if _, err := p.move(t, tn.ID, p.other, p.other, "b"); err == nil || !strings.Contains(err.Error(), "lives on cluster b already") {
		t.Errorf("a move to the cluster it lives on: %v, want refused", err)
	}
	if dir, err := p.home.Directory(ctx); err != nil || dir[tn.ID] != (db.Placement{Cluster: "b"}) {
		t.Errorf("after a refused move the directory has %+v (%v), want b, unpaused", dir[tn.ID], err)
	}
	// A move while it is paused is refused.
	until, _, err := p.home.PauseTenant(ctx, tn.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.move(t, tn.ID, p.other, p.homeURL, ""); !errors.Is(err, db.ErrAlreadyPaused) {
		t.Errorf("a move of a paused tenant: %v, want ErrAlreadyPaused", err)
	}
	if err := p.home.UnpauseTenant(ctx, tn.ID, until); err != nil {
		t.Fatal(err)
	}
	if _, err := p.move(t, tn.ID, p.other, p.homeURL, ""); err != nil {
		t.Fatalf("move back: %v", err)
	}
	if c, _ := p.home.TenantCluster(ctx, tn.ID); c != "" {
		t.Errorf("after the move back the directory places the tenant on %q, want home", c)
	}
	if n := countRows(t, p.homeURL, "SELECT count(*) FROM action_events WHERE tenant_id = $1", tn.ID); n != 1 {
		t.Errorf("after the move back the home cluster has %d events of the tenant, want 1", n)
	}
}

// A write whose tenant's row is gone from this database (the tenant moved
// while the request ran) is a fault saying nothing was stored, so that the
// caller retries: its claim's insert into actions is refused by the foreign
// key to tenants.
func TestAWriteOfAMovedTenantIsUnavailable(t *testing.T) {
	p := newMovePair(t)
	ctx := t.Context()
	_, err := p.home.Pool().Exec(ctx, `INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request)
		VALUES ($1, $2, 'k1', 'appointment.book', 'f', '{}')`, uuid.New(), uuid.New())
	if ue, ok := errors.AsType[*db.UnavailableError](db.Fault(err)); !ok || !strings.Contains(ue.Message, "moved to another database cluster") {
		t.Errorf("an insert for a tenant not in the database: %v, want unavailable, nothing stored", db.Fault(err))
	}
	// Any other foreign-key violation stays what it is.
	_, err = p.home.Pool().Exec(ctx, `INSERT INTO action_events (tenant_id, action_id, kind) VALUES ($1, $2, 'x')`, uuid.New(), uuid.New())
	if _, ok := errors.AsType[*db.UnavailableError](db.Fault(err)); ok || err == nil {
		t.Errorf("another foreign-key violation: %v", db.Fault(err))
	}
}
