package tokenguard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle slows down guessing the passwords of named accounts: wrong
// attempts are limited per account, per client address and from every
// address together. Unlike Guard it compares nothing itself: the caller
// takes an Attempt, checks the secret, and tells the attempt whether it
// was right (a right one spends nothing).
type Throttle struct {
	cfg      ThrottleConfig
	overall  *rate.Limiter
	addrs    *buckets[string]
	accounts *buckets[string]
}

// ThrottleConfig sets a Throttle's allowances; zero fields take the
// defaults.
type ThrottleConfig struct {
	// PerAccount wrong attempts at one account in a row (default 5), one
	// more every PerAccountEvery (default 1m).
	PerAccount      int
	PerAccountEvery time.Duration
	// PerAddress and PerAddressEvery: the same for one client address
	// (default 10, one more every 6s).
	PerAddress      int
	PerAddressEvery time.Duration
	// Overall and OverallEvery: every address together (default 100, one
	// more a second).
	Overall      int
	OverallEvery time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// NewThrottle returns a Throttle with cfg's allowances.
func NewThrottle(cfg ThrottleConfig) *Throttle {
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = 5
	}
	if cfg.PerAccountEvery <= 0 {
		cfg.PerAccountEvery = time.Minute
	}
	if cfg.PerAddress <= 0 {
		cfg.PerAddress = 10
	}
	if cfg.PerAddressEvery <= 0 {
		cfg.PerAddressEvery = 6 * time.Second
	}
	if cfg.Overall <= 0 {
		cfg.Overall = 100
	}
	if cfg.OverallEvery <= 0 {
		cfg.OverallEvery = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Throttle{
		cfg:      cfg,
		overall:  rate.NewLimiter(rate.Every(cfg.OverallEvery), cfg.Overall),
		addrs:    newBuckets[string](cfg.PerAddress, cfg.PerAddressEvery),
		accounts: newBuckets[string](cfg.PerAccount, cfg.PerAccountEvery),
	}
}

// Attempt is one sign-in attempt under way.
type Attempt struct {
	now time.Time
	res []*rate.Reservation
}

// Right gives back what the attempt took: a right secret spends nothing.
func (a Attempt) Right() {
	for _, r := range a.res {
		r.CancelAt(a.now)
	}
}

// Try starts an attempt at account from remoteAddr (an http.Request's
// RemoteAddr). When the account, the address or every address together has
// no wrong attempt left, wait is how long until the next one may be made,
// and the secret must not be checked.
func (t *Throttle) Try(remoteAddr, account string) (a Attempt, wait time.Duration) {
	now := t.cfg.Now()
	a = Attempt{now: now, res: []*rate.Reservation{
		t.addrs.reserve(clientOf(remoteAddr).String(), now),
		t.accounts.reserve(account, now),
		t.overall.ReserveN(now, 1),
	}}
	for _, r := range a.res {
		wait = max(wait, r.DelayFrom(now))
	}
	if wait > 0 {
		a.Right() // refused attempts are not counted
		return Attempt{}, wait
	}
	return a, 0
}

// buckets are token buckets by key, bounded in number like Guard's.
type buckets[K comparable] struct {
	n     int
	every time.Duration

	mu sync.Mutex
	m  map[K]*bucket
}

func newBuckets[K comparable](n int, every time.Duration) *buckets[K] {
	return &buckets[K]{n: n, every: every, m: map[K]*bucket{}}
}

func (b *buckets[K]) reserve(key K, now time.Time) *rate.Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.m[key]
	if bk == nil {
		if len(b.m) >= maxAddresses {
			refill := time.Duration(b.n) * b.every
			for k, v := range b.m {
				if now.Sub(v.last) >= refill {
					delete(b.m, k)
				}
			}
			if len(b.m) >= maxAddresses {
				clear(b.m)
			}
		}
		bk = &bucket{lim: rate.NewLimiter(rate.Every(b.every), b.n)}
		b.m[key] = bk
	}
	bk.last = now
	return bk.lim.ReserveN(now, 1)
}
