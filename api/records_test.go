package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// recordsEnv is a running oncecall with one tenant, for the payment,
// message and customer operations.
type recordsEnv struct {
	*apptest.Env
	t      *testing.T
	key    string
	tenant uuid.UUID
	seq    *atomic.Int64
}

func setupRecords(t *testing.T, cfg ...func(*app.Config)) recordsEnv {
	t.Helper()
	e := apptest.Start(t, cfg...)
	tenant, key := e.Tenant("acme")
	return recordsEnv{Env: e, t: t, key: key, tenant: tenant.ID, seq: &atomic.Int64{}}
}

// withPayments serves payments by the provider simulator sim: without a
// payments provider oncecall charges nothing (PAYMENTS_NOT_CONFIGURED).
func withPayments(sim *simtest.Sim) func(*app.Config) {
	return func(c *app.Config) {
		if c.Providers == nil {
			c.Providers = provider.Set{}
		}
		c.Providers[provider.Payments] = simProvider(sim)
	}
}

// simPayments serves payments by a provider simulator of their own.
func simPayments(t *testing.T) func(*app.Config) {
	return withPayments(simtest.Start(t, providersim.Config{}))
}

// setupPayments is setupRecords with payments by a provider simulator of
// its own.
func setupPayments(t *testing.T) (recordsEnv, *simtest.Sim) {
	t.Helper()
	sim := simtest.Start(t, providersim.Config{})
	return setupRecords(t, withPayments(sim)), sim
}

// customer creates a customer directly in the database; phone and email may
// be empty.
func (e recordsEnv) customer(phone, email string) uuid.UUID {
	e.t.Helper()
	c, err := e.Store.CreateCustomer(context.Background(), db.NewCustomer{
		TenantID: e.tenant, Name: fmt.Sprintf("Customer %d", e.seq.Add(1)), Phone: phone, Email: email,
	})
	if err != nil {
		e.t.Fatalf("create customer: %v", err)
	}
	return c.ID
}

// intent approves amount EUR cents for a new customer through the API and
// returns the intent's id.
func (e recordsEnv) intent(amount int64, method string) string {
	e.t.Helper()
	body := map[string]any{"customer_id": e.customer("", ""), "amount": amount, "currency": "eur"}
	if method != "" {
		body["payment_method"] = method
	}
	r := e.Post("/v1/payment-intents", e.key, uuid.NewString(), body)
	if r.Status != http.StatusCreated {
		e.t.Fatalf("create intent: %d %s", r.Status, r.Body)
	}
	return resultOf(e.t, r)["id"].(string)
}

// send sends a write with method (POST or PATCH).
func (e recordsEnv) send(method, path, idemKey string, body any) apptest.Response {
	e.t.Helper()
	return e.Request(method, path, e.key, body, "Idempotency-Key", idemKey)
}

// resultOf returns the result member of an action envelope.
func resultOf(t *testing.T, r apptest.Response) map[string]any {
	t.Helper()
	res, ok := r.JSON(t)["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %d %s", r.Status, r.Body)
	}
	return res
}

// detailsOf returns the details member of a rejection.
func detailsOf(t *testing.T, r apptest.Response) map[string]any {
	t.Helper()
	d, ok := r.JSON(t)["details"].(map[string]any)
	if !ok {
		t.Fatalf("no details in %d %s", r.Status, r.Body)
	}
	return d
}

// wantRejection fails unless r is a stored 422 rejection with code.
func wantRejection(t *testing.T, r apptest.Response, code string) {
	t.Helper()
	p := r.JSON(t)
	if r.Status != http.StatusUnprocessableEntity || p["code"] != code || p["outcome"] != "rejected" ||
		r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("want rejection %s, got %d %s", code, r.Status, r.Body)
	}
}
