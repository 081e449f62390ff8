package step_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// keylessEnv is a store with one message.send action whose messaging step
// is unknown, and a driver whose messaging provider (the simulator) does not
// honour idempotency keys: recovery goes by lookup, and only one write may
// ever be sent.
type keylessEnv struct {
	pool   *pgxpool.Pool
	store  *db.Store
	sim    *simtest.Sim
	driver *step.Driver
	action oncecall.Action
}

func setupKeyless(t *testing.T) keylessEnv {
	t.Helper()
	return setupKeylessOn(t, pgtest.NewDB(t))
}

// setupKeylessOn is setupKeyless on the database at url, opened (and
// migrated) as the server opens its own, with the notice handler that
// sees a cancelled wait for the standby.
func setupKeylessOn(t *testing.T, url string) keylessEnv {
	t.Helper()
	pool, err := app.OpenPool(t.Context(), url, "", app.DefaultMaxConns(), db.Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := db.New(pool)
	sim := simtest.Start(t, providersim.Config{NoIdempotency: true})
	providers := provider.Set{provider.Messaging: provider.NewHTTP(provider.HTTPConfig{
		BaseURL: sim.URL, Timeout: 5 * time.Second,
		Traits: provider.Traits{KeyRetention: time.Hour, VisibilityDelay: 10 * time.Second, AuthoritativeLookup: true},
	})}
	driver := step.NewDriver(store, app.Operations(), providers, step.Config{}, zerolog.Nop())

	tenant, _, err := store.CreateTenant(t.Context(), "keyless", "")
	if err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]any{"to": "+15550100100", "channel": "sms", "template": "generic", "variables": map[string]string{"body": "Hello"}})
	prep, err := app.Operations().MustGet("message.send").Prepare(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := prep.Steps(driver)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	err = store.InTx(t.Context(), func(tx *db.Tx) error {
		if _, err := tx.ClaimAction(t.Context(), db.Claim{
			ID: id, TenantID: tenant.ID, Key: "keyless-1", Operation: prep.Operation, Fingerprint: prep.Fingerprint,
			Request: prep.Input, Lease: time.Minute,
		}); err != nil {
			return err
		}
		for i := range steps {
			steps[i].ProviderKey = idem.ProviderKey(id.String(), steps[i].Name)
			steps[i].ExternalRef = id.String() + "/" + steps[i].Name
		}
		return tx.InsertSteps(t.Context(), id, steps)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt's answer was lost long ago: the step is unknown, and
	// past the visibility delay an authoritative "not found" would allow
	// sending it.
	if _, err := pool.Exec(t.Context(), `UPDATE action_steps SET state = 'unknown', last_sent_at = now() - interval '1 hour' WHERE action_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE actions SET state = 'unknown', lease_until = NULL WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	a, err := store.ActionByID(t.Context(), tenant.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return keylessEnv{pool: pool, store: store, sim: sim, driver: driver, action: a}
}

// Two drivers on one action (a reconciler whose lease ran out and the one
// that took over) both learn from the provider's lookup that the write does
// not exist. Only the first of them may send it: the second read the step
// before the first sent, and must not act on that stale read.
func TestOnlyOneOfTwoDriversSendsAStep(t *testing.T) {
	t.Parallel()
	e := setupKeyless(t)
	ctx := context.Background()
	// The slow driver's lookup takes a second, during which the fast one
	// looks up, sends and records. Its write is invisible to lookups for
	// 5s (within the provider's declared 10s visibility delay).
	e.sim.Fault(provider.Messaging, "lookup_lag=5s", 0)
	if _, err := e.sim.Admin.AddFault(ctx, providersim.Rule{Capability: provider.Messaging, Fault: "delay=1s", On: "lookup", Count: 1}); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	slowOwner, fastOwner := uuid.New(), uuid.New()
	e.lease(t, slowOwner)
	go func() {
		_, err := e.driver.Drive(ctx, e.action, slowOwner)
		slow <- err
	}()
	waitFor(t, "the slow driver's lookup to start", func() bool {
		rules, err := e.sim.Admin.Faults(ctx)
		return err == nil && len(rules) == 1 // the one-shot delay is taken
	})
	// The slow driver's lease runs out and another driver takes the action.
	e.lease(t, fastOwner)
	fast, err := e.driver.Drive(ctx, e.action, fastOwner)
	if err != nil {
		t.Fatal(err)
	}
	if fast.State != oncecall.Completed || fast.Outcome != oncecall.Confirmed {
		t.Fatalf("the first driver left the action %s %s, want completed confirmed", fast.State, fast.Outcome)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if ledger := e.sim.Ledger(provider.Messaging); len(ledger) != 1 {
		var ids []string
		for _, w := range ledger {
			ids = append(ids, w.ID+" at "+w.CreatedAt.Format(time.RFC3339Nano))
		}
		t.Fatalf("the provider holds %d messages for one action, want 1: %v", len(ledger), ids)
	}
}

// lease gives owner the action's lease, as a reconciler's pass does.
func (e keylessEnv) lease(t *testing.T, owner uuid.UUID) {
	t.Helper()
	if _, err := e.pool.Exec(t.Context(), `UPDATE actions SET lease_owner = $2, lease_until = now() + interval '1 minute' WHERE id = $1`, e.action.ID, owner); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(5 * time.Millisecond) // poll interval of a condition wait
	}
}
