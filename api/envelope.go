package api

import (
	"encoding/json"
	"net/http"

	"github.com/oncecall/oncecall/db"
)

// Envelope is the answer to every write and to GET /v1/actions/{id}.
type Envelope struct {
	ActionID  string          `json:"action_id"`
	Operation string          `json:"operation"`
	Outcome   string          `json:"outcome"`
	State     string          `json:"state"`
	Result    json.RawMessage `json:"result"`
	Reason    *string         `json:"reason"`
	StatusURL string          `json:"status_url"`
}

func statusURL(id string) string { return "/v1/actions/" + id }

// outcomeOf is what a caller may be told: anything not completed is pending.
func outcomeOf(a db.Action) string {
	if a.State == db.Completed {
		return string(a.Outcome)
	}
	return string(db.Pending)
}

// result is the stored body, or the compact reference once the body is gone.
func result(a db.Action) json.RawMessage {
	switch {
	case a.Result != nil:
		return a.Result
	case a.ResourceID != "":
		ref, _ := json.Marshal(map[string]string{"id": a.ResourceID})
		return ref
	}
	return json.RawMessage("null")
}

func envelope(a db.Action) Envelope {
	e := Envelope{
		ActionID: a.ID.String(), Operation: a.Operation, Outcome: outcomeOf(a), State: string(a.State),
		Result: result(a), StatusURL: statusURL(a.ID.String()),
	}
	if a.Reason != "" {
		e.Reason = &a.Reason
	}
	return e
}

// writeAction answers with an action as the REST contract says: the stored
// status and envelope when confirmed, 422 problem+json when rejected, 202
// pending otherwise. The answer is a function of the stored action only, so a
// replay is byte-identical to the first answer.
func writeAction(w http.ResponseWriter, a db.Action, replayed bool) {
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", statusURL(a.ID.String()))
	switch {
	case a.State != db.Completed:
		writeJSON(w, http.StatusAccepted, envelope(a))
	case a.Outcome == db.Rejected:
		writeProblem(w, Problem{
			Status: http.StatusUnprocessableEntity, Code: a.Reason, Detail: "the action was rejected: " + a.Reason,
			ActionID: a.ID.String(), Outcome: string(a.Outcome), State: string(a.State),
			StatusURL: statusURL(a.ID.String()), Details: a.Result,
		})
	default:
		status := a.Status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, envelope(a))
	}
}
