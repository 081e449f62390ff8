package customer_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/customer"
)

// A points change that waits for another transaction spending the
// same customer's points is rejected as insufficient, and its answer gives
// the balance that transaction left, not the one the statement began with.
func TestAPointsChangeInSQLRejectedByARaceGivesTheBalanceAsItIs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: e.Tenant, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Store.AddPoints(t.Context(), db.PointsChange{TenantID: e.Tenant, ActionID: uuid.New(), CustomerID: c.ID, Delta: 10, Reason: "start"}); err != nil || !ok {
		t.Fatalf("starting balance: %v %v", ok, err)
	}
	body, _ := json.Marshal(map[string]any{"customer_id": c.ID, "delta": -5, "reason": "reward"})
	a := e.WhileHeld(t, customer.AddPoints, body, uuid.NewString(), func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), "UPDATE customers SET points = 2 WHERE id = $1", c.ID)
		return err
	}, func(tx pgx.Tx) error { return tx.Commit(t.Context()) })
	var got struct {
		Balance int64 `json:"balance"`
	}
	if err := json.Unmarshal(a.Result, &got); err != nil {
		t.Fatalf("answer %s: %v", a.Result, err)
	}
	if a.Reason != customer.InsufficientPoints || got.Balance != 2 {
		t.Fatalf("answer %s %s, want %s with balance 2", a.Reason, a.Result, customer.InsufficientPoints)
	}
}
