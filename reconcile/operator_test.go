package reconcile_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
)

func TestOperatorResolvesAStuckAction(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = time.Millisecond
	r := setupRemote(t, providersim.Config{KeyRetention: time.Millisecond}, traits, provider.Calendar)
	r.sim.Fault(provider.Calendar, "drop_response", 1)
	id := r.writeOf(t, provider.Calendar, "stuck").JSON(t)["action_id"].(string)
	r.pass(t) // past the key's retention and not found: an operator decides

	if got := r.Get("/v1/ops/actions?needs_operator=true", "wrong-token"); got.Status != http.StatusUnauthorized {
		t.Fatalf("ops without the operator token: %d", got.Status)
	}
	if got := r.Get("/v1/ops/actions?needs_operator=true", r.key); got.Status != http.StatusUnauthorized {
		t.Fatalf("ops with a tenant API key: %d", got.Status)
	}
	list := r.Get("/v1/ops/actions?needs_operator=true", operatorToken)
	if list.Status != http.StatusOK || !strings.Contains(string(list.Body), id) {
		t.Fatalf("needs-operator list: %d %s", list.Status, list.Body)
	}
	show := r.Get("/v1/ops/actions/"+id, operatorToken).JSON(t)
	steps := show["steps"].([]any)
	if len(steps) != 1 || steps[0].(map[string]any)["state"] != "unknown" || len(show["events"].([]any)) < 3 {
		t.Fatalf("detail: %v", show)
	}

	ref := r.sim.Ledger(provider.Calendar)[0].ID
	bad := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", map[string]any{"outcome": "confirmed", "note": "seen", "by": "ana"})
	if bad.Status != http.StatusBadRequest || bad.JSON(t)["field"] != "provider_ref" {
		t.Fatalf("confirm without evidence: %d %s", bad.Status, bad.Body)
	}
	ok := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", map[string]any{
		"outcome": "confirmed", "provider_ref": ref, "note": "found in the calendar's admin console", "by": "ana",
	})
	if ok.Status != http.StatusOK || ok.JSON(t)["outcome"] != "confirmed" {
		t.Fatalf("resolve: %d %s", ok.Status, ok.Body)
	}
	// The caller's retry or status check now hears the resolved outcome.
	a := r.action(t, id)
	if a["outcome"] != "confirmed" || a["result"].(map[string]any)["provider_ref"] != ref {
		t.Fatalf("after resolution: %v", a)
	}
	if n := r.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator'
		AND detail->>'by' = 'ana' AND detail->>'evidence' <> '' AND detail->>'provider_ref' = $2`, id, ref); n != 1 {
		t.Fatalf("resolution not recorded with who and evidence")
	}
	if n := r.Count("SELECT count(*) FROM actions WHERE id = $1 AND needs_operator", id); n != 0 {
		t.Fatalf("still flagged for an operator")
	}
	again := r.Post("/v1/ops/actions/"+id+"/resolve", operatorToken, "", map[string]any{"outcome": "rejected", "note": "x", "by": "bo"})
	if again.Status != http.StatusBadRequest {
		t.Fatalf("a completed action was resolved again: %d %s", again.Status, again.Body)
	}
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("ledger holds %d writes", len(l))
	}
}
