package chaos

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Fixed ids of the audit of speech's table tests.
const (
	callerID = "0a000000-0000-4000-8000-000000000001"
	otherID  = "0a000000-0000-4000-8000-000000000002"
	slotA    = "0b000000-0000-4000-8000-00000000000a"
	slotB    = "0b000000-0000-4000-8000-00000000000b"
	apptA    = "0c000000-0000-4000-8000-00000000000a"
	apptB    = "0c000000-0000-4000-8000-00000000000b"
	piA      = "0d000000-0000-4000-8000-00000000000a"
	tokenM   = "m-1-0-abcdef"
	tokenCB  = "c-1-0-abcdef"
)

var t0 = time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)

// oneCall is a world of one returning caller with two slots and one
// payment, and one call of theirs with the intents given.
func oneCall(intents ...*callIntent) (*callWorld, *callScript) {
	tn := &callTenant{ID: "tenant", loc: time.UTC}
	p := &callPerson{ID: callerID, Tenant: tn, Seeded: true, Points: 1000}
	w := &callWorld{
		Tenants: []*callTenant{tn},
		Slots: map[string]*callSlot{
			slotA: {ID: slotA, Tenant: tn, Start: t0},
			slotB: {ID: slotB, Tenant: tn, Start: t0.Add(time.Hour)},
		},
		People:       map[string]*callPerson{callerID: p, otherID: {ID: otherID, Tenant: tn, Seeded: true, Points: 1000}},
		Intents:      map[string]*callPI{piA: {ID: piA, Person: p, Amount: 4500}},
		Appointments: map[string]*seededBooking{},
	}
	c := &callScript{N: 1, Platform: platVapi, CallID: "call-1", Tenant: tn, Person: p, Intents: intents}
	c.play = &callPlay{customer: callerID}
	for i, in := range intents {
		in.Call, in.N = c, i
		c.play.intents = append(c.play.intents, &intentPlay{})
	}
	w.Calls = []*callScript{c}
	return w, c
}

// heard adds to c's history an answer heard s seconds in, for intent, with
// its claims (the callerID's customer filled in).
func heard(c *callScript, s int, intent int, tool, args, outcome string, claims ...claim) {
	for i := range claims {
		if claims[i].Customer == "" {
			claims[i].Customer = callerID
		}
	}
	c.play.events = append(c.play.events, &callEvent{
		At: t0.Add(time.Duration(s) * time.Second), Intent: intent, Tool: tool, Args: []byte(args), Status: 200,
		Answer: &voiceAnswer{Outcome: outcome, Details: json.RawMessage("{}")}, Claims: claims,
	})
}

func appointment(id, customer, slot string, active bool) truthAppointment {
	start := t0
	if slot == slotB {
		start = t0.Add(time.Hour)
	}
	return truthAppointment{ID: id, Customer: customer, Slot: slot, Start: start, Active: active}
}

// settled is a state holding the appointments given and the two
// customers with their seeded balances.
func settled(appts ...truthAppointment) callsTruth {
	t := callsTruth{
		Appointments: map[string]truthAppointment{}, Callbacks: map[string]truthCallback{},
		Customers: map[string]truthCustomer{callerID: {ID: callerID, Points: 1000}, otherID: {ID: otherID, Points: 1000}},
	}
	for _, a := range appts {
		t.Appointments[a.ID] = a
	}
	return t
}

// counts are the figures of a report the table tests compare.
type counts struct{ SpokenFalse, Duplicates, Lost, Unsettled, Lockouts int }

