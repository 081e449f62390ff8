package wire

import (
	"encoding/json"
	"time"

	"github.com/oncecall/oncecall"
)

// Step is one remote write of an action as operators see it (openapi.yaml:
// Step): no payload, and none of the driver's bookkeeping.
type Step struct {
	Name        string     `json:"name"`
	Seq         int        `json:"seq"`
	Capability  string     `json:"capability"`
	Required    bool       `json:"required"`
	Operation   string     `json:"operation"`
	ProviderKey string     `json:"provider_key"`
	ExternalRef string     `json:"external_ref"`
	State       string     `json:"state"`
	ProviderRef string     `json:"provider_ref,omitempty"`
	RejectCode  string     `json:"reject_code,omitempty"`
	Attempts    int        `json:"attempts"`
	Checks      int        `json:"checks"`
	LastError   string     `json:"last_error,omitempty"`
	LastSentAt  *time.Time `json:"last_sent_at,omitempty"`
	NextCheckAt time.Time  `json:"next_check_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// FromStep is the wire shape of a step.
func FromStep(s oncecall.Step) Step {
	return Step{
		Name: s.Name, Seq: s.Seq, Capability: s.Capability, Required: s.Required, Operation: s.Operation,
		ProviderKey: s.ProviderKey, ExternalRef: s.ExternalRef, State: s.State, ProviderRef: s.ProviderRef,
		RejectCode: s.RejectCode, Attempts: s.Attempts, Checks: s.Checks, LastError: s.LastError,
		LastSentAt: s.LastSentAt, NextCheckAt: s.NextCheckAt, UpdatedAt: s.UpdatedAt,
	}
}

// FromSteps is FromStep of each step.
func FromSteps(s []oncecall.Step) []Step { return list(s, FromStep) }

// Event is one entry of an action's timeline (openapi.yaml: Event).
type Event struct {
	At     time.Time       `json:"at"`
	Kind   string          `json:"kind"`
	Step   string          `json:"step,omitempty"`
	Detail json.RawMessage `json:"detail"`
}

// FromEvent is the wire shape of a timeline entry.
func FromEvent(e oncecall.Event) Event {
	return Event{At: e.At, Kind: e.Kind, Step: e.Step, Detail: e.Detail}
}

// FromEvents is FromEvent of each entry.
func FromEvents(e []oncecall.Event) []Event { return list(e, FromEvent) }
