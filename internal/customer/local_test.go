package customer_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
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
		outcome  oncecall.Outcome
		code     string
	}{
		{"add", withBalance(0), 25, "visit", oncecall.Confirmed, ""},
		{"redeem", withBalance(40), -30, "free coffee", oncecall.Confirmed, ""},
		{"text to escape", withBalance(0), 5, `<birthday & "bonus"> é`, oncecall.Confirmed, ""},
		{"insufficient", withBalance(10), -30, "free lunch", oncecall.Rejected, customer.InsufficientPoints},
		{"customer missing", func() uuid.UUID { return missing }, 5, "visit", oncecall.Rejected, customer.NotFound},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, customer.AddPoints, func(inSQL bool) []byte {
			id := c.customer()
			ids[map[bool]int{true: 0, false: 1}[inSQL]] = []string{id.String()}
			b, _ := json.Marshal(map[string]any{"customer_id": id, "delta": c.delta, "reason": c.reason})
			return b
		})
		optest.OwnTimes(got, &ids)
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
		outcome  oncecall.Outcome
		reason   string
	}{
		{"confirmed", fresh, "Prefers mornings", oncecall.Confirmed, ""},
		{"confirmed, text to escape", fresh, "<Allergic> to \"latex\" & nuts\né\u2028", oncecall.Confirmed, ""},
		{"customer missing", func() uuid.UUID { return missing }, "Prefers mornings", oncecall.Rejected, customer.NotFound},
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
		optest.OwnTimes(got, &ids)
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, strings.ContainsAny(c.text, "<>&\u2028"))
	}
}

// A customer created in SQL is stored as the Go writes store it, for every
// outcome. Twin runs use twin phones and references (the SQL run's end in
// 1, the Go run's in 2) so that neither finds the other's customer.
func TestCreateCustomerInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	existing := func(phone, ref string) uuid.UUID {
		c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: "On file", Phone: phone, ExternalRef: ref})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	cases := []struct {
		name    string
		before  func(twin string) []string // makes the database state; returns ids the body may name
		input   func(twin string) map[string]any
		outcome oncecall.Outcome
		reason  string
	}{
		{"all fields", nil, func(n string) map[string]any {
			return map[string]any{"name": "Ana <Lima> & co", "phone": "+4420794609" + n + "0", "email": "ana" + n + "@example.com", "external_ref": "crm-" + n}
		}, oncecall.Confirmed, ""},
		{"name only", nil, func(string) map[string]any { return map[string]any{"name": "Bo"} }, oncecall.Confirmed, ""},
		{"phone on file", func(n string) []string { return []string{existing("+4420794608"+n+"0", "").String()} },
			func(n string) map[string]any {
				return map[string]any{"name": "Ana", "phone": "+4420794608" + n + "0", "external_ref": "other-" + n}
			}, oncecall.Rejected, customer.Exists},
		{"reference on file", func(n string) []string { return []string{existing("", "ref-"+n).String()} },
			func(n string) map[string]any { return map[string]any{"name": "Ana", "external_ref": "ref-" + n} }, oncecall.Rejected, customer.Exists},
		{"phone first when both are on file", func(n string) []string {
			return []string{existing("+4420794607"+n+"0", "").String(), existing("", "both-"+n).String()}
		}, func(n string) map[string]any {
			return map[string]any{"name": "Ana", "phone": "+4420794607" + n + "0", "external_ref": "both-" + n}
		}, oncecall.Rejected, customer.Exists},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, customer.Create, func(inSQL bool) []byte {
			twin, i := "2", 1
			if inSQL {
				twin, i = "1", 0
			}
			if c.before != nil {
				ids[i] = c.before(twin)
			}
			in := c.input(twin)
			for _, k := range []string{"phone", "email", "external_ref"} {
				if v, ok := in[k].(string); ok {
					ids[i] = append(ids[i], v)
				}
			}
			b, _ := json.Marshal(in)
			return b
		})
		optest.OwnTimes(got, &ids)
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, got[0].Result, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, c.name == "all fields")
	}
}

// A customer changed in SQL is stored as the Go writes store it, for every
// outcome. Twin runs change twin customers (phones and references ending in
// 1 for the SQL run, 2 for the Go run).
func TestUpdateCustomerInSQLStoresWhatGoStores(t *testing.T) {
	t.Parallel()
	e := optest.Setup(t)
	store, tenant := e.Store, e.Tenant
	made := func(name, phone, ref string) uuid.UUID {
		c, err := store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: tenant, Name: name, Phone: phone, Email: "x@example.com", ExternalRef: ref})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	cases := []struct {
		name    string
		make    func(n string) []uuid.UUID // [the customer to change, others the body may name]
		input   func(n string) map[string]any
		outcome oncecall.Outcome
		reason  string
	}{
		{"every field", func(n string) []uuid.UUID { return []uuid.UUID{made("Ana", "+4420794601"+n+"0", "a-"+n)} },
			func(n string) map[string]any {
				return map[string]any{"name": "Ana <B> & C", "phone": "+4420794602" + n + "0", "email": "new" + n + "@example.com", "external_ref": "b-" + n}
			}, oncecall.Confirmed, ""},
		{"fields removed", func(n string) []uuid.UUID { return []uuid.UUID{made("Ana", "+4420794603"+n+"0", "c-"+n)} },
			func(string) map[string]any { return map[string]any{"phone": nil, "email": nil, "external_ref": nil} }, oncecall.Confirmed, ""},
		{"its own phone again", func(n string) []uuid.UUID { return []uuid.UUID{made("Ana", "+4420794604"+n+"0", "")} },
			func(n string) map[string]any { return map[string]any{"phone": "+4420794604" + n + "0"} }, oncecall.Confirmed, ""},
		{"missing", func(string) []uuid.UUID { return []uuid.UUID{uuid.New()} },
			func(string) map[string]any { return map[string]any{"name": "Bo"} }, oncecall.Rejected, customer.NotFound},
		{"phone on another", func(n string) []uuid.UUID {
			return []uuid.UUID{made("Ana", "", ""), made("Other", "+4420794605"+n+"0", "")}
		}, func(n string) map[string]any { return map[string]any{"phone": "+4420794605" + n + "0"} }, oncecall.Rejected, customer.Exists},
		{"reference on another", func(n string) []uuid.UUID {
			return []uuid.UUID{made("Ana", "", ""), made("Other", "", "d-"+n)}
		}, func(n string) map[string]any { return map[string]any{"external_ref": "d-" + n} }, oncecall.Rejected, customer.Exists},
	}
	for _, c := range cases {
		var ids [2][]string
		got := e.Run(t, customer.Update, func(inSQL bool) []byte {
			twin, i := "2", 1
			if inSQL {
				twin, i = "1", 0
			}
			made := c.make(twin)
			for _, id := range made {
				ids[i] = append(ids[i], id.String())
			}
			in := c.input(twin)
			for _, k := range []string{"phone", "email", "external_ref"} {
				if v, ok := in[k].(string); ok {
					ids[i] = append(ids[i], v)
				}
			}
			in["customer_id"] = made[0]
			b, _ := json.Marshal(in)
			return b
		})
		optest.OwnTimes(got, &ids)
		if got[0].Outcome != c.outcome || got[0].Reason != c.reason {
			t.Errorf("%s: in SQL %s %s %s, want %s %s", c.name, got[0].Outcome, got[0].Reason, got[0].Result, c.outcome, c.reason)
		}
		optest.Same(t, c.name, got, ids, c.name == "every field")
	}
}
