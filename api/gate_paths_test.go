package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// gatePaths is a gated clinic with two slots of Dr. Baker at Downtown (New
// York) on 18 June 2031, P at 15:30 and Q at 16:30, and a cleaning he
// performs there.
type gatePaths struct {
	gateClinic
	p, q     uuid.UUID
	cleaning uuid.UUID
}

func newGatePaths(t *testing.T, platform string, cfg ...func(*app.Config)) gatePaths {
	t.Helper()
	g := newGateClinic(t, apptest.Start(t, cfg...), platform, "America/New_York")
	ny := mustZone(t, "America/New_York")
	downtown := g.location("Downtown", "America/New_York")
	cleaning := g.service("Cleaning", 30, 0)
	baker := g.practitioner("Dr. Baker", []uuid.UUID{downtown}, cleaning)
	return gatePaths{
		gateClinic: g, cleaning: cleaning,
		p: g.slot(baker, downtown, time.Date(2031, 6, 18, 15, 30, 0, 0, ny), 30),
		q: g.slot(baker, downtown, time.Date(2031, 6, 18, 16, 30, 0, 0, ny), 30),
	}
}

// unchanged fails unless the actions and P's and Q's bookings are as given.
func (g gatePaths) unchanged(what string, actions, inP, inQ int) {
	g.t.Helper()
	if g.actions() != actions || g.activeIn(g.p) != inP || g.activeIn(g.q) != inQ {
		g.t.Fatalf("%s: %d actions, %d booked in P, %d in Q; want %d, %d, %d", what, g.actions(), g.activeIn(g.p), g.activeIn(g.q), actions, inP, inQ)
	}
}

