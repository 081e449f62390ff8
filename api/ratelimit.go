package api

import (
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/oncecall/oncecall/internal/fault"
)

// maxLimitedTenants bounds the rate limiter's memory. Past it, buckets that
// have refilled completely are dropped (a full bucket is the same as a new
// one); if none has, all are.
const maxLimitedTenants = 10000

// tenantLimiter is a token bucket per tenant, in this process's memory: with
// N replicas a tenant may reach N times the rate.
type tenantLimiter struct {
	rate  rate.Limit
	burst int
	// refill is how long an unused bucket takes to become full again.
	refill time.Duration

	mu      sync.Mutex
	buckets map[uuid.UUID]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newTenantLimiter(perSecond float64, burst int) *tenantLimiter {
	if burst < 1 {
		burst = max(1, int(perSecond))
	}
	return &tenantLimiter{
		rate: rate.Limit(perSecond), burst: burst,
		refill:  time.Duration(float64(burst) / perSecond * float64(time.Second)),
		buckets: map[uuid.UUID]*bucket{},
	}
}

// take spends one token of tenant's bucket at now. When none is left it
// spends nothing and returns how long until one is.
func (l *tenantLimiter) take(tenant uuid.UUID, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[tenant]
	if b == nil {
		if len(l.buckets) >= maxLimitedTenants {
			l.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[tenant] = b
	}
	b.last = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *tenantLimiter) evict(now time.Time) {
	for id, b := range l.buckets {
		if now.Sub(b.last) >= l.refill {
			delete(l.buckets, id)
		}
	}
	if len(l.buckets) >= maxLimitedTenants {
		clear(l.buckets)
	}
}

// limitRate answers 429 RATE_LIMITED with Retry-After when the tenant has
// used up its bucket. It runs after authentication and before any claim, so
// a refused request stores nothing and leaves its key free.
func (s *Server) limitRate(next http.Handler) http.Handler {
	return s.limit(s.limiter, next, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.New(fault.RateLimited, "too many requests for this tenant; retry after the delay in Retry-After"))
	})
}

// limitDasha is the Dasha webhooks' own budget. It never answers 4xx: Dasha
// does not retry a 4xx and lets the model use the tool's fallback at once.
// Past the budget it answers 503 with Retry-After, which Dasha retries;
// nothing is claimed, so the retry is a first attempt.
func (s *Server) limitDasha(next http.Handler) http.Handler {
	return s.limit(s.dashaLimiter, next, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.New(fault.Unavailable, "too many Dasha calls for this tenant right now; nothing was done, retry after the delay in Retry-After"))
	})
}

// limit spends a token of the tenant's bucket in l, or refuses the request
// with Retry-After set to when the next token is due. A nil l lets
// everything through.
func (s *Server) limit(l *tenantLimiter, next http.Handler, refuse http.HandlerFunc) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := l.take(tenantFrom(r.Context()).ID, time.Now())
		if !ok {
			if s.cfg.Metrics != nil {
				s.cfg.Metrics.RateLimited()
			}
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			refuse(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
