package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/sim/providersim"
	"github.com/oncecall/oncecall/internal/sim/providersim/simtest"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// gateClinic is a clinic with the confirmation gate on whose tool calls
// go through one voice platform's route (dasha or vapi), with a customer.
type gateClinic struct {
	slotClinic
	platform string
	customer uuid.UUID
}

// gatePlatforms are the routes the gate's reproductions run on.
var gatePlatforms = []string{"dasha", "vapi"}

func newGateClinic(t *testing.T, e *apptest.Env, platform, zone string) gateClinic {
	t.Helper()
	c := newSlotClinic(t, e, "gate-"+platform, testOrg, zone)
	if err := e.Store.SetCallerConfirmation(t.Context(), c.tenant, true); err != nil {
		t.Fatal(err)
	}
	g := gateClinic{slotClinic: c, platform: platform}
	g.customer = g.newCustomer("+12125550100")
	return g
}

func (g gateClinic) newCustomer(phone string) uuid.UUID {
	g.t.Helper()
	cust, err := g.e.Store.CreateCustomer(g.t.Context(), db.NewCustomer{TenantID: g.tenant, Name: "Ana", Phone: phone})
	if err != nil {
		g.t.Fatal(err)
	}
	return cust.ID
}

// tool calls a tool in call on the clinic's platform: a Dasha webhook, or a
// Vapi tool-calls message whose tool call has an id of its own.
func (g gateClinic) tool(call, name string, args map[string]any) gateAnswer {
	g.t.Helper()
	if g.platform == "vapi" {
		msg := map[string]any{"message": map[string]any{
			"type": "tool-calls", "call": map[string]any{"id": call},
			"toolCallList": []map[string]any{{"id": "tc-" + uuid.NewString()[:8], "type": "function",
				"function": map[string]any{"name": name, "arguments": args}}},
		}}
		_, answers := vapiResults(g.t, g.e.Post("/v1/vapi/webhook", g.key, "", msg))
		if len(answers) != 1 {
			g.t.Fatalf("vapi answered %d results, want 1", len(answers))
		}
		return readGate(g.t, answers[0])
	}
	return readGate(g.t, decodeAnswer(g.t, g.e.Post("/v1/dasha/tools/"+name, g.key, "", payload(name, call, args))))
}

// refused calls a tool and wants the gate's refusal.
func (g gateClinic) refused(what, call, name string, args map[string]any) gateAnswer {
	g.t.Helper()
	a := g.tool(call, name, args)
	if a.Outcome != "rejected" || a.Reason != "needs_caller_confirmation" || a.ActionID != "" {
		g.t.Fatalf("%s: %s; want the gate's refusal", what, said(a.answer))
	}
	return a
}

// confirmed calls a tool, hears the gate's read-back, and calls it again
// with the echo it gave: the answer must be confirmed.
func (g gateClinic) confirmed(what, call, name string, args map[string]any) gateAnswer {
	g.t.Helper()
	rb := g.refused(what+" (unconfirmed)", call, name, args)
	a := g.tool(call, name, withEcho(args, rb.Echo))
	if a.Outcome != "confirmed" {
		g.t.Fatalf("%s with the caller's confirmation %q: %s", what, rb.Echo, said(a.answer))
	}
	return a
}

// withEcho is args with caller_confirmed.
func withEcho(args map[string]any, echo string) map[string]any {
	out := map[string]any{"caller_confirmed": echo}
	for k, v := range args {
		out[k] = v
	}
	return out
}

func (g gateClinic) actions() int {
	return g.e.Count("SELECT count(*) FROM actions WHERE tenant_id = $1", g.tenant)
}

// activeIn counts the active appointments in a slot.
func (g gateClinic) activeIn(slot uuid.UUID) int {
	return g.e.Count("SELECT count(*) FROM appointments WHERE tenant_id = $1 AND slot_id = $2 AND status = 'active'", g.tenant, slot)
}

