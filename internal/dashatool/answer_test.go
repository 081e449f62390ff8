package dashatool_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// confirmationPhrases are wordings that present a request as having taken
// effect. A pending answer must contain none of them.
var confirmationPhrases = []string{
	"is booked", "is confirmed", "are confirmed", "confirmed for", "has been", "have been", "successfully",
	"done", "completed", "went through", "is cancelled", "is moved", "is charged", "is sent", "all set",
	"you're booked", "it worked", "was sent", "is queued", "on its way", "been charged", "were charged", "was charged",
	"is saved", "are saved", "is created", "is updated", "is recorded", "are recorded", "is added", "were added",
	"succeeded", "is approved",
}

func checkPending(t *testing.T, what string, a dashatool.Answer) {
	t.Helper()
	for _, p := range pendingProblems(a) {
		t.Errorf("%s: %s", what, p)
	}
}

// pendingProblems lists what is wrong with a pending answer.
func pendingProblems(a dashatool.Answer) []string {
	var out []string
	if a.Outcome != "pending" {
		out = append(out, "outcome "+a.Outcome+", want pending")
	}
	say := strings.ToLower(a.Say)
	if !strings.Contains(say, "not confirmed") {
		out = append(out, "say does not state that the request is not confirmed: "+a.Say)
	}
	for _, p := range confirmationPhrases {
		if strings.Contains(say, p) {
			out = append(out, "say contains the confirmation phrase "+strconv.Quote(p)+": "+a.Say)
		}
	}
	return out
}

// TestEveryToolPhrasesEveryOutcome checks the answers of every operation in
// the registry, tools or not: check_action_status answers for actions made
// through REST too.
func TestEveryToolPhrasesEveryOutcome(t *testing.T) {
	t.Parallel()
	ops := app.Operations()
	tools := map[string]bool{}
	for _, o := range ops.All() {
		name := o.Name()
		if o.Tool() != "" {
			name = o.Tool()
			tools[name] = true
		}
		p := o.Phrases()
		id := uuid.New()
		confirmed := dashatool.ForAction(oncecall.Action{ID: id, State: oncecall.Completed, Outcome: oncecall.Confirmed, Result: []byte(`{"id":"x"}`)}, p)
		if confirmed.Outcome != "confirmed" || confirmed.Say == "" || string(confirmed.Details) != `{"id":"x"}` {
			t.Errorf("%s confirmed: %+v", name, confirmed)
		}
		reasons := []string{"SOME_UNLISTED_REASON"}
		for r := range p.Rejected {
			if r != "" {
				reasons = append(reasons, r)
			}
		}
		for _, r := range reasons {
			a := dashatool.ForAction(oncecall.Action{ID: id, State: oncecall.Completed, Outcome: oncecall.Rejected, Reason: r}, p)
			if a.Outcome != "rejected" || a.Reason != strings.ToLower(r) || a.Say == "" {
				t.Errorf("%s rejected %s: %+v", name, r, a)
			}
		}
		for _, state := range []oncecall.State{oncecall.Running, oncecall.Unknown} {
			a := dashatool.ForAction(oncecall.Action{ID: id, State: state}, p)
			checkPending(t, name+" "+string(state), a)
			if a.ActionID != id.String() || !strings.Contains(a.Say, "check_action_status") {
				t.Errorf("%s pending does not point at check_action_status with its action_id: %+v", name, a)
			}
		}
		checkPending(t, name+" in progress", dashatool.InProgress(id, p))
		checkPending(t, name+" in progress without id", dashatool.InProgress(uuid.Nil, p))
	}
	for _, tool := range []string{
		"book_appointment", "reschedule_appointment", "cancel_appointment", "charge_payment", "send_message",
		"create_customer", "update_customer", "add_customer_note", "add_loyalty_points",
	} {
		if !tools[tool] {
			t.Errorf("no operation in the registry has the tool %s", tool)
		}
	}
	checkPending(t, "fallBackResult", dashatool.Fallback())
}

// TestPendingCheckCatchesAConfirmation proves the wording check can fail.
func TestPendingCheckCatchesAConfirmation(t *testing.T) {
	t.Parallel()
	for _, say := range []string{
		"Your appointment is booked.", "The payment has been taken.", "All done!", "It is NOT confirmed, but it went through.",
		"It is NOT confirmed yet. Do not tell the caller it is done.", "Your message was sent.", "The points are recorded.",
	} {
		if len(pendingProblems(dashatool.Answer{Outcome: "pending", Say: say})) == 0 {
			t.Errorf("a pending say that claims success passed the wording check: %q", say)
		}
	}
}
