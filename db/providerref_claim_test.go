package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// running claims a running action of tenant under key.
func running(t *testing.T, store *db.Store, tenant uuid.UUID, key string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	claimed, err := store.ClaimTx(t.Context(), t.Context(), db.Claim{
		ID: id, TenantID: tenant, Key: key, Operation: "payment.charge", Fingerprint: "f", Request: []byte(`{}`),
		Lease: time.Minute, LeaseOwner: uuid.New(),
	}, func(*db.Tx) (*db.Completion, error) { return nil, nil })
	if err != nil || !claimed {
		t.Fatalf("claim %s: %v, claimed %v", key, err, claimed)
	}
	return id
}

// waitingOnLock waits until a backend of the pool waits on a lock.
func waitingOnLock(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	t.Fatal("no claim waited for the first one's transaction")
}

// A provider's write found by a search is the step's that claims its
// reference first: a second step's claim waits for the first's transaction
// and finds the reference held once it commits; a claim rolled back leaves
// the reference free. Rows, not an advisory lock, decide (migration 0041).
func TestAFoundWriteIsClaimedByOneStep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	store := db.New(pool)
	a, _, err := store.CreateTenant(ctx, "a", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := store.CreateTenant(ctx, "b", "")
	if err != nil {
		t.Fatal(err)
	}
	first, second := running(t, store, a.ID, "k1"), running(t, store, b.ID, "k2")

	for _, commit := range []bool{false, true} {
		ref := "ch_" + uuid.NewString()
		claimed := make(chan bool, 1)
		release := make(chan struct{})
		errRollback := errors.New("rolled back")
		firstDone := make(chan error, 1)
		go func() {
			firstDone <- store.InTx(ctx, func(tx *db.Tx) error {
				held, err := tx.ClaimProviderRef(ctx, "payments", ref, a.ID, first, "payments")
				if err != nil {
					return err
				}
				claimed <- held
				<-release
				if !commit {
					return errRollback
				}
				return nil
			})
		}()
		if held := <-claimed; held {
			t.Fatalf("commit %v: the first claim found the reference held", commit)
		}
		secondHeld := make(chan bool, 1)
		secondDone := make(chan error, 1)
		go func() {
			secondDone <- store.InTx(ctx, func(tx *db.Tx) error {
				held, err := tx.ClaimProviderRef(context.WithoutCancel(ctx), "payments", ref, b.ID, second, "payments")
				secondHeld <- held
				return err
			})
		}()
		waitingOnLock(t, pool)
		close(release)
		if err := <-firstDone; commit && err != nil || !commit && !errors.Is(err, errRollback) {
			t.Fatalf("commit %v: first transaction: %v", commit, err)
		}
		if err := <-secondDone; err != nil {
			t.Fatalf("commit %v: second claim: %v", commit, err)
		}
		if held := <-secondHeld; held != commit {
			t.Fatalf("commit %v: the second step found the reference held = %v, want %v", commit, held, commit)
		}
		var holder uuid.UUID
		if err := pool.QueryRow(ctx, `SELECT action_id FROM provider_ref_claims WHERE provider_ref = $1`, ref).Scan(&holder); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]uuid.UUID{true: first, false: second}[commit]; holder != want {
			t.Fatalf("commit %v: the claim is %s's, want %s", commit, holder, want)
		}
	}
}
