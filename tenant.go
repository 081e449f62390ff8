package oncecall

import (
	"fmt"

	"github.com/google/uuid"
)

// Tenant is an organisation using oncecall. Every record belongs to one.
type Tenant struct {
	ID   uuid.UUID
	Name string
	// DashaOrgID, when set, is the only Dasha orgId accepted for the tenant.
	DashaOrgID string
}

// Scope is what an API key may do.
type Scope string

// API key scopes.
const (
	// ScopeFull may call every /v1 route.
	ScopeFull Scope = "full"
	// ScopeDasha may call only the Dasha webhooks (tools and call events):
	// the key pasted into a voice agent's tool definitions can do no more.
	ScopeDasha Scope = "dasha"
)

// ParseScope checks a scope's name. Empty is an error, not ScopeFull: an
// unset shell variable (--scope "$SCOPE") must not make a full key.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "":
		return "", fmt.Errorf("empty API key scope: want full or dasha (leave --scope out for full)")
	case ScopeFull:
		return ScopeFull, nil
	case ScopeDasha:
		return ScopeDasha, nil
	}
	return "", fmt.Errorf("unknown API key scope %q: want full or dasha", s)
}
