// Package tokenguard slows down guessing secrets. Guard checks a shared
// secret (the operator token of /v1/ops and the console's break-glass
// sign-in); Throttle slows the console's password sign-ins per account,
// per client address and overall. For a Guard, wrong attempts
// are limited per client address and from every address together, with
// token buckets (golang.org/x/time/rate). An address past its allowance,
// or any address while the overall one is used up, is answered "wait"
// without its secret being compared, so guessing goes no faster than the
// buckets refill. A right secret spends nothing: the operator's own
// requests never use up an allowance.
package tokenguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config sets the allowances. Zero fields take the defaults.
type Config struct {
	// PerAddress is how many wrong attempts one client address may make
	// in a row (default 10); it gets one more every PerAddressEvery
	// (default 6s: ten a minute).
	PerAddress      int
	PerAddressEvery time.Duration
	// Overall is the same for every address together (default 100, one
	// more a second), so that many addresses guess no faster either.
	Overall      int
	OverallEvery time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Guard checks attempts at one secret.
type Guard struct {
	secret  [sha256.Size]byte // its hash: compared, it tells nothing of the length
	cfg     Config
	overall *rate.Limiter

	mu    sync.Mutex
	addrs map[netip.Addr]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// maxAddresses bounds the memory of the per-address buckets. Past it,
// buckets that have refilled completely are dropped (a full bucket is a
// new one); if none has, all are, and the overall bucket still holds.
const maxAddresses = 10000

// New returns a guard of secret.
func New(secret string, cfg Config) *Guard {
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
	return &Guard{
		secret: sha256.Sum256([]byte(secret)), cfg: cfg,
		overall: rate.NewLimiter(rate.Every(cfg.OverallEvery), cfg.Overall),
		addrs:   map[netip.Addr]*bucket{},
	}
}

// Check reports whether secret is the guarded one (their hashes compared
// in constant time), for an attempt from remoteAddr (an http.Request's RemoteAddr).
// When the attempt's address, or every address together, has no wrong
// attempt left, the secret is not compared: wait is how long until the
// next attempt may be made.
func (g *Guard) Check(remoteAddr, secret string) (right bool, wait time.Duration) {
	now := g.cfg.Now()
	mine := g.reserve(clientOf(remoteAddr), now)
	all := g.overall.ReserveN(now, 1)
	if d := max(mine.DelayFrom(now), all.DelayFrom(now)); d > 0 {
		mine.CancelAt(now)
		all.CancelAt(now)
		return false, d
	}
	if h := sha256.Sum256([]byte(secret)); subtle.ConstantTimeCompare(h[:], g.secret[:]) == 1 {
		mine.CancelAt(now)
		all.CancelAt(now)
		return true, 0
	}
	return false, 0
}

// reserve takes one attempt from addr's bucket.
func (g *Guard) reserve(addr netip.Addr, now time.Time) *rate.Reservation {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.addrs[addr]
	if b == nil {
		if len(g.addrs) >= maxAddresses {
			g.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Every(g.cfg.PerAddressEvery), g.cfg.PerAddress)}
		g.addrs[addr] = b
	}
	b.last = now
	return b.lim.ReserveN(now, 1)
}

func (g *Guard) evict(now time.Time) {
	refill := time.Duration(g.cfg.PerAddress) * g.cfg.PerAddressEvery
	for a, b := range g.addrs {
		if now.Sub(b.last) >= refill {
			delete(g.addrs, a)
		}
	}
	if len(g.addrs) >= maxAddresses {
		clear(g.addrs)
	}
}

// clientOf is the address an attempt is counted against: the IPv4 address,
// or the /64 network of an IPv6 one (one subscriber's, whose addresses it
// may pick freely). What does not parse counts as one unknown address.
func clientOf(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
