package step_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// A driver whose lease was taken over finds the action settled by the
// driver that took it, and that driver's COMMIT had its wait for the
// synchronous standby cancelled: the completion is on the primary only.
// The first driver must not hand it on as its answer (a request waiting
// on it would confirm what a failover loses) until the standby has it.
func TestMovedActionIsNotAnsweredBeforeTheStandbyHasIt(t *testing.T) {
	t.Parallel()
	pair := pgtest.SyncPair(t)
	e := setupKeylessOn(t, pair.URL("oncecall"))
	ctx := context.Background()
	slowOwner, fastOwner := uuid.New(), uuid.New()
	e.lease(t, fastOwner) // the slow driver's lease ran out and another driver took the action
	pair.WaitStandby(t)

	resume := pair.StallReceiver(t)
	settled := make(chan error, 1)
	go func() {
		settled <- e.store.InTx(ctx, func(tx *db.Tx) error {
			ok, err := tx.ResolveAction(ctx, e.action.ID, fastOwner, db.Completion{
				Outcome: oncecall.Confirmed, Status: 200, Result: []byte(`{"id":"msg_1"}`),
			}, false)
			if err == nil && !ok {
				err = errors.New("the lease holder could not settle the action")
			}
			return err
		})
	}()
	pid := pair.WaitCommitWaits(t, "oncecall")
	if _, err := e.pool.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	if err := <-settled; err == nil {
		t.Fatal("a COMMIT whose wait for the standby was cancelled reported success")
	}
	const completed = "SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed'"
	var onPrimary int
	if err := e.pool.QueryRow(ctx, completed, e.action.ID).Scan(&onPrimary); err != nil {
		t.Fatal(err)
	}
	if onStandby := pair.StandbyCount(t, "oncecall", completed, e.action.ID); onPrimary != 1 || onStandby != 0 {
		t.Fatalf("completed actions: primary %d, standby %d; want 1 and 0", onPrimary, onStandby)
	}

	got, err := e.driver.Drive(ctx, e.action, slowOwner)
	if got.State == oncecall.Completed || !db.NotReplicated(err) {
		t.Fatalf("the driver whose lease moved answered %s %s (error %v) while only the primary has it; want the action as it knew it and a not-replicated error",
			got.State, got.Outcome, err)
	}
	if ledger := e.sim.Ledger(provider.Messaging); len(ledger) != 0 {
		t.Fatalf("the driver whose lease moved sent %d messages", len(ledger))
	}

	resume()
	pair.WaitStandby(t)
	got, err = e.driver.Drive(ctx, e.action, slowOwner)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != oncecall.Completed || got.Outcome != oncecall.Confirmed {
		t.Fatalf("once the standby has it the moved action reads %s %s, want completed confirmed", got.State, got.Outcome)
	}
}
