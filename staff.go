package oncecall

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Role is what a member of staff may do in the operator console.
type Role string

// Roles, each allowed what the one before it is.
const (
	// RoleViewer reads the queue, actions, search, tasks and the audit.
	RoleViewer Role = "viewer"
	// RoleResolver also resolves, retries and notes actions, alone or in
	// bulk, and marks follow-up calls done.
	RoleResolver Role = "resolver"
	// RoleAdmin also sees the staff and ends their sessions.
	RoleAdmin Role = "admin"
)

// Roles lists the roles from least to most allowed.
var Roles = []Role{RoleViewer, RoleResolver, RoleAdmin}

// Allows reports whether r may do what need may.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() && need.rank() > 0 }

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleResolver:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Operator is a named member of staff who signs in to the console.
type Operator struct {
	ID    uuid.UUID
	Name  string
	Email string
	Role  Role
	// TenantID limits the person to one tenant's actions; uuid.Nil: every
	// tenant's.
	TenantID    uuid.UUID
	HasPassword bool
	CreatedAt   time.Time
	// DisabledAt is when the person was disabled; zero while they may sign in.
	DisabledAt time.Time
}

// Ways of acting as an operator, as the audit trail names them.
const (
	ViaPassword   = "password"    // a person signed in with their password
	ViaLink       = "link"        // a person signed in with a one-time link
	ViaOIDC       = "oidc"        // a person signed in through the identity provider
	ViaBreakGlass = "break-glass" // the shared operator token, in the console
	ViaAPI        = "api"         // the shared operator token, on /v1/ops
	ViaCommand    = "command"     // oncecall actions on the command line
)

// Actor is who did something an operator does: a signed-in person
// (OperatorID set), or a holder of the shared operator token or of the
// database (the command line), under the name they gave.
type Actor struct {
	OperatorID uuid.UUID
	Name       string
	Via        string
}

// AuditEntry is one line of the audit trail.
type AuditEntry struct {
	ID       int64
	At       time.Time
	Actor    Actor
	TenantID uuid.UUID // uuid.Nil when the entry concerns no one tenant
	ActionID uuid.UUID // uuid.Nil when it concerns no action
	// Kind is what was done: resolved, retried, noted, follow_up_done,
	// signed_in, signed_out, sessions_revoked, operator_added, ...
	Kind string
	// Detail is a JSON object: the outcome, reference and note of a
	// resolution, the note's text, ...
	Detail json.RawMessage
}
