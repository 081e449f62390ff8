package reconcile_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// An operator's resolution whose lease on the action was taken over before
// it wrote (it expired while the resolution was held up, and another
// operator took the action) records nothing and says so with 409
// ACTION_IN_FLIGHT: neither the step's outcome, nor the action's, nor a
// resolved_by_operator event. Held up here by a lock on action_steps,
// taken before the resolution starts, so it stops after taking its lease
// and before reading the steps; the lease is taken over meanwhile. Once
// with the unknown step still to record, once with no step left to record
// (only the action's completion, whose fence used to be ignored).
func TestAResolutionThatLostItsLeaseRecordsNothing(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = time.Millisecond
	r := setupRemote(t, providersim.Config{KeyRetention: time.Millisecond}, traits, provider.Calendar)
	r.sim.Fault(provider.Calendar, "drop_response", 1)
	id := r.writeOf(t, provider.Calendar, "stuck").JSON(t)["action_id"].(string)
	r.pass(t) // past the key's retention and not found: an operator decides
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator AND state <> 'completed'", id); n != 1 {
		t.Fatalf("the action is not waiting for an operator")
	}
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, r.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	resolve := map[string]any{"outcome": "rejected", "note": "not in the calendar", "by": "ana"}
	for _, round := range []string{"with a step to record", "with no step left to record"} {
		if round == "with no step left to record" {
			// As after a crash between a step's success and the action's
			// completion.
			if _, err := conn.Exec(ctx, "UPDATE action_steps SET state = 'succeeded', provider_ref = 'ref-1' WHERE action_id = $1", id); err != nil {
				t.Fatal(err)
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE action_steps IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		answer := make(chan apptest.Response, 1)
		go func() {
			got, err := r.RequestCtx(ctx, http.MethodPost, "/v1/ops/actions/"+id+"/resolve", operatorToken, resolve)
			if err != nil {
				got.Status = -1
			}
			answer <- got
		}()
		waitFor(t, "the resolution to hold the lease and wait for action_steps", 10*time.Second, func() bool {
			var n int
			err := r.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND wait_event_type = 'Lock' AND query LIKE '%action_steps%'
				AND EXISTS (SELECT 1 FROM actions WHERE id = $1 AND lease_owner IS NOT NULL)`, id).Scan(&n)
			return err == nil && n > 0
		})
		// Another operator takes the action over.
		if _, err := tx.Exec(ctx, "UPDATE actions SET lease_owner = gen_random_uuid(), lease_until = now() + interval '1 minute' WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-answer
		if got.Status != http.StatusConflict || got.JSON(t)["code"] != "ACTION_IN_FLIGHT" ||
			!strings.Contains(got.JSON(t)["detail"].(string), "nothing was recorded") {
			t.Errorf("%s: resolution after losing its lease: %d %s, want 409 ACTION_IN_FLIGHT saying nothing was recorded", round, got.Status, got.Body)
		}
		if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed'", id); n != 0 {
			t.Errorf("%s: the action was completed by a resolution without its lease", round)
		}
		if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'", id); n != 0 {
			t.Errorf("%s: %d resolved_by_operator events recorded without the lease", round, n)
		}
		if n := r.Count("SELECT count(*) FROM action_steps WHERE action_id = $1 AND state = 'rejected'", id); n != 0 {
			t.Errorf("%s: a step was given the outcome without the lease", round)
		}
		// The other operator's lease ends.
		if _, err := conn.Exec(ctx, "UPDATE actions SET lease_owner = NULL, lease_until = NULL WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
	}

	// With its lease held to the end, the resolution is recorded, once.
	if got := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", resolve); got.Status != http.StatusOK || got.JSON(t)["outcome"] != "rejected" {
		t.Fatalf("resolution: %d %s", got.Status, got.Body)
	}
	if n := r.Count("SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'", id); n != 1 {
		t.Fatalf("%d resolved_by_operator events, want 1", n)
	}
}
