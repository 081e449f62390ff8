package reconcile_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// otherServer is a second oncecall on r's database whose calendar is
// another provider (set), or none (nil); its reconciler is driven by the
// test.
func otherServer(t *testing.T, r remoteEnv, set provider.Set) *apptest.Env {
	t.Helper()
	return apptest.StartOn(t, r.DBURL, func(c *app.Config) {
		c.Providers = set
		c.ReconcileDisabled = true
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxChecks: 100}
	})
}

// A step is driven only by a server configured for the provider it was
// planned for. A booking whose calendar write was lost (unknown) or never
// left (pending) on the server whose calendar is the simulator A is left
// alone by a server with no calendar provider and by one whose calendar
// is another simulator: they take no lease on it, record nothing on it and
// send nothing to their own provider. The first server's reconciler
// finishes it, with one write at its own provider.
func TestOnlyAServerWithTheStepsProviderDrivesIt(t *testing.T) {
	t.Parallel()
	for _, leftover := range []string{"unknown", "pending"} {
		t.Run(leftover, func(t *testing.T) {
			t.Parallel()
			r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
			otherSim := simtest.Start(t, providersim.Config{})
			others := []struct {
				name string
				env  *apptest.Env
			}{
				{"no calendar", otherServer(t, r, provider.Set{})},
				{"another calendar", otherServer(t, r, provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{BaseURL: otherSim.URL, Timeout: 2 * time.Second, Traits: keyed()})})},
			}
			switch leftover {
			case "unknown":
				r.sim.Fault(provider.Calendar, "drop_response", 1)
			case "pending":
				r.sim.Stop() // the write never leaves: the step stays pending
			}
			resp := r.writeOf(t, provider.Calendar, "leftover-"+leftover)
			if resp.Status != http.StatusAccepted {
				t.Fatalf("booking: %d %s, want 202 pending", resp.Status, resp.Body)
			}
			id := resp.JSON(t)["action_id"].(string)
			if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state = $2", id, leftover); n != 1 {
				t.Fatalf("the booking's step is not %s", leftover)
			}
			events := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1", id)
			for _, other := range others {
				leased := 0
				for range 3 {
					st, err := other.env.Main.Reconciler().RunOnce(context.Background())
					if err != nil {
						t.Fatalf("%s: reconcile: %v", other.name, err)
					}
					leased += st.Due + st.Abandoned
				}
				if leased != 0 {
					t.Errorf("%s: its passes leased the action %d times, want never: the step's provider is not its own", other.name, leased)
				}
			}
			if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1", id); n != events {
				t.Errorf("the other servers recorded %d events on the action, want none", n-events)
			}
			if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'inconclusive'", id); n != 0 {
				t.Errorf("%d inconclusive checks recorded, want none", n)
			}
			if n := len(otherSim.Ledger(provider.Calendar)); n != 0 {
				t.Errorf("the other calendar holds %d writes, want none", n)
			}
			if t.Failed() {
				return
			}
			if leftover == "pending" {
				r.sim.Restart()
			}
			r.untilConfirmed(t, id, 10*time.Second)
			if n := len(r.sim.Ledger(provider.Calendar)); n != 1 {
				t.Fatalf("the step's calendar holds %d writes, want 1", n)
			}
		})
	}
}

// A step claimed before steps named their provider (its provider columns
// empty, as the migration leaves them) is driven as before by a server
// that serves its capability, which names its own provider at the send;
// a server that does not serve the capability never takes it.
func TestAStepClaimedBeforeStepsNamedTheirProviderGoesToAServerOfItsCapability(t *testing.T) {
	t.Parallel()
	r := setupRemote(t, providersim.Config{}, keyed(), provider.Calendar)
	r.sim.Stop() // the write never leaves: the step stays pending
	resp := r.writeOf(t, provider.Calendar, "legacy")
	if resp.Status != http.StatusAccepted {
		t.Fatalf("booking: %d %s, want 202 pending", resp.Status, resp.Body)
	}
	id := resp.JSON(t)["action_id"].(string)
	if _, err := r.Store.Pool().Exec(t.Context(),
		"UPDATE action_steps SET provider_kind = NULL, provider_account = NULL WHERE action_id = $1 AND provider_kind = 'http'", id); err != nil {
		t.Fatal(err)
	}
	none := otherServer(t, r, provider.Set{})
	if st, err := none.Main.Reconciler().RunOnce(context.Background()); err != nil || st.Due+st.Abandoned != 0 {
		t.Fatalf("a server without a calendar: %+v, %v; want no lease", st, err)
	}
	otherSim := simtest.Start(t, providersim.Config{})
	other := otherServer(t, r, provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{BaseURL: otherSim.URL, Timeout: 2 * time.Second, Traits: keyed()})})
	if _, err := other.Main.Reconciler().RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := r.action(t, id); a["outcome"] != "confirmed" || len(otherSim.Ledger(provider.Calendar)) != 1 {
		t.Fatalf("action %v, %d writes at the serving server's calendar; want confirmed there", a, len(otherSim.Ledger(provider.Calendar)))
	}
	if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND provider_kind = 'http' AND provider_account = $2",
		id, strings.ToLower(otherSim.URL)); n != 1 {
		t.Fatal("the step does not name the provider it was sent to")
	}
}