// Every path by which a tool call would perform an effect passes the gate:
// a derived key whose booking was moved or cancelled, an action_id naming
// another tool's action, a new tool call id, a reworded argument, a
// rejection decided afresh; a replay of an answer that still stands (by a
// new tool call id, in other words, from another call) is answered without
// asking.
func TestGateHoldsOnEveryPath(t *testing.T) {
	t.Parallel()
	t.Run("a replay of an answer that stands is not asked again", func(t *testing.T) {
		t.Parallel()
		for _, platform := range gatePlatforms {
			g := newGatePaths(t, platform)
			book := map[string]any{"customer_id": g.customer, "slot_id": g.p}
			booked := g.confirmed("the booking", "call-1", "book_appointment", book)
			before := g.actions()
			reworded := map[string]any{"customer_id": strings.ToUpper(g.customer.String()), "slot_id": strings.ToUpper(g.p.String())}
			for _, args := range []map[string]any{book, reworded} {
				for _, call := range []string{"call-1", "call-2"} {
					if a := g.tool(call, "book_appointment", args); a.Outcome != "confirmed" || a.ActionID != booked.ActionID {
						t.Fatalf("%s: the booking again from %s: %s; want the replay of %s", platform, call, said(a.answer), booked.ActionID)
					}
				}
			}
			g.unchanged(platform+": replays", before, 1, 0)
		}
	})
	t.Run("a derived key whose booking was moved", func(t *testing.T) {
		t.Parallel()
		g := newGatePaths(t, "dasha")
		book := map[string]any{"customer_id": g.customer, "slot_id": g.p}
		booked := g.confirmed("the booking", "call-1", "book_appointment", book)
		g.confirmed("the move to Q", "call-1", "reschedule_appointment", map[string]any{"appointment_id": detailID(t, booked.answer), "slot_id": g.q})
		before := g.actions()
		g.refused("P booked again after the move", "call-2", "book_appointment", book)
		g.unchanged("an unconfirmed booking of P after the move", before, 0, 1)
		g.confirmed("P booked again after the move", "call-2", "book_appointment", book)
		g.unchanged("the confirmed booking of P after the move", before+1, 1, 1)
	})
	t.Run("an action_id naming another tool's action", func(t *testing.T) {
		t.Parallel()
		g := newGatePaths(t, "dasha")
		book := map[string]any{"customer_id": g.customer, "slot_id": g.p}
		booked := g.confirmed("the booking", "call-1", "book_appointment", book)
		cancelled := g.confirmed("the cancellation", "call-1", "cancel_appointment", map[string]any{"appointment_id": detailID(t, booked.answer)})
		before := g.actions()
		named := map[string]any{"customer_id": g.customer, "slot_id": g.p, "action_id": cancelled.ActionID}
		g.refused("the booking naming the cancellation's action_id", "call-1", "book_appointment", named)
		g.unchanged("an unconfirmed booking naming another action", before, 0, 0)
		// The booking's own action_id is a retry of it: answered for it,
		// never performed again.
		own := g.e.Post("/v1/dasha/tools/book_appointment", g.key, "", payload("book_appointment", "call-1",
			map[string]any{"customer_id": g.customer, "slot_id": g.p, "action_id": booked.ActionID}))
		var a struct {
			ActionID string `json:"action_id"`
			Reason   string `json:"reason"`
			Current  string `json:"current"`
		}
		if err := json.Unmarshal(own.Body, &a); err != nil || a.Reason != "" || a.ActionID != booked.ActionID || a.Current != "cancelled" {
			t.Fatalf("the booking naming its own action: %d %s", own.Status, own.Body)
		}
		g.unchanged("the booking naming its own action", before, 0, 0)
	})
	t.Run("a new tool call id after the cancellation", func(t *testing.T) {
		t.Parallel()
		g := newGatePaths(t, "vapi")
		book := map[string]any{"customer_id": g.customer, "slot_id": g.p}
		booked := g.confirmed("the booking", "call-1", "book_appointment", book)
		g.confirmed("the cancellation", "call-1", "cancel_appointment", map[string]any{"appointment_id": detailID(t, booked.answer)})
		before := g.actions()
		for range 3 { // each with a tool call id of its own
			g.refused("the booking again", "call-1", "book_appointment", book)
		}
		g.unchanged("unconfirmed bookings by new tool call ids", before, 0, 0)
	})
	t.Run("a reworded argument after the cancellation", func(t *testing.T) {
		t.Parallel()
		g := newGatePaths(t, "dasha")
		local := map[string]any{"customer_id": g.customer, "service_id": g.cleaning, "starts_at": "2031-06-18T15:30"}
		booked := g.confirmed("the booking by service", "call-1", "book_appointment", local)
		g.confirmed("the cancellation", "call-1", "cancel_appointment", map[string]any{"appointment_id": detailID(t, booked.answer)})
		before := g.actions()
		instant := map[string]any{"customer_id": strings.ToUpper(g.customer.String()), "service_id": g.cleaning, "starts_at": "2031-06-18T19:30:00Z"}
		for _, args := range []map[string]any{local, instant} {
			g.refused("the booking by service again", "call-1", "book_appointment", args)
		}
		g.unchanged("unconfirmed reworded bookings", before, 0, 0)
		g.confirmed("the reworded booking", "call-2", "book_appointment", instant)
		g.unchanged("the confirmed reworded booking", before+1, 1, 0)
	})
	t.Run("a rejection decided afresh, restated", func(t *testing.T) {
		t.Parallel()
		sim := simtest.Start(t, providersim.Config{})
		// Every rejection is decided afresh at once: no hold.
		g := newGatePaths(t, "dasha", withPayments(sim), func(c *app.Config) { c.Core.RejectionHold = time.Nanosecond })
		intent := resultOf(t, g.e.Post("/v1/payment-intents", g.key, "intent-declined", map[string]any{
			"customer_id": g.customer, "amount": 900, "currency": "USD", "payment_method": "pm_card_declined"}))["id"].(string)
		charge := map[string]any{"payment_intent_id": intent}
		rb := g.refused("the charge", "call-1", "charge_payment", charge)
		if a := g.tool("call-1", "charge_payment", withEcho(charge, rb.Echo)); a.Outcome != "rejected" || a.Reason != "payment_declined" {
			t.Fatalf("the declined charge: %s", said(a.answer))
		}
		writes, before := len(sim.Ledger(provider.Payments)), g.actions()
		for _, args := range []map[string]any{charge, {"payment_intent_id": intent, "amount": 900}, withEcho(charge, rb.Echo)} {
			g.refused("the declined charge asked again", "call-1", "charge_payment", args)
		}
		if n := len(sim.Ledger(provider.Payments)); n != writes || g.actions() != before {
			t.Fatalf("unconfirmed charges after the decline: %d provider writes, %d actions (want %d, %d)", n, g.actions(), writes, before)
		}
	})
}
