package reconcile_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// remoteEnv is oncecall with some capabilities served by the simulator and
// the reconciler driven by the test, pass by pass.
type remoteEnv struct {
	*apptest.Env
	sim    *simtest.Sim
	key    string
	tenant uuid.UUID
	// hours counts the slots writeOf books: each at its own hour, as a
	// calendar holds one appointment at a time.
	hours *atomic.Int64
}

const operatorToken = "ops-secret-token-5a8c0e3f19b7d246"

func keyed() provider.Traits {
	return provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true}
}

func setupRemote(t *testing.T, simCfg providersim.Config, traits provider.Traits, capabilities ...string) remoteEnv {
	t.Helper()
	return setupRemoteWith(t, simCfg, traits, nil, capabilities...)
}

// setupRemoteWith is setupRemote with cfg adjusting the configuration.
func setupRemoteWith(t *testing.T, simCfg providersim.Config, traits provider.Traits, cfg func(*app.Config), capabilities ...string) remoteEnv {
	t.Helper()
	sim := simtest.Start(t, simCfg)
	set := provider.Set{}
	for _, c := range capabilities {
		set[c] = provider.NewHTTP(provider.HTTPConfig{BaseURL: sim.URL, Timeout: 2 * time.Second, Traits: traits})
	}
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = set
		c.ReconcileDisabled = true
		c.OperatorToken = operatorToken
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
		if cfg != nil {
			cfg(c)
		}
	})
	tenant, key := e.Tenant("remote")
	return remoteEnv{Env: e, sim: sim, key: key, tenant: tenant.ID, hours: &atomic.Int64{}}
}

// pass runs one reconciler pass.
func (r remoteEnv) pass(t *testing.T) {
	t.Helper()
	if _, err := r.Main.Reconciler().RunOnce(context.Background()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func (r remoteEnv) action(t *testing.T, id string) map[string]any {
	t.Helper()
	resp := r.Get("/v1/actions/"+id, r.key)
	if resp.Status != http.StatusOK {
		t.Fatalf("get action: %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)
}

// writeOf is one write per capability, sent through REST.
func (r remoteEnv) writeOf(t *testing.T, capability, key string) apptest.Response {
	t.Helper()
	switch capability {
	case provider.Calendar:
		return r.Post("/v1/appointments", r.key, key, map[string]any{"customer_id": r.Customer(r.tenant), "slot_id": r.Slot(r.tenant, int(r.hours.Add(1)))})
	case provider.Payments:
		return r.Post("/v1/payments", r.key, key, map[string]any{"payment_intent_id": r.intent(t, 500), "amount": 500})
	case provider.Messaging:
		return r.Post("/v1/messages", r.key, key, map[string]any{"to": "+15550100100", "channel": "sms", "template": "generic", "variables": map[string]string{"body": "Hello"}})
	case provider.CRM:
		return r.Post("/v1/customers", r.key, key, map[string]any{"name": "Remote Customer", "phone": "+15550100101"})
	}
	t.Fatalf("no write for %s", capability)
	return apptest.Response{}
}

// untilConfirmed runs passes until the action is confirmed, with a deadline.
func (r remoteEnv) untilConfirmed(t *testing.T, id string, deadline time.Duration) map[string]any {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		r.pass(t)
		a := r.action(t, id)
		if a["outcome"] == "confirmed" {
			return a
		}
		if time.Now().After(end) {
			t.Fatalf("action %s not confirmed within %v: %v", id, deadline, a)
		}
		<-time.After(10 * time.Millisecond) // poll interval, not synchronisation: the loop waits for the outcome
	}
}

func TestLostAnswerIsPendingThenReconciled(t *testing.T) {
	t.Parallel()
	for _, capability := range provider.Capabilities {
		t.Run(capability, func(t *testing.T) {
			t.Parallel()
			r := setupRemote(t, providersim.Config{}, keyed(), capability)
			r.sim.Fault(capability, "drop_response", 1)

			first := r.writeOf(t, capability, "lost-"+capability)
			if first.Status != http.StatusAccepted || first.JSON(t)["outcome"] != "pending" {
				t.Fatalf("lost answer: %d %s, want 202 pending", first.Status, first.Body)
			}
			id := first.JSON(t)["action_id"].(string)
			// A retry of the same request hears pending too, and sends nothing.
			if again := r.Get("/v1/actions/"+id, r.key).JSON(t); again["outcome"] != "pending" {
				t.Fatalf("before reconciliation: %v", again)
			}
			a := r.untilConfirmed(t, id, 10*time.Second)
			ledger := r.sim.Ledger(capability)
			if len(ledger) != 1 {
				t.Fatalf("ledger holds %d writes, want 1", len(ledger))
			}
			res := a["result"].(map[string]any)
			if res["provider_ref"] != ledger[0].ID {
				t.Fatalf("provider ref %v, ledger %s", res["provider_ref"], ledger[0].ID)
			}
		})
	}
}

func TestProviderWithoutKeysIsResolvedByLookupOnly(t *testing.T) {
	t.Parallel()
	const lag = 2 * time.Second
	traits := provider.Traits{HonoursKeys: false, AuthoritativeLookup: true, VisibilityDelay: lag}
	r := setupRemote(t, providersim.Config{NoIdempotency: true, LookupLag: lag}, traits, provider.Calendar)
	r.sim.Fault(provider.Calendar, "drop_response", 1)

	first := r.writeOf(t, provider.Calendar, "nokeys")
	id := first.JSON(t)["action_id"].(string)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	// Before the visibility delay the lookup cannot see the write: that is
	// inconclusive and must not trigger a second write.
	r.pass(t)
	if got := r.action(t, id)["outcome"]; got != "pending" {
		t.Fatalf("resolved before the write was visible: %v", got)
	}
	if n := len(r.sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("ledger holds %d writes after an inconclusive lookup, want 1", n)
	}
	r.untilConfirmed(t, id, 10*time.Second)
	if n := len(r.sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("ledger holds %d writes, want 1", n)
	}
}

func TestProviderDownBeforeSendingIsRetried(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	r.sim.Stop() // connection refused: nothing can have been sent

	first := r.writeOf(t, provider.Calendar, "down")
	if first.Status != http.StatusAccepted {
		t.Fatalf("provider down: %d %s, want 202 pending", first.Status, first.Body)
	}
	id := first.JSON(t)["action_id"].(string)
	r.sim.Restart()
	r.untilConfirmed(t, id, 10*time.Second)
	if n := len(r.sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("ledger holds %d writes, want 1", n)
	}
}

func TestPastKeyRetentionGoesToAnOperator(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = time.Millisecond // our side: the key's protection is over at once
	r := setupRemote(t, providersim.Config{KeyRetention: time.Millisecond}, traits, provider.Calendar)
	r.sim.Fault(provider.Calendar, "drop_response", 1)

	first := r.writeOf(t, provider.Calendar, "expired")
	id := first.JSON(t)["action_id"].(string)
	r.pass(t)
	a := r.action(t, id)
	if a["outcome"] != "pending" {
		t.Fatalf("outcome %v, want pending", a["outcome"])
	}
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id); n != 1 {
		t.Fatalf("action not flagged for an operator")
	}
	r.pass(t) // flagged actions are left alone
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("ledger %+v: the expired step was sent again", l)
	}
}

func TestFailedConfirmationMessageResumesWithoutRebooking(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar, provider.Messaging)
	r.sim.Fault(provider.Messaging, "fail_before_commit", 1)

	book := r.Post("/v1/appointments", r.key, "book-notify", map[string]any{
		"customer_id": r.Customer(r.tenant), "slot_id": r.Slot(r.tenant, 1), "notify": "sms",
	})
	if book.Status != http.StatusCreated || book.JSON(t)["outcome"] != "confirmed" {
		t.Fatalf("booking: %d %s", book.Status, book.Body)
	}
	id := book.JSON(t)["action_id"].(string)
	if n := len(r.sim.Ledger(provider.Messaging)); n != 0 {
		t.Fatalf("message sent despite the fault")
	}
	end := time.Now().Add(10 * time.Second)
	for len(r.sim.Ledger(provider.Messaging)) == 0 {
		if time.Now().After(end) {
			t.Fatalf("the message step did not resume")
		}
		r.pass(t)
	}
	if n := len(r.sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("calendar ledger holds %d bookings, want 1", n)
	}
	if got := r.action(t, id)["outcome"]; got != "confirmed" {
		t.Fatalf("booking outcome changed to %v", got)
	}
	if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state = 'succeeded'", id); n != 2 {
		t.Fatalf("succeeded steps = %d, want 2", n)
	}
}

