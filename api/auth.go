package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

var keyOwnerKey = &ctxKey{"key owner"}

// keyOwner is who the request's API key belongs to, and its scope.
type keyOwner struct {
	tenant oncecall.Tenant
	scope  oncecall.Scope
}

func ownerFrom(ctx context.Context) keyOwner {
	if o, ok := ctx.Value(keyOwnerKey).(*keyOwner); ok {
		return *o
	}
	return keyOwner{}
}

func tenantFrom(ctx context.Context) oncecall.Tenant { return ownerFrom(ctx).tenant }

// scopeFrom is the scope of the request's API key.
func scopeFrom(ctx context.Context) oncecall.Scope { return ownerFrom(ctx).scope }

// keyCache remembers which tenant an API key belongs to for a short time, so
// that authenticating a request costs no database round trip on the hot path.
// A revoked key stops working within the TTL.
type keyCache struct {
	store *db.Store
	ttl   time.Duration
	mu    sync.Mutex
	m     map[[32]byte]cachedTenant
}

type cachedTenant struct {
	tenant  oncecall.Tenant
	scope   oncecall.Scope
	expires time.Time
}

// maxCachedKeys bounds the cache; past it the cache is emptied (keys are few
// per tenant, so this only happens under a flood of distinct valid keys).
const maxCachedKeys = 10000

func newKeyCache(store *db.Store, ttl time.Duration) *keyCache {
	return &keyCache{store: store, ttl: ttl, m: map[[32]byte]cachedTenant{}}
}

func (c *keyCache) lookup(ctx context.Context, key string) (oncecall.Tenant, oncecall.Scope, error) {
	h := sha256.Sum256([]byte(key))
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[h]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.tenant, e.scope, nil
	}
	t, scope, err := c.store.APIKeyOwner(ctx, key)
	if err != nil {
		return oncecall.Tenant{}, "", err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedKeys {
		clear(c.m)
	}
	c.m[h] = cachedTenant{tenant: t, scope: scope, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return t, scope, nil
}

// authenticate requires a valid Bearer API key and puts its tenant in the
// request context. Replays are authenticated like first attempts.
func (c *keyCache) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" || len(key) > 200 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall"`)
			writeError(w, r, fault.New(fault.Unauthorized, "a valid API key is required: Authorization: Bearer <key>"))
			return
		}
		t, scope, err := c.lookup(r.Context(), strings.TrimSpace(key))
		if errors.Is(err, db.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall", error="invalid_token"`)
			writeError(w, r, fault.New(fault.Unauthorized, "the API key is not valid"))
			return
		}
		if err != nil {
			writeError(w, r, db.Fault(err))
			return
		}
		infoFrom(r.Context()).tenant = t.ID.String()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyOwnerKey, &keyOwner{tenant: t, scope: scope})))
	})
}

// fullScopeOnly refuses keys of a narrower scope (a voice platform's key,
// which only that platform's webhooks take) with 403 before anything is
// read or done.
func fullScopeOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scope := scopeFrom(r.Context()); scope != oncecall.ScopeFull {
			writeError(w, r, scopeRefused(scope))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// platformOnly refuses, with 403 before anything is read or done, a key
// whose scope does not open the webhooks of the voice platform named
// platform: a key limited to another platform (a retell key, which a
// tenant requiring Retell's signature gives Retell alone, cannot be used
// unsigned on the other platforms' routes).
func platformOnly(platform string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if scope := scopeFrom(r.Context()); !scope.Opens(platform) {
				writeError(w, r, scopeRefused(scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// scopeRefused is the 403 of a key whose scope does not open a route: it
// names the scope and the routes the key does open.
func scopeRefused(scope oncecall.Scope) error {
	var routes string
	switch scope {
	case oncecall.ScopeDasha:
		routes = "the Dasha webhooks (/v1/dasha/...)"
	case oncecall.ScopeVapi:
		routes = "the Vapi webhook (/v1/vapi/...)"
	case oncecall.ScopeRetell:
		routes = "the Retell functions (/v1/retell/...)"
	case oncecall.ScopeElevenLabs:
		routes = "the ElevenLabs tools (/v1/elevenlabs/...)"
	default: // voice
		routes = "the voice platforms' webhooks (/v1/dasha/..., /v1/vapi/..., /v1/retell/..., /v1/elevenlabs/...)"
	}
	return fault.New(fault.Forbidden, "this API key has scope %s: it may call only %s", scope, routes)
}
