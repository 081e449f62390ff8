package customer_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/customer"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op/optest"
)

// A points change in SQL that waits for another transaction spending the
// same customer's points is rejected as insufficient, and its answer gives
// the balance that transaction left, not the one the statement began with.
func TestAPointsChangeInSQLRejectedByARaceGivesTheBalanceAsItIs(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: e.Tenant, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Store.AddPoints(t.Context(), db.PointsChange{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: c.ID, Delta: 10, Reason: "start"}); err != nil || !ok {
		t.Fatalf("starting balance: %v %v", ok, err)
	}
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context()) //nolint:errcheck
	if _, err := tx.Exec(t.Context(), "UPDATE customers SET points = 2 WHERE id = $1", c.ID); err != nil {
		t.Fatal(err)
	}

	body, _ := json.Marshal(map[string]any{"customer_id": c.ID, "delta": -5, "reason": "reward"})
	p, err := customer.AddPoints.Prepare(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan idem.Reply, 1)
	go func() {
		r, err := e.Core.Do(t.Context(), idem.Request{
			TenantID: e.Tenant, Key: uuid.NewString(), Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
			Run: p.Run, Local: p.Local,
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := e.Store.Pool().QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the points change never waited for the other transaction")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var got struct {
		Balance int64 `json:"balance"`
	}
	if err := json.Unmarshal(r.Action.Result, &got); err != nil {
		t.Fatalf("answer %s: %v", r.Action.Result, err)
	}
	if r.Action.Reason != customer.InsufficientPoints || got.Balance != 2 {
		t.Fatalf("answer %s %s, want %s with balance 2", r.Action.Reason, r.Action.Result, customer.InsufficientPoints)
	}
}
