package chaos

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/oncecall/oncecall/internal/sim/providersim"
)

// Fixed ids of the audit's table tests.
const (
	actA   = "01a22b6f-0000-7000-8000-00000000000a"
	actB   = "01a22b6f-0000-7000-8000-00000000000b"
	slot1  = "01a22b6f-0000-7000-8000-000000000001"
	intent = "01a22b6f-0000-7000-8000-000000000002"
	member = "01a22b6f-0000-7000-8000-000000000003"
)

func booking(id, state, outcome string) storedAction {
	return storedAction{ID: id, Operation: "appointment.book", State: state, Outcome: outcome, Logical: kindBook + ":" + slot1}
}

func calendarWrite(ref, actionID string) providersim.LedgerEntry {
	payload, _ := json.Marshal(map[string]string{"customer_id": intent, "slot_id": slot1})
	return providersim.LedgerEntry{Write: providersim.Write{
		ID: ref, Capability: "calendar", ExternalRef: actionID + "/calendar", Operation: "appointment.book",
		Payload: payload, Status: providersim.StatusCommitted,
	}, Requests: 1}
}

func confirmationWrite(ref, actionID string) providersim.LedgerEntry {
	payload, _ := json.Marshal(map[string]string{"customer_id": intent, "subject_id": slot1, "template": "appointment_confirmation"})
	return providersim.LedgerEntry{Write: providersim.Write{
		ID: ref, Capability: "messaging", ExternalRef: actionID + "/messaging.confirmation", Operation: "message.send",
		Payload: payload, Status: providersim.StatusCommitted,
	}, Requests: 1}
}

func told(answers ...answer) []*logical {
	return []*logical{{N: 1, Kind: kindBook, Style: styleREST, Identity: slot1, Answers: answers, Attempts: len(answers)}}
}

func pointsChange(id, state, outcome string) storedAction {
	return storedAction{ID: id, Operation: "customer.points.add", State: state, Outcome: outcome, Logical: kindPoints + ":" + member}
}

func entry(ref, actionID string) effect {
	return effect{Ref: ref, ActionID: actionID, Step: stepPoints, Logical: kindPoints + ":" + member, Delta: 50}
}

// memberHolds is member's balance and its points_ledger rows.
func memberHolds(balance int64, entries ...effect) points {
	return points{entries: entries, balances: map[string]int64{kindPoints + ":" + member: balance}}
}

