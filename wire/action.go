package wire

import (
	"encoding/json"

	"github.com/oncecall/oncecall"
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

// StatusURL is where an action's status is read.
func StatusURL(id string) string { return "/v1/actions/" + id }

// OutcomeOf is what a caller may be told: anything not completed is pending.
func OutcomeOf(a oncecall.Action) string {
	if a.State == oncecall.Completed {
		return string(a.Outcome)
	}
	return string(oncecall.Pending)
}

// ResultOf is the stored body, or the compact reference once the body is gone.
func ResultOf(a oncecall.Action) json.RawMessage {
	switch {
	case a.Result != nil:
		return a.Result
	case a.ResourceID != "":
		ref, _ := json.Marshal(map[string]string{"id": a.ResourceID})
		return ref
	}
	return json.RawMessage("null")
}

// FromAction is the envelope of an action.
func FromAction(a oncecall.Action) Envelope {
	e := Envelope{
		ActionID: a.ID.String(), Operation: a.Operation, Outcome: OutcomeOf(a), State: string(a.State),
		Result: ResultOf(a), StatusURL: StatusURL(a.ID.String()),
	}
	if a.Reason != "" {
		e.Reason = &a.Reason
	}
	return e
}

// OperatorAction is an action as operators see it: GET /v1/ops/actions lists
// these, GET /v1/ops/actions/{id} answers one with its steps and timeline,
// and the operator console shows the same.
type OperatorAction struct {
	Envelope
	TenantID      string  `json:"tenant_id"`
	NeedsOperator bool    `json:"needs_operator"`
	CreatedAt     string  `json:"created_at"`
	Steps         []Step  `json:"steps,omitempty"`
	Events        []Event `json:"events,omitempty"`
}

// FromOperatorAction is an action as operators see it, without its steps
// and timeline.
func FromOperatorAction(a oncecall.Action) OperatorAction {
	return OperatorAction{
		Envelope: FromAction(a), TenantID: a.TenantID.String(), NeedsOperator: a.NeedsOperator,
		CreatedAt: a.CreatedAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00"),
	}
}

// FromActionDetail is an action with its steps and timeline.
func FromActionDetail(d oncecall.ActionDetail) OperatorAction {
	a := FromOperatorAction(d.Action)
	a.Steps, a.Events = FromSteps(d.Steps), FromEvents(d.Events)
	return a
}
