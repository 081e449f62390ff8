package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
	"github.com/oncecall/oncecall/reconcile"
)

// A keyless messaging provider whose lookups are authoritative at once
// (zero visibility delay) is the least forgiving case: a second driver that
// looks while the first one's write is still in flight finds nothing and
// would send the SMS again. Leases with owners, a lease that covers the
// send, and a settle time that covers the provider's timeout keep it to one.
func keylessNow() provider.Traits {
	return provider.Traits{AuthoritativeLookup: true}
}

func sms(r remoteEnv, t *testing.T, key string) apptest.Response {
	t.Helper()
	return r.writeOf(t, provider.Messaging, key)
}

// The request's worker sends the SMS; the provider is slower than the
// worker's lease. A reconciler that treats the expired lease as abandoned
// work must not send the same SMS while the first send is in flight.
func TestSlowSendOutlivingTheWorkerLeaseIsNotSentTwice(t *testing.T) {
	t.Parallel()
	r := setupRemoteWith(t, providersim.Config{NoIdempotency: true}, keylessNow(), func(c *app.Config) {
		c.Core.Lease = 300 * time.Millisecond
		c.Reconcile = reconcile.Config{Lease: 300 * time.Millisecond}
	}, provider.Messaging)
	r.sim.Fault(provider.Messaging, "delay=1500ms", 1)

	done := make(chan apptest.Response, 1)
	go func() { done <- sms(r, t, "slow-sms") }()
	waitUntil(t, "the worker's lease to run out while its send is in flight", func() bool {
		return r.Count(`SELECT count(*) FROM actions a JOIN action_steps s ON s.action_id = a.id
			WHERE s.last_sent_at IS NOT NULL AND now() > a.created_at + interval '400 ms'`) == 1
	})
	var first apptest.Response
	for received := false; !received; {
		r.pass(t)
		select {
		case first = <-done:
			received = true
		case <-time.After(20 * time.Millisecond): // pass interval while the first request runs
		}
	}
	if first.Status != http.StatusCreated && first.Status != http.StatusAccepted {
		t.Fatalf("send: %d %s", first.Status, first.Body)
	}
	settle(t, r, first.JSON(t)["action_id"].(string))
	if l := r.sim.Ledger(provider.Messaging); len(l) != 1 {
		t.Fatalf("the provider sent %d messages for one action, want 1", len(l))
	}
}

// One reconciler leases a batch and works through it slowly (each send
// takes longer than the lease); a second reconciler takes over the actions
// whose lease ran out. The first must not go on to send them too.
func TestAReconcilerWhoseLeaseWasTakenOverSendsNothing(t *testing.T) {
	t.Parallel()
	const n = 4
	r := setupRemoteWith(t, providersim.Config{NoIdempotency: true}, keylessNow(), func(c *app.Config) {
		c.Reconcile = reconcile.Config{Lease: 400 * time.Millisecond}
	}, provider.Messaging)
	// Connection refused: every first attempt is certainly not sent and
	// waits for the reconciler.
	r.sim.Stop()
	ids := make([]string, n)
	for i := range ids {
		resp := sms(r, t, fmt.Sprintf("batch-%d", i))
		if resp.Status != http.StatusAccepted {
			t.Fatalf("send with the provider down: %d %s", resp.Status, resp.Body)
		}
		ids[i] = resp.JSON(t)["action_id"].(string)
	}
	r.sim.Restart()
	r.sim.Fault(provider.Messaging, "delay=900ms", 0)

	other := apptest.Start(t, func(c *app.Config) {
		c.DatabaseURL = r.DBURL
		c.Providers = provider.Set{provider.Messaging: provider.NewHTTP(provider.HTTPConfig{BaseURL: r.sim.URL, Timeout: 2 * time.Second, Traits: keylessNow()})}
		c.ReconcileDisabled = true
		c.Reconcile = reconcile.Config{Lease: 400 * time.Millisecond}
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := r.Main.Reconciler().RunOnce(context.Background()); err != nil {
			t.Error(err)
		}
	})
	waitUntil(t, "the first reconciler's lease on part of its batch to run out", func() bool {
		return r.Count("SELECT count(*) FROM actions WHERE lease_until < now()") >= 2
	})
	wg.Go(func() {
		if _, err := other.Main.Reconciler().RunOnce(context.Background()); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	for _, id := range ids {
		settle(t, r, id)
	}
	if l := r.sim.Ledger(provider.Messaging); len(l) != n {
		t.Fatalf("the provider sent %d messages for %d actions", len(l), n)
	}
}

// settle runs passes until the action is confirmed.
func settle(t *testing.T, r remoteEnv, id string) {
	t.Helper()
	r.untilConfirmed(t, id, 20*time.Second)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(5 * time.Millisecond) // poll interval of a condition wait
	}
}

// A driver can die between recording a step's answer and completing its
// action (two transactions): the step is resolved, the action still
// unknown. A later pass must settle it from the recorded answer.
func TestAResolvedStepOfAnUnfinishedActionIsSettled(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	r.sim.Fault(provider.Calendar, "drop_response", 1)
	resp := r.writeOf(t, provider.Calendar, "recorded-not-settled")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("booking with its answer lost: %d %s", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	ledger := r.sim.Ledger(provider.Calendar)
	if len(ledger) != 1 {
		t.Fatalf("ledger holds %d writes, want 1", len(ledger))
	}
	// What a driver killed right after recording the evidence leaves.
	if _, err := r.Store.Pool().Exec(context.Background(),
		`UPDATE action_steps SET state = 'succeeded', provider_ref = $2, version = version + 1 WHERE action_id = $1`, id, ledger[0].ID); err != nil {
		t.Fatal(err)
	}
	a := r.untilConfirmed(t, id, 10*time.Second)
	if got := a["result"].(map[string]any)["provider_ref"]; got != ledger[0].ID {
		t.Fatalf("confirmed with provider_ref %v, want %s", got, ledger[0].ID)
	}
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 || l[0].Requests != 1 {
		t.Fatalf("ledger %+v: settling sent the write again", l)
	}
}