// The first reproduction: a booking confirmed, then cancelled; the
// same booking asked for again from a later call, without the caller's
// confirmation (or with the one the first call heard), books nothing: it
// would be a new appointment, and the caller has not said yes to it. The
// confirmation of its own read-back books it, once.
func TestGateHoldsAfterACancellation(t *testing.T) {
	t.Parallel()
	for _, platform := range gatePlatforms {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			g := newGateClinic(t, apptest.Start(t), platform, "America/New_York")
			ny := mustZone(t, "America/New_York")
			downtown := g.location("Downtown", "America/New_York")
			baker := g.practitioner("Dr. Baker", []uuid.UUID{downtown})
			p := g.slot(baker, downtown, time.Date(2031, 6, 18, 15, 30, 0, 0, ny), 30)
			book := map[string]any{"customer_id": g.customer, "slot_id": p}

			first := g.refused("the booking", "call-1", "book_appointment", book)
			booked := g.tool("call-1", "book_appointment", withEcho(book, first.Echo))
			if booked.Outcome != "confirmed" {
				t.Fatalf("the confirmed booking: %s", said(booked.answer))
			}
			g.confirmed("the cancellation", "call-1", "cancel_appointment", map[string]any{"appointment_id": detailID(t, booked.answer)})
			before := g.actions()

			again := g.refused("the same booking from a later call", "call-2", "book_appointment", book)
			g.refused("the same booking with the first call's confirmation", "call-2", "book_appointment", withEcho(book, first.Echo))
			if n := g.activeIn(p); n != 0 || g.actions() != before {
				t.Fatalf("unconfirmed bookings after the cancellation: %d active, %d actions (want 0, %d)", n, g.actions(), before)
			}
			rebooked := g.tool("call-2", "book_appointment", withEcho(book, again.Echo))
			if rebooked.Outcome != "confirmed" || rebooked.ActionID == booked.ActionID || g.activeIn(p) != 1 {
				t.Fatalf("the confirmed booking after the cancellation: %s; %d active", said(rebooked.answer), g.activeIn(p))
			}
		})
	}
}

// The second reproduction: an appointment moved P→Q, then Q→P,
// each confirmed; P→Q again without the caller's confirmation moves
// nothing (the first move's answer no longer stands: a new move).
func TestGateHoldsAfterMovingBack(t *testing.T) {
	t.Parallel()
	for _, platform := range gatePlatforms {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			g := newGateClinic(t, apptest.Start(t), platform, "America/New_York")
			ny := mustZone(t, "America/New_York")
			downtown := g.location("Downtown", "America/New_York")
			baker := g.practitioner("Dr. Baker", []uuid.UUID{downtown})
			p := g.slot(baker, downtown, time.Date(2031, 6, 18, 15, 30, 0, 0, ny), 30)
			q := g.slot(baker, downtown, time.Date(2031, 6, 19, 10, 0, 0, 0, ny), 30)

			booked := g.confirmed("the booking", "call-1", "book_appointment", map[string]any{"customer_id": g.customer, "slot_id": p})
			appt := detailID(t, booked.answer)
			toQ := map[string]any{"appointment_id": appt, "slot_id": q}
			firstRB := g.refused("P→Q (unconfirmed)", "call-1", "reschedule_appointment", toQ)
			first := g.tool("call-1", "reschedule_appointment", withEcho(toQ, firstRB.Echo))
			if first.Outcome != "confirmed" {
				t.Fatalf("P→Q: %s", said(first.answer))
			}
			g.confirmed("Q→P", "call-1", "reschedule_appointment", map[string]any{"appointment_id": appt, "slot_id": p})
			before := g.actions()

			g.refused("P→Q again", "call-1", "reschedule_appointment", toQ)
			// The same words read back for the first move: its echo was the
			// caller's yes to that move, not to this one.
			if again := g.refused("P→Q again with the first move's echo", "call-1", "reschedule_appointment", withEcho(toQ, firstRB.Echo)); again.ReadBack != firstRB.ReadBack {
				t.Fatalf("P→Q is read back %q, then %q", firstRB.ReadBack, again.ReadBack)
			}
			g.refused("P→Q again from a later call", "call-2", "reschedule_appointment", toQ)
			if g.activeIn(p) != 1 || g.activeIn(q) != 0 || g.actions() != before {
				t.Fatalf("an unconfirmed move back moved: %d in P, %d in Q, %d actions (want 1, 0, %d)", g.activeIn(p), g.activeIn(q), g.actions(), before)
			}
			moved := g.confirmed("P→Q again", "call-2", "reschedule_appointment", toQ)
			if moved.ActionID == first.ActionID || g.activeIn(q) != 1 || g.activeIn(p) != 0 {
				t.Fatalf("the confirmed move: %s; %d in P, %d in Q", said(moved.answer), g.activeIn(p), g.activeIn(q))
			}
		})
	}
}

