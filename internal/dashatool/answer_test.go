package dashatool_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/dashatool"
)

// confirmationPhrases are wordings that present a request as having taken
// effect. A pending answer must contain none of them.
var confirmationPhrases = []string{
	"is booked", "is confirmed", "are confirmed", "confirmed for", "has been", "have been", "successfully",
	"done", "completed", "went through", "is cancelled", "is moved", "is charged", "is sent", "all set",
	"you're booked", "it worked",
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

func TestEveryToolPhrasesEveryOutcome(t *testing.T) {
	t.Parallel()
	ops := app.Operations()
	tools := 0
	for _, o := range ops.All() {
		if o.Tool() == "" {
			continue
		}
		tools++
		p := o.Phrases()
		id := uuid.New()
		confirmed := dashatool.ForAction(db.Action{ID: id, State: db.Completed, Outcome: db.Confirmed, Result: []byte(`{"id":"x"}`)}, p)
		if confirmed.Outcome != "confirmed" || confirmed.Say == "" || string(confirmed.Details) != `{"id":"x"}` {
			t.Errorf("%s confirmed: %+v", o.Tool(), confirmed)
		}
		reasons := []string{"SOME_UNLISTED_REASON"}
		for r := range p.Rejected {
			if r != "" {
				reasons = append(reasons, r)
			}
		}
		for _, r := range reasons {
			a := dashatool.ForAction(db.Action{ID: id, State: db.Completed, Outcome: db.Rejected, Reason: r}, p)
			if a.Outcome != "rejected" || a.Reason != strings.ToLower(r) || a.Say == "" {
				t.Errorf("%s rejected %s: %+v", o.Tool(), r, a)
			}
		}
		for _, state := range []db.State{db.Running, db.Unknown} {
			a := dashatool.ForAction(db.Action{ID: id, State: state}, p)
			checkPending(t, o.Tool()+" "+string(state), a)
			if a.ActionID != id.String() || !strings.Contains(a.Say, "check_action_status") {
				t.Errorf("%s pending does not point at check_action_status with its action_id: %+v", o.Tool(), a)
			}
		}
		checkPending(t, o.Tool()+" in progress", dashatool.InProgress(id, p))
		checkPending(t, o.Tool()+" in progress without id", dashatool.InProgress(uuid.Nil, p))
	}
	if tools < 3 {
		t.Fatalf("only %d operation tools in the registry", tools)
	}
	checkPending(t, "fallBackResult", dashatool.Fallback())
}

// TestPendingCheckCatchesAConfirmation proves the wording check can fail.
func TestPendingCheckCatchesAConfirmation(t *testing.T) {
	t.Parallel()
	for _, say := range []string{
		"Your appointment is booked.", "The payment has been taken.", "All done!", "It is NOT confirmed, but it went through.",
	} {
		if len(pendingProblems(dashatool.Answer{Outcome: "pending", Say: say})) == 0 {
			t.Errorf("a pending say that claims success passed the wording check: %q", say)
		}
	}
}