func TestTwoReconcilersNeverShareAnAction(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	const n = 12
	r.sim.Fault(provider.Calendar, "drop_response", n)
	ids := make([]string, n)
	for i := range n {
		resp := r.writeOf(t, provider.Calendar, "many-"+string(rune('a'+i)))
		ids[i] = resp.JSON(t)["action_id"].(string)
	}
	// A second reconciler on the same database.
	other := apptest.Start(t, func(c *app.Config) {
		c.DatabaseURL = r.DBURL
		c.Providers = provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{BaseURL: r.sim.URL, Traits: keyed()})}
		c.ReconcileDisabled = true
	})
	var wg sync.WaitGroup
	for _, m := range []*app.Main{r.Main, other.Main} {
		wg.Go(func() {
			if _, err := m.Reconciler().RunOnce(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if got := r.action(t, id)["outcome"]; got != "confirmed" {
			t.Fatalf("action %s: %v", id, got)
		}
	}
	// Each key was sent twice: the lost first attempt and one re-send. A
	// third request would mean two reconcilers drove the same action.
	for _, w := range r.sim.Ledger(provider.Calendar) {
		if w.Requests != 2 {
			t.Fatalf("write %s got %d requests, want 2", w.ID, w.Requests)
		}
	}
	if l := r.sim.Ledger(provider.Calendar); len(l) != n {
		t.Fatalf("ledger holds %d writes, want %d", len(l), n)
	}
}

func TestRemoteChargesOfOneIntentWriteOnce(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Payments)
	body := map[string]any{"payment_intent_id": r.intent(t, 700), "amount": 700}
	first := r.Post("/v1/payments", r.key, "charge-1", body)
	if first.Status != http.StatusCreated {
		t.Fatalf("charge: %d %s", first.Status, first.Body)
	}
	// The same intent under another key: refused before anything is sent.
	if got := reason(t, r.Post("/v1/payments", r.key, "charge-2", body)); got != "INTENT_ALREADY_CAPTURED" {
		t.Fatalf("second charge of the intent: %s", got)
	}
	ledger := r.sim.Ledger(provider.Payments)
	if len(ledger) != 1 || ledger[0].Requests != 1 {
		t.Fatalf("the provider holds %+v for one intent, want one charge sent once", ledger)
	}
	if ref := first.JSON(t)["result"].(map[string]any)["provider_ref"]; ref != ledger[0].ID {
		t.Fatalf("provider ref %v, ledger %s", ref, ledger[0].ID)
	}
}
