package reconcile_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/step"
	"github.com/oncecall/oncecall/reconcile"
)

// A booking whose answer was lost, and whose re-sends found the calendar
// down until the reconciler ran out of checks, waits for a person. An
// operator's retry (refused while someone holds the action, named in the
// timeline and the audit trail) gives it back to the reconciler, whose
// next re-send, with the same key, settles it: one write at the provider.
func TestOperatorRetryGivesAnActionBackToTheReconciler(t *testing.T) {
	t.Parallel()
	r := setupRemoteWith(t, providersim.Config{}, keyed(), func(c *app.Config) {
		c.Steps = step.Config{Backoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxChecks: 2}
	}, provider.Calendar)
	r.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	id := uuid.MustParse(r.writeOf(t, provider.Calendar, "retry-1").JSON(t)["action_id"].(string))
	r.sim.Fault(provider.Calendar, providersim.FaultDown, 2)
	deadline := time.Now().Add(10 * time.Second)
	for r.Count(`SELECT count(*) FROM actions WHERE id = $1 AND needs_operator`, id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the booking never went to a person")
		}
		r.pass(t)
		<-time.After(5 * time.Millisecond) // the step's backoff, not synchronisation: the loop waits for the flag
	}
	ana := oncecall.Actor{OperatorID: uuid.New(), Name: "Ana Ruiz", Via: oncecall.ViaPassword}

	// Held by someone: refused, nothing changes.
	if held, err := r.Store.TakeLease(t.Context(), id, uuid.New(), time.Minute); err != nil || !held {
		t.Fatalf("hold: %v %v", held, err)
	}
	if _, err := reconcile.Retry(t.Context(), r.Store, id, ana, ""); fault.CodeOf(err) != fault.InFlight {
		t.Fatalf("retry a held action: %v", err)
	}
	if n := r.Count(`SELECT count(*) FROM actions WHERE id = $1 AND needs_operator`, id); n != 1 {
		t.Fatal("a refused retry changed the action")
	}
	if _, err := r.Store.Pool().Exec(t.Context(), `UPDATE actions SET lease_owner = NULL, lease_until = NULL WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}

	a, err := reconcile.Retry(t.Context(), r.Store, id, ana, "")
	if err != nil || a.NeedsOperator || a.State != oncecall.Unknown {
		t.Fatalf("retry: %+v %v", a, err)
	}
	if n := r.Count(`SELECT count(*) FROM action_steps WHERE action_id = $1 AND checks = 0 AND next_check_at <= now()`, id); n != 1 {
		t.Fatal("the retry did not make the step due with its checks from zero")
	}
	if n := r.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'retried_by_operator' AND detail->>'by' = 'Ana Ruiz'`, id); n != 1 {
		t.Fatal("the retry is not in the timeline")
	}
	if n := r.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'retried' AND operator_name = 'Ana Ruiz'
		AND operator_id = $2 AND via = 'password' AND tenant_id = $3`, id, ana.OperatorID, r.tenant); n != 1 {
		t.Fatal("the retry is not in the audit trail with who did it")
	}
	if _, err := reconcile.Retry(t.Context(), r.Store, id, ana, ""); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("retry an action the reconciler has: %v", err)
	}
	r.untilConfirmed(t, id.String(), 10*time.Second)
	if l := r.sim.Ledger(provider.Calendar); len(l) != 1 {
		t.Fatalf("the calendar holds %d writes, want 1", len(l))
	}
	if _, err := reconcile.Retry(t.Context(), r.Store, uuid.New(), ana, ""); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("retry a missing action: %v", err)
	}
}

// A resolution records who resolved it in the audit trail, in the same
// transaction: the signed-in person, not a typed name.
func TestResolutionIsAudited(t *testing.T) {
	t.Parallel()
	traits := keyed()
	traits.KeyRetention = time.Millisecond
	r := setupRemote(t, providersim.Config{KeyRetention: time.Millisecond}, traits, provider.Calendar)
	r.sim.Fault(provider.Calendar, providersim.FaultDropResponse, 1)
	id := uuid.MustParse(r.writeOf(t, provider.Calendar, "audited").JSON(t)["action_id"].(string))
	r.pass(t)
	bo := oncecall.Actor{OperatorID: uuid.New(), Name: "Bo", Via: oncecall.ViaOIDC}
	if _, err := reconcile.Resolve(t.Context(), r.Store, app.Operations(), id, reconcile.Resolution{
		Outcome: oncecall.Rejected, Note: "no booking in the calendar", Actor: bo, By: "someone else",
	}); err != nil {
		t.Fatal(err)
	}
	if n := r.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'resolved' AND operator_id = $2
		AND operator_name = 'Bo' AND via = 'oidc' AND detail->>'outcome' = 'rejected' AND detail->>'note' = 'no booking in the calendar'`,
		id, bo.OperatorID); n != 1 {
		t.Fatal("the resolution is not audited with the signed-in person")
	}
	if err := reconcile.Note(t.Context(), r.Store, id, bo, "called the clinic"); err != nil {
		t.Fatal(err)
	}
	if n := r.Count(`SELECT count(*) FROM operator_audit WHERE action_id = $1 AND kind = 'noted' AND operator_name = 'Bo'`, id); n != 1 {
		t.Fatal("the note is not audited")
	}
	if err := reconcile.Note(t.Context(), r.Store, id, bo, ""); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("an empty note: %v", err)
	}
}
