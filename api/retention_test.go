package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/prune"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// After the body is pruned a retry still maps to its action and gets the
// compact envelope, replayed; after the action is pruned its key is new work.
func TestReplayAfterPruning(t *testing.T) {
	t.Parallel()
	// The pruner's clock is moved a day ahead while the server's is not, so
	// the server keeps no answers in memory here: it uses a kept answer for
	// a minute from its action's creation, which in real time ends long
	// before any pruning of that action can start.
	e := apptest.Start(t, func(c *app.Config) { c.Core.AnswerBytes = -1 })
	tenant, key := e.Tenant("acme")
	b := bookingEnv{Env: e, key: key, tenant: tenant.ID, customer: e.Customer(tenant.ID), slot: e.Slot(tenant.ID, 1)}
	first := b.book("keep-me", b.slot)
	if first.Status != http.StatusCreated {
		t.Fatalf("book: %d %s", first.Status, first.Body)
	}
	env := first.JSON(t)
	actionID := env["action_id"].(string)
	apptID := env["result"].(map[string]any)["id"].(string)
	rivalBody := map[string]any{"customer_id": b.Customer(b.tenant), "slot_id": b.slot}
	rejected := b.Post("/v1/appointments", b.key, "rival", rivalBody)
	if rejected.Status != http.StatusUnprocessableEntity {
		t.Fatalf("rival booking: %d %s", rejected.Status, rejected.Body)
	}
	rejectedID := rejected.JSON(t)["action_id"].(string)

	p := prune.New(b.Store, prune.Config{ResponseRetention: 24 * time.Hour, ActionRetention: 30 * 24 * time.Hour})
	now := time.Now()
	if c, err := p.Run(t.Context(), now.Add(23*time.Hour)); err != nil || c.Responses != 0 {
		t.Fatalf("prune before the retention: %+v %v", c, err)
	}
	if c, err := p.Run(t.Context(), now.Add(25*time.Hour)); err != nil || c.Responses != 2 || c.Actions != 0 {
		t.Fatalf("prune bodies: %+v %v", c, err)
	}
	if got := b.Count("SELECT count(*) FROM actions WHERE result IS NOT NULL"); got != 0 {
		t.Fatalf("%d bodies left", got)
	}

	// The confirmation replays as the compact envelope: same status, same action.
	again := b.book("keep-me", b.slot)
	if again.Status != http.StatusCreated || !again.Replayed() {
		t.Fatalf("replay after body pruning: %d replayed=%v %s", again.Status, again.Replayed(), again.Body)
	}
	var compact struct {
		ActionID string         `json:"action_id"`
		Outcome  string         `json:"outcome"`
		State    string         `json:"state"`
		Result   map[string]any `json:"result"`
	}
	if err := json.Unmarshal(again.Body, &compact); err != nil {
		t.Fatal(err)
	}
	if compact.ActionID != actionID || compact.Outcome != "confirmed" || compact.State != "completed" ||
		len(compact.Result) != 1 || compact.Result["id"] != apptID {
		t.Fatalf("compact envelope: %s", again.Body)
	}
	// The rejection replays as the 422 problem without its details.
	rej := b.Post("/v1/appointments", b.key, "rival", rivalBody)
	p422 := rej.JSON(t)
	if rej.Status != http.StatusUnprocessableEntity || !rej.Replayed() || p422["code"] != "SLOT_UNAVAILABLE" ||
		p422["action_id"] != rejectedID || p422["outcome"] != "rejected" || rej.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("rejection replay after body pruning: %d replayed=%v %s", rej.Status, rej.Replayed(), rej.Body)
	}
	if _, ok := p422["details"]; ok {
		t.Fatalf("pruned rejection still has details: %s", rej.Body)
	}
	if got := b.Count("SELECT count(*) FROM actions"); got != 2 {
		t.Fatalf("replays created actions: %d", got)
	}
	if got := b.Count("SELECT count(*) FROM appointments"); got != 1 {
		t.Fatalf("appointments = %d, want 1", got)
	}

	// Past the action retention the actions go; the appointment stays with its action_id.
	if c, err := p.Run(t.Context(), now.Add(31*24*time.Hour)); err != nil || c.Actions != 2 {
		t.Fatalf("prune actions: %+v %v", c, err)
	}
	if got := b.Count("SELECT count(*) FROM appointments WHERE id = $1 AND action_id = $2 AND status = 'active'", apptID, actionID); got != 1 {
		t.Fatalf("the appointment lost its action_id or changed")
	}
	if r := b.Get("/v1/actions/"+actionID, b.key); r.Status != http.StatusNotFound {
		t.Fatalf("pruned action still readable: %d %s", r.Status, r.Body)
	}
	// Reusing the key is now new work: a new action, and the slot is taken.
	reuse := b.book("keep-me", b.slot)
	if reuse.Status != http.StatusUnprocessableEntity || reuse.Replayed() || reuse.JSON(t)["code"] != "SLOT_UNAVAILABLE" ||
		reuse.JSON(t)["action_id"] == actionID {
		t.Fatalf("key reuse after action pruning: %d replayed=%v %s", reuse.Status, reuse.Replayed(), reuse.Body)
	}
	if got := b.Count("SELECT count(*) FROM appointments"); got != 1 {
		t.Fatalf("appointments = %d, want 1", got)
	}
}