// A booking by service without location_id is read back where it takes
// place (the service's location in Los Angeles), not in the tenant's zone
// (New York): the caller confirms the time the booking then says.
func TestGateReadsBackTheLocationsTime(t *testing.T) {
	t.Parallel()
	g := newGateClinic(t, apptest.Start(t), "dasha", "America/New_York")
	la := mustZone(t, "America/Los_Angeles")
	harbor := g.location("Harbor", "America/Los_Angeles")
	cleaning := g.service("Cleaning", 30, 0)
	baker := g.practitioner("Dr. Baker", []uuid.UUID{harbor}, cleaning)
	start := time.Date(2031, 6, 18, 15, 30, 0, 0, la)
	slot := g.slot(baker, harbor, start, 30)

	for i, startsAt := range []string{"2031-06-18T15:30", start.UTC().Format(time.RFC3339)} {
		customer := g.newCustomer([]string{"+12125550101", "+12125550102"}[i])
		book := map[string]any{"customer_id": customer, "service_id": cleaning, "starts_at": startsAt}
		rb := g.refused("a booking by service at "+startsAt, "call-zone", "book_appointment", book)
		if !strings.Contains(rb.ReadBack, "Wednesday, June 18, 2031 at 3:30 PM") || strings.Contains(rb.ReadBack, "6:30") {
			t.Fatalf("starts_at %s: read back %q; want 3:30 PM, the time in Los Angeles", startsAt, rb.ReadBack)
		}
		booked := g.tool("call-zone", "book_appointment", withEcho(book, rb.Echo))
		var got bookedSays
		decodeDetails(t, booked.answer, &got)
		if booked.Outcome != "confirmed" || got.When == "" || !strings.Contains(rb.ReadBack, got.When) || rb.When != got.When {
			t.Fatalf("starts_at %s: read back %q (when %q), booked %s", startsAt, rb.ReadBack, rb.When, said(booked.answer))
		}
		if n := g.activeIn(slot); n != 1 {
			t.Fatalf("active appointments in the slot: %d", n)
		}
		if _, err := g.e.Store.Pool().Exec(t.Context(), "UPDATE appointments SET status = 'cancelled' WHERE slot_id = $1", slot); err != nil {
			t.Fatal(err)
		}
	}
}

// The echo binds what was read back: the echo of Dr. Baker's 3:30 PM
// read-back books neither Dr. Able at 3:30 PM at the same place nor a
// 3:30 PM slot in Los Angeles; each slot's own echo books it.
func TestGateEchoBindsTheReadBack(t *testing.T) {
	t.Parallel()
	for _, platform := range gatePlatforms {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			g := newGateClinic(t, apptest.Start(t), platform, "America/New_York")
			ny, la := mustZone(t, "America/New_York"), mustZone(t, "America/Los_Angeles")
			downtown, harbor := g.location("Downtown", "America/New_York"), g.location("Harbor", "America/Los_Angeles")
			able := g.practitioner("Dr. Able", []uuid.UUID{downtown})
			baker := g.practitioner("Dr. Baker", []uuid.UUID{downtown, harbor})
			ableSlot := g.slot(able, downtown, time.Date(2031, 6, 18, 15, 30, 0, 0, ny), 30)
			bakerSlot := g.slot(baker, downtown, time.Date(2031, 6, 18, 15, 30, 0, 0, ny), 30)
			laSlot := g.slot(baker, harbor, time.Date(2031, 6, 18, 15, 30, 0, 0, la), 30)
			book := func(slot uuid.UUID) map[string]any { return map[string]any{"customer_id": g.customer, "slot_id": slot} }

			baker330 := g.refused("Dr. Baker's 3:30 PM", "call-1", "book_appointment", book(bakerSlot))
			if !strings.Contains(baker330.ReadBack, "Dr. Baker") || !strings.Contains(baker330.ReadBack, "3:30 PM") {
				t.Fatalf("Dr. Baker's read-back: %q", baker330.ReadBack)
			}
			before := g.actions()
			g.refused("Dr. Able's 3:30 PM with Dr. Baker's echo", "call-1", "book_appointment", withEcho(book(ableSlot), baker330.Echo))
			g.refused("Dr. Baker's 3:30 PM in another call with this call's echo", "call-2", "book_appointment", withEcho(book(bakerSlot), baker330.Echo))
			other := g.newCustomer("+12125550199")
			g.refused("Dr. Baker's 3:30 PM for another customer with this one's echo", "call-1", "book_appointment",
				withEcho(map[string]any{"customer_id": other, "slot_id": bakerSlot}, baker330.Echo))
			g.refused("Los Angeles' 3:30 PM with New York's echo", "call-1", "book_appointment", withEcho(book(laSlot), baker330.Echo))
			if g.activeIn(ableSlot)+g.activeIn(laSlot)+g.activeIn(bakerSlot) != 0 || g.actions() != before {
				t.Fatalf("another read-back's echo booked: Able %d, Los Angeles %d, actions %d (want %d)",
					g.activeIn(ableSlot), g.activeIn(laSlot), g.actions(), before)
			}
			g.confirmed("Dr. Able's 3:30 PM", "call-1", "book_appointment", book(ableSlot))
			if g.activeIn(ableSlot) != 1 || g.activeIn(bakerSlot) != 0 {
				t.Fatalf("Dr. Able's confirmed booking: Able %d, Baker %d", g.activeIn(ableSlot), g.activeIn(bakerSlot))
			}
		})
	}
}

