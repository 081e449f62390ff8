package api_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/apiclient"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

const operatorToken = "ops-test-token-4f1c9a7e2b6d8035c1e9"

// TestGeneratedClientResolvesAStuckRemoteBooking books on a remote calendar
// whose answer is lost, then settles the action as an operator would, all
// with the generated client: 202 pending, the operator API's list, detail
// and resolution, and the booking's retry replaying the resolved outcome.
func TestGeneratedClientResolvesAStuckRemoteBooking(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, providersim.Config{})
	e := apptest.Start(t, func(c *app.Config) {
		c.Providers = provider.Set{provider.Calendar: provider.NewHTTP(provider.HTTPConfig{
			BaseURL: sim.URL, Timeout: 2 * time.Second,
			Traits: provider.Traits{HonoursKeys: true, KeyRetention: time.Hour, AuthoritativeLookup: true},
		})}
		c.ReconcileDisabled = true // the operator settles it, not the reconciler
		c.OperatorToken = operatorToken
	})
	tenant, key := e.Tenant("acme")
	c, operator := newClient(t, e, key), newClient(t, e, operatorToken)
	ctx := t.Context()

	sim.Fault(provider.Calendar, "drop_response", 1)
	book := apiclient.BookAppointmentInput{CustomerId: e.Customer(tenant.ID), SlotId: e.Slot(tenant.ID, 1)}
	params := &apiclient.BookAppointmentParams{IdempotencyKey: "book-remote-1"}
	r, err := c.BookAppointmentWithResponse(ctx, params, book)
	pending := must(t, http.StatusAccepted, r, err).JSON202
	if pending.Outcome != apiclient.OutcomePending || pending.State != apiclient.StateUnknown || pending.Result.IsSpecified() && !pending.Result.IsNull() {
		t.Fatalf("lost answer: %s", r.Body)
	}
	id := pending.ActionId

	l, err := c.ListOpsActionsWithResponse(ctx, nil)
	if p := must(t, http.StatusUnauthorized, l, err).ApplicationproblemJSON401; p.Code != apiclient.UNAUTHORIZED {
		t.Fatalf("a tenant's key on the operator API: %s", l.Body)
	}
	l, err = operator.ListOpsActionsWithResponse(ctx, &apiclient.ListOpsActionsParams{State: ptr(apiclient.StateUnknown), Limit: ptr(10)})
	if list := must(t, http.StatusOK, l, err).JSON200.Actions; len(list) != 1 || list[0].ActionId != id || list[0].TenantId != tenant.ID {
		t.Fatalf("unknown actions: %s", l.Body)
	}
	l, err = operator.ListOpsActionsWithResponse(ctx, &apiclient.ListOpsActionsParams{Limit: ptr(1001)})
	if p := must(t, http.StatusBadRequest, l, err).ApplicationproblemJSON400; p.Field == nil || *p.Field != "limit" {
		t.Fatalf("limit 1001: %s", l.Body)
	}

	d, err := operator.GetOpsActionWithResponse(ctx, id)
	detail := must(t, http.StatusOK, d, err).JSON200
	if detail.Steps == nil || len(*detail.Steps) != 1 || (*detail.Steps)[0].State != apiclient.StepStateUnknown ||
		(*detail.Steps)[0].Capability != apiclient.Calendar || !(*detail.Steps)[0].Required {
		t.Fatalf("steps: %s", d.Body)
	}
	var kinds []string
	for _, ev := range *detail.Events {
		kinds = append(kinds, ev.Kind)
	}
	if !slices.Contains(kinds, "claimed") || !slices.Contains(kinds, "sent:ambiguous") {
		t.Fatalf("timeline: %v", kinds)
	}
	d, err = operator.GetOpsActionWithResponse(ctx, uuid.New())
	if p := must(t, http.StatusNotFound, d, err).ApplicationproblemJSON404; p.Code != apiclient.NOTFOUND {
		t.Fatalf("unknown action: %s", d.Body)
	}

	ledger := sim.Ledger(provider.Calendar)
	if len(ledger) != 1 {
		t.Fatalf("calendar ledger holds %d writes, want 1", len(ledger))
	}
	ref := ledger[0].ID
	res, err := operator.ResolveOpsActionWithResponse(ctx, id, apiclient.ResolveRequest{
		Outcome: apiclient.ResolveRequestOutcomeConfirmed, Note: "found in the calendar", By: "ana",
	})
	if p := must(t, http.StatusBadRequest, res, err).ApplicationproblemJSON400; p.Field == nil || *p.Field != "provider_ref" {
		t.Fatalf("confirm without evidence: %s", res.Body)
	}
	res, err = operator.ResolveOpsActionWithResponse(ctx, id, apiclient.ResolveRequest{
		Outcome: apiclient.ResolveRequestOutcomeConfirmed, ProviderRef: &ref, Note: "found in the calendar", By: "ana",
	})
	if a := must(t, http.StatusOK, res, err).JSON200; a.Outcome != apiclient.OutcomeConfirmed || a.State != apiclient.StateCompleted || a.NeedsOperator {
		t.Fatalf("resolve: %s", res.Body)
	}

	// The caller's retry hears the resolved outcome: the appointment in the
	// remote calendar, whose id is the booking action's, with the event the
	// operator named.
	r, err = c.BookAppointmentWithResponse(ctx, params, book)
	replay := must(t, http.StatusCreated, r, err)
	remote, err := replay.JSON201.Result.AsCalendarAppointment()
	if err != nil || remote.ProviderRef != ref || remote.SlotId == nil || *remote.SlotId != book.SlotId || remote.Id != id ||
		replay.Headers201.IdempotentReplayed == nil {
		t.Fatalf("retry after resolution: %s", r.Body)
	}
	if n := e.Count(`SELECT count(*) FROM calendar_appointments WHERE id = $1 AND status = 'active' AND event_id = $2`, id, ref); n != 1 {
		t.Fatalf("the appointment's record does not hold the operator's event")
	}
	r2, err := c.BookAppointmentWithResponse(ctx, params, book)
	if must(t, http.StatusCreated, r2, err); !bytes.Equal(r2.Body, r.Body) {
		t.Fatalf("replays differ:\n%s\n%s", r.Body, r2.Body)
	}
	if n := e.Count(`SELECT count(*) FROM actions WHERE id = $1 AND state = 'completed' AND outcome = 'confirmed' AND resource_id = $1::text`, id); n != 1 {
		t.Fatalf("action row not confirmed with the appointment's id")
	}
	if n := e.Count(`SELECT count(*) FROM action_events WHERE action_id = $1 AND kind = 'resolved_by_operator' AND detail->>'by' = 'ana'`, id); n != 1 {
		t.Fatalf("resolution not in the timeline")
	}
	if n := len(sim.Ledger(provider.Calendar)); n != 1 {
		t.Fatalf("calendar ledger holds %d writes after resolution, want 1", n)
	}
}