func TestJudgeCalls(t *testing.T) {
	t.Parallel()
	bookA := func() *callIntent { return &callIntent{Kind: wantBook, Slot: w0Slot(slotA)} }
	booked := func(appt, slot string) claim { return claim{What: claimBooked, Object: appt, Slot: slot} }
	cases := []struct {
		name  string
		play  func() (*callWorld, callsTruth)
		want  counts
		false string // a word of the first problem, when there is one
	}{{
		name: "kept: booked, and it stands",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA())
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			return w, settled(appointment(apptA, callerID, slotA, true))
		},
	}, {
		name: "kept: booked, then cancelled later by the callerID",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA(), &callIntent{Kind: wantCancel})
			c.Intents[1].Of = c.Intents[0]
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			heard(c, 2, 1, "cancel_appointment", `{"appointment_id":"`+apptA+`"}`, "confirmed", claim{What: claimCancelled, Object: apptA})
			c.play.intents[1].args = ordered{{"appointment_id", apptA}}
			return w, settled(appointment(apptA, callerID, slotA, false))
		},
	}, {
		name: "spoken false: booked, and it is cancelled with nobody asking",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA())
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			return w, settled(appointment(apptA, callerID, slotA, false))
		},
		want: counts{SpokenFalse: 1}, false: "cancelled",
	}, {
		// (The other customer's booking, asked for by no call played here,
		// counts as an effect beyond the intents.)
		name: "spoken false and lost: booked, but the appointment is another caller's",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA())
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptB, slotA))
			return w, settled(appointment(apptB, otherID, slotA, true))
		},
		want: counts{SpokenFalse: 1, Lost: 1, Duplicates: 1}, false: "another customer's",
	}, {
		name: "spoken false: told the slot is taken while the callerID holds it",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA())
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			heard(c, 2, 0, "book_appointment", `{}`, "rejected", claim{What: claimNotBooked, Slot: slotA, Say: "That slot is no longer available."})
			return w, settled(appointment(apptA, callerID, slotA, true))
		},
		want: counts{SpokenFalse: 1}, false: "holds",
	}, {
		name: "kept: told the slot is taken, then it was free and booked",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(bookA())
			heard(c, 1, 0, "book_appointment", `{}`, "rejected", claim{What: claimNotBooked, Slot: slotA, Say: "That slot is no longer available."})
			heard(c, 2, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			return w, settled(appointment(apptA, callerID, slotA, true))
		},
	}, {
		name: "duplicate: one booking intent, two appointments",
		play: func() (*callWorld, callsTruth) {
			in := bookA()
			in.ChangeTo = w0Slot(slotB)
			w, c := oneCall(in)
			heard(c, 1, 0, "book_appointment", `{}`, "confirmed", booked(apptA, slotA))
			heard(c, 2, 0, "book_appointment", `{}`, "confirmed", booked(apptB, slotB))
			return w, settled(appointment(apptA, callerID, slotA, true), appointment(apptB, callerID, slotB, true))
		},
		want: counts{Duplicates: 1}, false: "2 effects",
	}, {
		name: "duplicate: an appointment no intent asked for",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantNote, Token: "n-1-0-abcdef"})
			heard(c, 1, 0, "add_customer_note", `{}`, "confirmed", claim{What: claimNoted, Token: "n-1-0-abcdef"})
			t := settled(appointment(apptA, callerID, slotB, true))
			t.Notes = []truthEffect{{Ref: "note-1", Customer: callerID, Token: "n-1-0-abcdef"}}
			return w, t
		},
		want: counts{Duplicates: 1}, false: "no intent asked for",
	}, {
		name: "spoken false: a pending say that does not say it is not confirmed",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantMessage, Token: tokenM})
			heard(c, 1, 0, "send_message", `{}`, "pending", claim{What: claimNotYet, Say: "The message is on its way."})
			heard(c, 2, 0, "check_action_status", `{}`, "confirmed", claim{What: claimSent, Token: tokenM})
			t := settled()
			t.Messages = []truthEffect{{Ref: "msg_1", Customer: callerID, Token: tokenM}}
			return w, t
		},
		want: counts{SpokenFalse: 1}, false: "does not say",
	}, {
		name: "unsettled: pending at the end",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantMessage, Token: tokenM})
			heard(c, 1, 0, "send_message", `{}`, "pending", claim{What: claimNotYet, Say: "It is NOT confirmed yet."})
			return w, settled()
		},
		want: counts{Unsettled: 1}, false: "pending",
	}, {
		name: "spoken false and lost: charged, and the provider holds no charge",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantPay, PI: &callPI{ID: piA}})
			heard(c, 1, 0, "charge_payment", `{}`, "confirmed", claim{What: claimCharged, Object: piA, Amount: 4500})
			return w, settled()
		},
		want: counts{SpokenFalse: 1, Lost: 1}, false: "no charge",
	}, {
		name: "spoken false: declined, and the provider charged it",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantPay, PI: &callPI{ID: piA}})
			heard(c, 1, 0, "charge_payment", `{}`, "rejected", claim{What: claimNotCharged, Object: piA, Say: "The card was declined; nothing was charged."})
			heard(c, 2, 0, "charge_payment", `{}`, "confirmed", claim{What: claimCharged, Object: piA, Amount: 4500})
			t := settled()
			t.Charges = []truthEffect{{Ref: "pay_1", Object: piA, Amount: 4500}}
			return w, t
		},
		want: counts{SpokenFalse: 1}, false: "charged it",
	}, {
		name: "kept: a callback whose window the callerID changed later",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantCallback, Token: tokenCB})
			heard(c, 1, 0, "request_callback", `{"reason":"`+tokenCB+`"}`, "confirmed",
				claim{What: claimCallback, Object: "cb-1", Token: tokenCB, Window: [2]string{"2030-01-05T09:00", "2030-01-05T11:00"}})
			heard(c, 2, 0, "request_callback", `{"reason":"`+tokenCB+`"}`, "confirmed",
				claim{What: claimCallback, Object: "cb-1", Token: tokenCB, Window: [2]string{"2030-01-06T09:00", "2030-01-06T11:00"}})
			t := settled()
			t.Callbacks["cb-1"] = truthCallback{ID: "cb-1", Customer: callerID, Token: tokenCB, Active: true, Window: [2]string{"2030-01-06T09:00", "2030-01-06T11:00"}}
			return w, t
		},
	}, {
		name: "spoken false: a callback in another window than the one said",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantCallback, Token: tokenCB})
			heard(c, 1, 0, "request_callback", `{}`, "confirmed",
				claim{What: claimCallback, Object: "cb-1", Token: tokenCB, Window: [2]string{"2030-01-05T09:00", "2030-01-05T11:00"}})
			t := settled()
			t.Callbacks["cb-1"] = truthCallback{ID: "cb-1", Customer: callerID, Token: tokenCB, Active: true, Window: [2]string{"2030-01-06T09:00", "2030-01-06T11:00"}}
			return w, t
		},
		want: counts{SpokenFalse: 1}, false: "is for",
	}, {
		name: "lockout: a 503 while another call of the tenant was slow",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantMessage, Token: tokenM})
			c.play.events = append(c.play.events, &callEvent{At: t0, Intent: 0, Tool: "send_message", Status: 503, Lockout: true})
			heard(c, 1, 0, "send_message", `{}`, "confirmed", claim{What: claimSent, Token: tokenM})
			t := settled()
			t.Messages = []truthEffect{{Ref: "msg_1", Customer: callerID, Token: tokenM}}
			return w, t
		},
		want: counts{Lockouts: 1}, false: "503",
	}, {
		name: "a balance the points ledger does not explain",
		play: func() (*callWorld, callsTruth) {
			w, c := oneCall(&callIntent{Kind: wantPoints, Token: "p-1-0-abcdef", Delta: 50})
			heard(c, 1, 0, "add_loyalty_points", `{}`, "confirmed", claim{What: claimPoints, Token: "p-1-0-abcdef"})
			t := settled()
			t.Points = []truthEffect{{Ref: "pl_1", Customer: callerID, Delta: 50, Token: "p-1-0-abcdef"}}
			t.Customers[callerID] = truthCustomer{ID: callerID, Points: 1100}
			return w, t
		},
		want: counts{Duplicates: 1}, false: "points",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, truth := tc.play()
			r := judgeCalls(w, truth, false)
			got := counts{r.SpokenFalse, r.Duplicates, r.Lost, r.Unsettled, r.Lockouts}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v\nproblems: %q", got, tc.want, r.Problems)
			}
			if r.OK() != (tc.want == counts{}) {
				t.Fatalf("OK() = %v for %+v", r.OK(), got)
			}
			if tc.false == "" {
				return
			}
			if len(r.Problems) == 0 || !strings.Contains(strings.Join(r.Problems, "\n"), tc.false) {
				t.Fatalf("no problem says %q: %q", tc.false, r.Problems)
			}
			if len(r.Histories) == 0 || !strings.Contains(r.Histories[0], "VIOLATION") {
				t.Fatalf("the violating call's history was not printed: %q", r.Histories)
			}
		})
	}
}

