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

// Scope is what an API key may do: call every /v1 route (full), or only the
// webhooks of the voice platforms (voice), or of one of them (dasha, vapi,
// retell, elevenlabs; a scope named after a platform is that platform's
// name). The key pasted into a voice agent's configuration travels with
// the platform: a narrow scope keeps a leaked copy from doing more.
type Scope string

// API key scopes.
const (
	// ScopeFull may call every /v1 route.
	ScopeFull Scope = "full"
	// ScopeVoice may call every voice platform's webhooks and nothing else.
	ScopeVoice Scope = "voice"
	// ScopeDasha may call only the Dasha webhooks (tools and call events).
	ScopeDasha Scope = "dasha"
	// ScopeVapi may call only the Vapi webhook.
	ScopeVapi Scope = "vapi"
	// ScopeRetell may call only the Retell function routes: with a
	// tenant's Retell key, every call it makes is signed by Retell.
	ScopeRetell Scope = "retell"
	// ScopeElevenLabs may call only the ElevenLabs tool routes.
	ScopeElevenLabs Scope = "elevenlabs"
)

// scopeNames names every scope, for errors.
const scopeNames = "full, voice, dasha, vapi, retell or elevenlabs"

// ParseScope checks a scope's name. Empty is an error, not ScopeFull: an
// unset shell variable (--scope "$SCOPE") must not make a full key.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case "":
		return "", fmt.Errorf("empty API key scope: want %s (leave --scope out for full)", scopeNames)
	case ScopeFull, ScopeVoice, ScopeDasha, ScopeVapi, ScopeRetell, ScopeElevenLabs:
		return sc, nil
	}
	return "", fmt.Errorf("unknown API key scope %q: want %s", s, scopeNames)
}

// Opens reports whether a key of this scope may call the webhooks of the
// voice platform named platform ("dasha", "vapi", "retell", "elevenlabs").
func (s Scope) Opens(platform string) bool {
	return s == ScopeFull || s == ScopeVoice || string(s) == platform
}
