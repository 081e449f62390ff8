package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
)

// Cluster is one PostgreSQL cluster as the cluster router sees it: its
// name ("" for the home cluster), the store its tenants' API keys are
// looked up in, and the full router (NewRouter) over that store.
type Cluster struct {
	Name    string
	Store   *db.Store
	Handler http.Handler
}

// ClustersConfig configures NewClusterRouter.
type ClustersConfig struct {
	// Clusters are every cluster, the home cluster first.
	Clusters []Cluster
	// Directory reads where tenants live (db.Store.Directory of the home
	// cluster).
	Directory func(ctx context.Context) (map[uuid.UUID]db.Placement, error)
	// DirectoryTTL is how long a read of the directory is used. Default
	// DirectoryTTL; `oncecall tenant move` waits for it.
	DirectoryTTL time.Duration
	// KeyCacheTTL is how long an API key's tenant is remembered. Default 30s.
	KeyCacheTTL time.Duration
	Log         zerolog.Logger
}

// DirectoryTTL is how long a server uses what it read of the directory of
// tenants: a move waits this long (and a margin) after it pauses a tenant.
const DirectoryTTL = time.Second

// NewClusterRouter is the handler of a server over several clusters
// (docs/scaling.md#tenants-across-clusters): a request with an API key
// goes to the router of the cluster its key's tenant lives on; a tenant
// being moved is answered 503 with Retry-After, nothing done; a request
// without a key, with a key no cluster knows, or for a route that is no
// tenant's (the console, /v1/ops, providers' callbacks) goes to the home
// cluster's router.
func NewClusterRouter(cfg ClustersConfig) http.Handler {
	if cfg.DirectoryTTL <= 0 {
		cfg.DirectoryTTL = DirectoryTTL
	}
	if cfg.KeyCacheTTL <= 0 {
		cfg.KeyCacheTTL = 30 * time.Second
	}
	c := &clusterRouter{cfg: cfg, byName: map[string]http.Handler{}, keys: map[[32]byte]cachedOwner{}}
	for _, cl := range cfg.Clusters {
		c.byName[cl.Name] = cl.Handler
	}
	return c
}

type clusterRouter struct {
	cfg    ClustersConfig
	byName map[string]http.Handler

	keysMu sync.Mutex
	keys   map[[32]byte]cachedOwner

	dirMu     sync.Mutex
	dir       map[uuid.UUID]placement
	dirLoaded time.Time
}

type cachedOwner struct {
	tenant  uuid.UUID
	expires time.Time
}

type placement struct {
	cluster     string
	pausedUntil time.Time
}

func (c *clusterRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	home := c.cfg.Clusters[0].Handler
	key := requestKey(r)
	if key == "" {
		home.ServeHTTP(w, r)
		return
	}
	tenant, err := c.owner(r.Context(), key)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	if tenant == uuid.Nil {
		home.ServeHTTP(w, r) // it answers 401
		return
	}
	p, err := c.placement(r.Context(), tenant)
	if err != nil {
		writeError(w, r, db.Fault(err))
		return
	}
	if wait := time.Until(p.pausedUntil); wait > 0 {
		// The move takes a second or two; the pause's deadline is only
		// its bound, so the caller is asked back soon.
		w.Header().Set("Retry-After", retryAfterSeconds(min(wait, time.Second)))
		writeError(w, r, fault.New(fault.Unavailable, "this tenant's data is moving to another database cluster; nothing was done, "+
			"retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)"))
		return
	}
	h, ok := c.byName[p.cluster]
	if !ok {
		c.cfg.Log.Error().Str("tenant", tenant.String()).Str("cluster", p.cluster).
			Msg("the directory places the tenant on a cluster this server is not configured with (--clusters)")
		writeError(w, r, fault.New(fault.Unavailable, "this tenant's database cluster is not reachable from this server"))
		return
	}
	h.ServeHTTP(w, r)
}

// requestKey is the API key of a request for a tenant's route, found where
// the routers look for it (auth.go, keyFromHeader): Authorization: Bearer,
// or the voice platforms' secret headers; "" for any other route.
func requestKey(r *http.Request) string {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v1/ops/") || strings.HasPrefix(p, "/v1/providers/") ||
		strings.HasPrefix(p, "/v1/calendar-notifications/") {
		return ""
	}
	if scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if key = strings.TrimSpace(key); key != "" && len(key) <= 200 {
			return key
		}
		return ""
	}
	switch {
	case strings.HasPrefix(p, "/v1/vapi/"):
		return r.Header.Get("X-Vapi-Secret")
	case strings.HasPrefix(p, "/v1/elevenlabs/"):
		return r.Header.Get("X-Oncecall-Key")
	}
	return ""
}

// owner is the tenant whose API key key is, looked up in each cluster and
// remembered for KeyCacheTTL; uuid.Nil when no cluster knows the key. A
// tenant's id stays the same when it moves, so what is remembered stays
// true; a revoked key is refused by the cluster's own router.
func (c *clusterRouter) owner(ctx context.Context, key string) (uuid.UUID, error) {
	h := sha256.Sum256([]byte(key))
	now := time.Now()
	c.keysMu.Lock()
	e, ok := c.keys[h]
	c.keysMu.Unlock()
	if ok && now.Before(e.expires) {
		return e.tenant, nil
	}
	var errs []error
	for _, cl := range c.cfg.Clusters {
		t, _, err := cl.Store.APIKeyOwner(ctx, key)
		if errors.Is(err, db.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.keysMu.Lock()
		if len(c.keys) >= maxCachedKeys {
			clear(c.keys)
		}
		c.keys[h] = cachedOwner{tenant: t.ID, expires: now.Add(c.cfg.KeyCacheTTL)}
		c.keysMu.Unlock()
		return t.ID, nil
	}
	// A cluster that did not answer may hold the key.
	return uuid.Nil, errors.Join(errs...)
}

// placement is where the tenant lives, from a read of the directory at
// most DirectoryTTL old.
func (c *clusterRouter) placement(ctx context.Context, tenant uuid.UUID) (placement, error) {
	c.dirMu.Lock()
	defer c.dirMu.Unlock()
	if c.dir == nil || time.Since(c.dirLoaded) >= c.cfg.DirectoryTTL {
		// The read is as old as its start: a pause written while it runs
		// is seen by the next one, within the TTL.
		start := time.Now()
		d, err := c.cfg.Directory(ctx)
		if err != nil {
			return placement{}, err
		}
		c.dir = make(map[uuid.UUID]placement, len(d))
		for id, p := range d {
			pp := placement{cluster: p.Cluster}
			if p.Paused > 0 {
				pp.pausedUntil = start.Add(p.Paused)
			}
			c.dir[id] = pp
		}
		c.dirLoaded = start
	}
	return c.dir[tenant], nil
}