// w0Slot is a slot of the table tests' world by id.
func w0Slot(id string) *callSlot { return &callSlot{ID: id} }

func TestCallsReportLine(t *testing.T) {
	t.Parallel()
	r := CallsReport{Calls: 2000, ToolCalls: 10500, Platforms: 4, Faults: 1234}
	want := "calls: calls=2000 tool_calls=10500 platforms=4 faults=1234 spoken_false=0 duplicates=0 lost=0 unsettled=0 lockouts=0"
	if got := r.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// A seed gives the same world and scripts, ids included.
func TestCallWorldIsTheSeeds(t *testing.T) {
	t.Parallel()
	a := newCallWorld(99, scriptOptions{Calls: 300, Tenants: 3, Start: t0})
	b := newCallWorld(99, scriptOptions{Calls: 300, Tenants: 3, Start: t0})
	for i := range a.Calls {
		if ha, hb := a.Calls[i].history(nil), b.Calls[i].history(nil); ha != hb {
			t.Fatalf("call %d differs:\n%s\n%s", i, ha, hb)
		}
	}
	kinds := map[string]int{}
	shapes := map[string]int{}
	pairs := 0
	for _, c := range a.Calls {
		for _, in := range c.Intents {
			kinds[in.Kind]++
		}
		shapes[c.Shape]++
		if c.Partner != nil {
			pairs++
		}
	}
	for _, k := range []string{wantCreate, wantBook, wantMove, wantCancel, wantPay, wantLink, wantMessage, wantNote, wantPoints, wantCallback} {
		if kinds[k] == 0 {
			t.Errorf("300 calls want no %s", k)
		}
	}
	if shapes["long"] == 0 || pairs == 0 {
		t.Errorf("300 calls have %d long call ids and %d paired calls", shapes["long"], pairs)
	}
}

// Every call id a script gives a platform is one oncecall takes (at most
// 200 printable ASCII characters), the long ones and those that spell
// another platform's stored id ("vapi:" and the Vapi call's id) included:
// a script that sends one oncecall refuses would count the refusal as a
// call that never got its work done.
func TestCallIDsAreValid(t *testing.T) {
	t.Parallel()
	prefixed := 0
	for seed := range uint64(300) {
		w := newCallWorld(seed, scriptOptions{Calls: 200, Tenants: 3, Start: t0})
		for _, c := range w.Calls {
			if c.Shape == "platform-prefixed" {
				prefixed++
			}
			if len(c.CallID) > 200 || strings.IndexFunc(c.CallID, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
				t.Fatalf("seed %d: call on %s with a call id oncecall refuses (%d characters, %s): %q", seed, c.Platform, len(c.CallID), c.Shape, c.CallID)
			}
		}
	}
	if prefixed == 0 {
		t.Error("no platform-prefixed call id in 300 scripts")
	}
}
