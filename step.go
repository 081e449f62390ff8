package oncecall

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Step states.
const (
	StepPending   = "pending"   // certainly not performed yet: safe to send
	StepUnknown   = "unknown"   // may have been performed: only evidence decides
	StepSucceeded = "succeeded" // the provider holds the write
	StepRejected  = "rejected"  // the provider refused it for good
)

// Step is one remote write of an action (a calendar booking, a charge, a
// message) and what is known about it.
type Step struct {
	ActionID    uuid.UUID
	Name        string
	Seq         int
	Capability  string
	Required    bool
	Operation   string
	ProviderKey string
	ExternalRef string
	Payload     []byte

	// ProviderKind and ProviderAccount name the provider the step is
	// planned for (provider.Identity): only a server configured for it
	// drives the step. Empty for steps claimed before steps named it.
	ProviderKind    string
	ProviderAccount string

	State       string
	ProviderRef string
	RejectCode  string
	Attempts    int
	Checks      int
	LastError   string
	LastSentAt  *time.Time
	NextCheckAt time.Time
	UpdatedAt   time.Time
	// Result is what the provider gave back for the succeeded write that a
	// later step of the action uses (a Checkout Session's URL): see
	// docs/providers.md. Nil for writes that give nothing back.
	Result map[string]string
	// Version counts the step's changes: a driver acts on a step only at
	// the version it read.
	Version int
	// ActionCreatedAt is when the action was claimed and DBNow the
	// database's clock when the step was read: a driver's time decisions
	// use these, never its own clock.
	ActionCreatedAt time.Time
	DBNow           time.Time
}

// Due reports whether the step is due for an attempt or a check.
func (s Step) Due() bool { return !s.NextCheckAt.After(s.DBNow) }

// Event is one entry of an action's timeline.
type Event struct {
	At   time.Time
	Kind string
	// Step is the step the event concerns; empty for the action's own.
	Step string
	// Detail is a JSON object of ids, states and provider references;
	// never customer data.
	Detail json.RawMessage
}
