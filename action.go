package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// State is where an action is.
type State string

// States of an action.
const (
	// Running: a worker holds the action's lease and is performing it.
	Running State = "running"
	// Completed: the action's outcome is known and recorded.
	Completed State = "completed"
	// Unknown: a required remote step may or may not have happened; only
	// evidence (a provider lookup, an operator) decides.
	Unknown State = "unknown"
)

// Outcome is what a caller hears about an action.
type Outcome string

// Outcomes.
const (
	Confirmed Outcome = "confirmed"
	Rejected  Outcome = "rejected"
	Pending   Outcome = "pending"
)

// Action is the retained record of one confirmed intent: the idempotency
// key it was claimed under, where it is, and the answer it gave, which a
// retry of the same key is answered with.
type Action struct {
	ID            uuid.UUID
	TenantID      uuid.UUID
	Key           string
	Operation     string
	Fingerprint   string
	State         State
	NeedsOperator bool
	// Outcome is empty while the action is running or unknown.
	Outcome    Outcome
	Reason     string
	Status     int
	ResourceID string
	// Result is the replayable body; nil once pruned or when too large.
	Result     []byte
	LeaseUntil *time.Time
	CreatedAt  time.Time
	// CompletedAt is when the outcome was recorded, by the database's
	// clock; zero while the action is running or unknown.
	CompletedAt time.Time
	// Request is the normalised input the action was claimed with.
	Request []byte
	// CallPlatform and CallID are the voice call whose tool call claimed
	// the action: the platform ("dasha", "vapi", "retell", "elevenlabs")
	// and the platform's id of the call, two fields, so that equal ids of
	// two platforms are two calls. Both empty for REST requests.
	CallPlatform string
	CallID       string
	// TraceContext is the trace context of the request that claimed a
	// remote action when that request was traced: its W3C trace id, span
	// id and flags (25 bytes). nil otherwise.
	TraceContext []byte
}
