package api_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// A retry that names its action (action_id) races the request that retires
// that action's key (the same booking without action_id, after the
// appointment was cancelled, which books anew under the key): the retry is
// answered for the action it names, every round, with what became of it
// (current: cancelled), and books nothing itself.
func TestRetryByActionIDRacingARetireAnswersForThatAction(t *testing.T) {
	t.Parallel()
	d := setupDasha(t)
	const rounds = 20
	for round := range rounds {
		slot := d.Slot(d.tenant, round+2)
		first := decodeAnswer(t, d.call("book_appointment", fmt.Sprintf("call-%d-a", round), d.bookArgs(slot)))
		if first.Outcome != "confirmed" {
			t.Fatalf("round %d: booking: %+v", round, first)
		}
		if a := decodeAnswer(t, d.call("cancel_appointment", fmt.Sprintf("call-%d-a", round), map[string]any{"appointment_id": detailID(t, first)})); a.Outcome != "confirmed" {
			t.Fatalf("round %d: cancel: %+v", round, a)
		}
		retryArgs := d.bookArgs(slot)
		retryArgs["action_id"] = first.ActionID
		var retry, rebook []byte
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			retry = d.call("book_appointment", fmt.Sprintf("call-%d-a", round), retryArgs).Body
		})
		wg.Go(func() {
			<-start
			rebook = d.call("book_appointment", fmt.Sprintf("call-%d-b", round), d.bookArgs(slot)).Body
		})
		close(start)
		wg.Wait()

		var got struct {
			answer
			Current string `json:"current"`
		}
		if err := json.Unmarshal(retry, &got); err != nil {
			t.Fatalf("round %d: retry answer: %v: %s", round, err, retry)
		}
		if got.ActionID != first.ActionID || got.Current != "cancelled" {
			t.Errorf("round %d: retry naming action %s answered %s", round, first.ActionID, retry)
		}
		var again answer
		if err := json.Unmarshal(rebook, &again); err != nil || again.Outcome != "confirmed" || again.ActionID == first.ActionID {
			t.Errorf("round %d: booking again after the cancellation: %s", round, rebook)
		}
		if n := d.Count("SELECT count(*) FROM appointments WHERE slot_id = $1", slot); n != 2 {
			t.Errorf("round %d: %d appointments in the slot, want 2 (the cancelled one and the new booking)", round, n)
		}
	}
}
