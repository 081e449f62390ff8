package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/semaphore"

	"github.com/oncecall/oncecall/internal/fault"
)

// tenantGate keeps one tenant from taking every connection of the pool: at
// most limit requests of a tenant run at once, a request waits a bounded
// time for its turn, and past that it is refused before it touches the
// database. Like the rate limiter it lives in this process's memory, so it
// shares out this replica's pool.
type tenantGate struct {
	limit int64
	wait  time.Duration

	mu      sync.Mutex
	tenants map[uuid.UUID]*turns
}

// turns are one tenant's places in the gate.
type turns struct {
	sem *semaphore.Weighted
	// users counts the requests holding or waiting for a place; the entry
	// is dropped when none are left, so idle tenants cost no memory.
	users int
}

func newTenantGate(limit int, wait time.Duration) *tenantGate {
	return &tenantGate{limit: int64(limit), wait: wait, tenants: map[uuid.UUID]*turns{}}
}

// enter waits up to the gate's wait (or until ctx ends) for one of tenant's
// places and returns the function that gives it back.
func (g *tenantGate) enter(ctx context.Context, tenant uuid.UUID) (leave func(), err error) {
	g.mu.Lock()
	t := g.tenants[tenant]
	if t == nil {
		t = &turns{sem: semaphore.NewWeighted(g.limit)}
		g.tenants[tenant] = t
	}
	t.users++
	g.mu.Unlock()

	// A free place with nobody waiting for one is taken without a timer.
	if ctx.Err() != nil || !t.sem.TryAcquire(1) {
		wctx, cancel := context.WithTimeout(ctx, g.wait)
		err = t.sem.Acquire(wctx, 1)
		cancel()
		if err != nil {
			g.done(tenant, t)
			return nil, err
		}
	}
	return func() {
		t.sem.Release(1)
		g.done(tenant, t)
	}, nil
}

func (g *tenantGate) done(tenant uuid.UUID, t *turns) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.users--; t.users == 0 {
		delete(g.tenants, tenant)
	}
}

// shareDB admits a tenant's request when the tenant has a free place in the
// gate. A request that waited too long gets 503 SERVICE_UNAVAILABLE with
// Retry-After on every route, Dasha's included: nothing was claimed, so the
// retry is safe, and a 4xx would make a voice agent give up.
func (s *Server) shareDB(next http.Handler) http.Handler {
	if s.gate == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leave, err := s.gate.enter(r.Context(), tenantFrom(r.Context()).ID)
		if err != nil {
			if errors.Is(r.Context().Err(), context.Canceled) {
				return // the client went away
			}
			writeError(w, r, fault.New(fault.Unavailable,
				"too many requests of this tenant are using the database at once; nothing was stored for this one. "+
					"Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)"))
			return
		}
		defer leave()
		next.ServeHTTP(w, r)
	})
}