// On a 45.00 USD charge, echoes in another currency or in other number
// forms charge nothing; the echo the read-back gave charges once.
func TestGateChargeEchoIsTheAmountReadBack(t *testing.T) {
	t.Parallel()
	for _, platform := range gatePlatforms {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			sim := simtest.Start(t, providersim.Config{})
			g := newGateClinic(t, apptest.Start(t, withPayments(sim)), platform, "America/New_York")
			intent := resultOf(t, g.e.Post("/v1/payment-intents", g.key, "intent-45", map[string]any{
				"customer_id": g.customer, "amount": 4500, "currency": "USD"}))["id"].(string)
			charge := map[string]any{"payment_intent_id": intent}
			rb := g.refused("the charge", "call-1", "charge_payment", charge)
			if !strings.Contains(rb.ReadBack, "45.00 US dollars") {
				t.Fatalf("the charge's read-back: %q", rb.ReadBack)
			}
			before := g.actions()
			for _, echo := range []string{"€45.00", "£45", "90/2", "4.5e1", "0x2D", "45.00 EUR", "4500", "$45.00"} {
				if a := g.refused("the echo "+echo, "call-1", "charge_payment", withEcho(charge, echo)); !strings.Contains(a.Say, echo) {
					t.Errorf("the refusal of %q does not say what it refused: %s", echo, said(a.answer))
				}
			}
			if n := len(sim.Ledger(provider.Payments)); n != 0 || g.actions() != before ||
				g.e.Count("SELECT count(*) FROM payments WHERE tenant_id = $1", g.tenant) != 0 {
				t.Fatalf("wrong echoes charged: %d provider writes, %d actions (want 0, %d)", n, g.actions(), before)
			}
			paid := g.tool("call-1", "charge_payment", withEcho(charge, rb.Echo))
			if paid.Outcome != "confirmed" || len(sim.Ledger(provider.Payments)) != 1 ||
				g.e.Count("SELECT count(*) FROM payments WHERE tenant_id = $1 AND amount = 4500 AND currency = 'USD' AND status = 'succeeded'", g.tenant) != 1 {
				t.Fatalf("the confirmed charge: %s; %d provider writes", said(paid.answer), len(sim.Ledger(provider.Payments)))
			}
		})
	}
}

// The night the clocks go back in New York, 01:00 and 01:30 show twice:
// each of the two slots at one wall time is read back so that a caller
// tells them apart, and each read-back's own echo books its slot (the
// second 01:30's too); one's echo does not book the other.
func TestGateReadsBackTheRepeatedHour(t *testing.T) {
	t.Parallel()
	g := newGateClinic(t, apptest.Start(t), "dasha", "America/New_York")
	downtown := g.location("Downtown", "America/New_York")
	able := g.practitioner("Dr. Able", []uuid.UUID{downtown})
	// 2031-11-02: 01:00-01:59 EDT (UTC-4), then 01:00-01:59 EST (UTC-5).
	at := func(hour, minute int) time.Time { return time.Date(2031, 11, 2, hour, minute, 0, 0, time.UTC) }
	for _, pair := range [][2]time.Time{{at(5, 0), at(6, 0)}, {at(5, 30), at(6, 30)}} {
		first, second := g.slot(able, downtown, pair[0], 30), g.slot(able, downtown, pair[1], 30)
		customer := g.newCustomer("+1212555" + pair[0].Format("1504"))
		book := func(slot uuid.UUID) map[string]any { return map[string]any{"customer_id": customer, "slot_id": slot} }
		a := g.refused("the first "+pair[0].Format("15:04Z"), "call-dst", "book_appointment", book(first))
		b := g.refused("the second "+pair[1].Format("15:04Z"), "call-dst", "book_appointment", book(second))
		if a.ReadBack == b.ReadBack || !strings.Contains(a.ReadBack, "EDT") || !strings.Contains(b.ReadBack, "EST") {
			t.Fatalf("the two slots at one wall time are read back %q and %q: a caller cannot tell them apart", a.ReadBack, b.ReadBack)
		}
		g.refused("the second with the first's echo", "call-dst", "book_appointment", withEcho(book(second), a.Echo))
		booked := g.tool("call-dst", "book_appointment", withEcho(book(second), b.Echo))
		if booked.Outcome != "confirmed" || g.activeIn(second) != 1 || g.activeIn(first) != 0 {
			t.Fatalf("the second slot with its own echo %q: %s", b.Echo, said(booked.answer))
		}
	}
}
