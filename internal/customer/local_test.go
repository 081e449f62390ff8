package customer_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/customer"
	"github.com/oncecall/oncecall/internal/op/optest"
	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A points change written in SQL (one round trip) stores what the Go
// writes store, for every outcome. Each case runs both ways on twin
// customers with the same balance.
func TestPointsInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	withBalance := func(points int64) func() uuid.UUID {
		return func() uuid.UUID {
			c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: "Ana"})
			if err != nil {
				t.Fatal(err)
			}
			if points != 0 {
				if _, ok, err := store.AddPoints(t.Context(), db.PointsChange{TenantID: tenant, ActionID: uuid.New(), CustomerID: c.ID, Delta: points, Reason: "start"}); err != nil || !ok {
					t.Fatalf("starting balance: %v %v", ok, err)
				}
			}
			return c.ID
		}
	}
	missing := uuid.New()
	cases := []struct {
		name     string
		customer func() uuid.UUID
		delta    int64
		reason   string
		outcome  db.Outcome
		code     string
	}{
		{"add", withBalance(0), 25, "visit", db.Confirmed, ""},
		{"redeem", withBalance(40), -30, "free coffee", db.Confirmed, ""},
		{"text to escape", withBalance(0), 5, `<birthday & "bonus"> é`, db.Confirmed, ""},
		{"insufficient", withBalance(10), -30, "free lunch", db.Rejected, customer.InsufficientPoints},
		{"customer missing", func() uuid.UUID { return missing }, 5, "visit", db.Rejected, customer.NotFound},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, customer.AddPoints, func(inSQL bool) []byte {
			id := c.customer()
			ids[map[bool]int{true: 0, false: 1}[inSQL]] = []string{id.String()}
			b, _ := json.Marshal(map[string]any{"customer_id": id, "delta": c.delta, "reason": c.reason})
			return b
		})
		// Each run's ledger entry has its own time.
		for i, a := range got {
			var e struct {
				CreatedAt string `json:"created_at"`
			}
			if json.Unmarshal(a.Result, &e) == nil && e.CreatedAt != "" {
				ids[i] = append(ids[i], e.CreatedAt)
			}
		}
		if got[0].Outcome != c.outcome || got[0].Reason != c.code {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.code)
		}
		optest.Same(t, c.name, got, ids, strings.ContainsAny(c.reason, "<>&"))
	}
}

// A note written in SQL stores what the Go writes store, for every outcome.
func TestNoteInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	fresh := func() uuid.UUID {
		c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: "Ana"})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	missing := uuid.New()
	cases := []struct {
		name     string
		customer func() uuid.UUID
		text     string
		outcome  db.Outcome
		reason   string
	}{
		{"confirmed", fresh, "Prefers mornings", db.Confirmed, ""},
		{"confirmed, text to escape", fresh, "<Allergic> to \"latex\" & nuts\né\u2028", db.Confirmed, ""},
		{"customer missing", func() uuid.UUID { return missing }, "Prefers mornings", db.Rejected, customer.NotFound},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, customer.AppendNote, func(inSQL bool) []byte {
			id := c.customer()
			i := 1
			if inSQL {
				i = 0
			}
			ids[i] = []string{id.String()}
			b, _ := json.Marshal(map[string]any{"customer_id": id, "text": c.text})
			return b
		})
		// Each run's note has its own time.
		for i, a := range got {
			var n struct {
				CreatedAt string `json:"created_at"`
			}
			if json.Unmarshal(a.Result, &n) == nil && n.CreatedAt != "" {
				ids[i] = append(ids[i], n.CreatedAt)
			}
		}
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, strings.ContainsAny(c.text, "<>&\u2028"))
	}
}
