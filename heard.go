package oncecall

import (
	"time"

	"github.com/google/uuid"
)

// Heard is one answer a caller was given about an action on a voice call:
// what the agent was told to say, and when. The answers of an action, in
// order, are what its callers heard of it, whatever is true now.
type Heard struct {
	ActionID uuid.UUID
	At       time.Time
	// Platform is the voice platform (dasha, vapi, retell, elevenlabs),
	// CallID its id of the call, Tool the tool called.
	Platform, CallID, Tool string
	// Outcome is confirmed, rejected or pending; Reason the rejection's
	// or the pending answer's code; Current what changed since a
	// confirmation ("moved", "cancelled"), as the answer said.
	Outcome, Reason, Current string
	Say                      string
}