// toldPoints is a change of 50 points of member's.
func toldPoints(answers ...answer) []*logical {
	return []*logical{{N: 1, Kind: kindPoints, Style: styleDasha, Identity: member, Delta: 50, Answers: answers, Attempts: len(answers)}}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	confirmedA := answer{Outcome: "confirmed", ActionID: actA}
	pendingA := answer{Outcome: "pending", ActionID: actA}
	cases := []struct {
		name    string
		stored  []storedAction
		ledger  []providersim.LedgerEntry
		points  points
		actions []*logical
		want    Report
	}{{
		name:    "kept: told pending then confirmed, one write",
		stored:  []storedAction{booking(actA, "completed", "confirmed")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA), confirmationWrite("msg_1", actA)},
		actions: told(pendingA, confirmedA),
		want:    Report{Confirmed: 1},
	}, {
		name:    "duplicate: two writes of one step of one action",
		stored:  []storedAction{booking(actA, "completed", "confirmed")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA), calendarWrite("cal_2", actA)},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, Duplicates: 1, Lost: 1},
	}, {
		name:    "duplicate follow-up: the confirmation message sent twice",
		stored:  []storedAction{booking(actA, "completed", "confirmed")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA), confirmationWrite("msg_1", actA), confirmationWrite("msg_2", actA)},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, Duplicates: 1},
	}, {
		name:    "duplicate: two actions for one logical action, both written",
		stored:  []storedAction{booking(actA, "completed", "confirmed"), booking(actB, "unknown", "")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA), calendarWrite("cal_2", actB)},
		actions: told(pendingA),
		want:    Report{Pending: 1, Duplicates: 1, StillUnknown: 1},
	}, {
		name:    "lost and falsely confirmed: told confirmed, nothing written",
		stored:  []storedAction{booking(actA, "completed", "confirmed")},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, Lost: 1, FalseConfirmations: 1},
	}, {
		name:    "falsely confirmed: the action ends rejected",
		stored:  []storedAction{booking(actA, "completed", "rejected")},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, Lost: 1, FalseConfirmations: 1},
	}, {
		name:    "falsely confirmed: the one write belongs to another action",
		stored:  []storedAction{booking(actA, "completed", "confirmed"), booking(actB, "completed", "confirmed")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actB)},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, FalseConfirmations: 1},
	}, {
		name:    "contradiction: told rejected, yet written",
		stored:  []storedAction{booking(actA, "completed", "rejected")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA)},
		actions: told(answer{Outcome: "rejected", ActionID: actA, Reason: "SLOT_UNAVAILABLE"}),
		want:    Report{Rejected: 1, Contradictions: 1},
	}, {
		name:    "unattributed: a write for an action that does not exist",
		stored:  []storedAction{booking(actA, "completed", "confirmed")},
		ledger:  []providersim.LedgerEntry{calendarWrite("cal_1", actA), calendarWrite("cal_2", actB)},
		actions: told(confirmedA),
		want:    Report{Confirmed: 1, Unattributed: 1},
	}, {
		name:   "unattributed: a write no caller asked for",
		stored: []storedAction{booking(actA, "completed", "confirmed")},
		ledger: []providersim.LedgerEntry{calendarWrite("cal_1", actA)},
		want:   Report{Unattributed: 1},
	}, {
		name:    "left for an operator and still unknown are counted, not failures",
		stored:  []storedAction{booking(actA, "unknown", ""), {ID: actB, Operation: "payment.charge", State: "unknown", NeedsOperator: true}},
		actions: told(pendingA),
		want:    Report{Pending: 1, NeedsOperator: 1, StillUnknown: 1},
	}, {
		name:    "unanswered and protocol errors",
		stored:  nil,
		actions: []*logical{{Kind: kindSend, Identity: "ref-1", Failure: "POST /v1/messages answered 400"}},
		want:    Report{Unanswered: 1, ProtocolErrors: 1},
	}, {
		name:    "points kept: told confirmed, one entry, the balance is the delta",
		stored:  []storedAction{pointsChange(actA, "completed", "confirmed")},
		points:  memberHolds(50, entry("pl_1", actA)),
		actions: toldPoints(pendingA, confirmedA),
		want:    Report{Confirmed: 1},
	}, {
		name:    "points duplicate: two entries of one action",
		stored:  []storedAction{pointsChange(actA, "completed", "confirmed")},
		points:  memberHolds(100, entry("pl_1", actA), entry("pl_2", actA)),
		actions: toldPoints(confirmedA),
		want:    Report{Confirmed: 1, Duplicates: 1, Lost: 1},
	}, {
		name:    "points duplicate: the balance holds the change twice, the ledger once",
		stored:  []storedAction{pointsChange(actA, "completed", "confirmed")},
		points:  memberHolds(100, entry("pl_1", actA)),
		actions: toldPoints(confirmedA),
		want:    Report{Confirmed: 1, Duplicates: 1},
	}, {
		name:    "points lost and falsely confirmed: told confirmed, no entry",
		stored:  []storedAction{pointsChange(actA, "completed", "confirmed")},
		points:  memberHolds(0),
		actions: toldPoints(confirmedA),
		want:    Report{Confirmed: 1, Lost: 1, FalseConfirmations: 1},
	}, {
		name:    "points lost: the action ends confirmed, unheard, with no entry",
		stored:  []storedAction{pointsChange(actA, "completed", "confirmed")},
		points:  memberHolds(0),
		actions: toldPoints(),
		want:    Report{Unanswered: 1, Lost: 1},
	}, {
		name:    "points entry of a rejected action: a contradiction, and more than the confirmed change",
		stored:  []storedAction{pointsChange(actA, "completed", "rejected")},
		points:  memberHolds(50, entry("pl_1", actA)),
		actions: toldPoints(answer{Outcome: "rejected", ActionID: actA, Reason: "INSUFFICIENT_POINTS"}),
		want:    Report{Rejected: 1, Contradictions: 1, Duplicates: 1},
	}, {
		name:   "unattributed: points no caller asked for",
		points: memberHolds(50),
		want:   Report{Unattributed: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored := map[string]storedAction{}
			for _, a := range tc.stored {
				stored[a.ID] = a
			}
			got := judge(stored, tc.ledger, tc.points, tc.actions)
			want := tc.want
			want.Actions = len(tc.actions)
			for _, l := range tc.actions {
				want.Attempts += l.Attempts
			}
			want.Writes, want.Entries = len(tc.ledger), len(tc.points.entries)
			problems := got.Problems
			got.Problems = nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("judge:\n got %+v\nwant %+v\nproblems: %q", got, want, problems)
			}
			if got.OK() != (want.Duplicates+want.Lost+want.FalseConfirmations+want.Contradictions+want.Unattributed+want.ProtocolErrors == 0) {
				t.Fatalf("OK() = %v for %+v", got.OK(), got)
			}
			if !got.OK() && len(problems) == 0 {
				t.Fatal("a failing audit names no problem")
			}
		})
	}
}

func TestReportLine(t *testing.T) {
	t.Parallel()
	r := Report{Actions: 2000, Attempts: 5400, Kills: 12, NeedsOperator: 3}
	want := "chaos: actions=2000 attempts=5400 kills=12 duplicates=0 lost=0 false_confirmations=0 needs_operator=3 still_unknown=0"
	if got := r.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// In the Stripe mode a PaymentIntent captured twice is two charges: the
// audit sees a duplicate; captured once, the confirmed charge is kept.
func TestStripeCapturesAreJudgedAsCharges(t *testing.T) {
	t.Parallel()
	pi := func(captures int) []providersim.StripePaymentIntent {
		return []providersim.StripePaymentIntent{{ID: "pi_1", Status: "succeeded", Captures: captures, Metadata: map[string]string{
			"oncecall_action": actA, "oncecall_step": "payments", "oncecall_intent": intent,
		}}}
	}
	stored := map[string]storedAction{actA: {ID: actA, Operation: "payment.charge", State: "completed", Outcome: "confirmed", Logical: kindCharge + ":" + intent}}
	actions := []*logical{{N: 1, Kind: kindCharge, Style: styleREST, Identity: intent, Attempts: 1,
		Answers: []answer{{Outcome: "confirmed", ActionID: actA}}}}
	if got := judge(stored, stripeCaptures(pi(1)), points{}, actions); !got.OK() || got.Confirmed != 1 || got.Writes != 1 {
		t.Fatalf("one capture: %+v %q", got, got.Problems)
	}
	if got := judge(stored, stripeCaptures(pi(2)), points{}, actions); got.OK() || got.Duplicates != 1 {
		t.Fatalf("two captures of one PaymentIntent: %+v, want one duplicate", got)
	}
	if got := judge(stored, stripeCaptures(pi(0)), points{}, actions); got.OK() || got.Lost != 1 {
		t.Fatalf("a confirmed charge with no capture: %+v, want lost", got)
	}
}
