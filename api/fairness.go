package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall/internal/fault"
)

// tenantGate keeps one tenant from taking every connection of the pool: at
// most limit requests of a tenant run at once, a request waits a bounded
// time for its turn, and past that it is refused before it touches the
// database. Like the rate limiter it lives in this process's memory, so it
// shares out this replica's pool.
//
// Places are given out first come, first served: a place given back goes to
// the tenant's oldest waiter. Every waiter waits the same time, so the
// oldest's deadline is the first to pass, and one timer per tenant, set for
// it, refuses whoever waited too long: a request that waits sets no timer of
// its own (at full load every request waits, and a timer each cost a busy
// server more than the rest of the gate).
type tenantGate struct {
	limit int
	wait  time.Duration
	// queue, when not zero, is how many requests of a tenant may wait: one
	// more is refused at once (the server's gate, newServerGate), so that
	// under overload a refusal costs the client a round trip, not the
	// whole wait.
	queue int

	mu      sync.Mutex
	tenants map[uuid.UUID]*turns
}

// turns are one tenant's places in the gate. All fields are guarded by the
// gate's mu. The entry is dropped when no place is held and nobody waits,
// so idle tenants cost no memory (a waiter exists only while every place
// is held, as a place given back goes to a waiter first).
type turns struct {
	held  int         // places taken
	queue []*waiter   // requests waiting for a place, oldest first
	timer *time.Timer // refuses the waiters whose deadline passed
}

// next takes the oldest waiter off the queue and returns the channel its
// turn is told on. The gate's mu is held.
func (t *turns) next() chan<- bool {
	w := t.queue[0]
	t.queue[0] = nil
	t.queue = t.queue[1:]
	return w.turn
}

// waiter is a request waiting for a place until deadline. Its turn is
// decided once, under the gate's lock: true when it was given a place,
// false when its wait ran out.
type waiter struct {
	deadline time.Time
	turn     chan bool
}

func newTenantGate(limit int, wait time.Duration) *tenantGate {
	return &tenantGate{limit: limit, wait: wait, tenants: map[uuid.UUID]*turns{}}
}

// newServerGate is the server's admission control: at most limit requests,
// all tenants together, use the database at once (the pool's size, so none
// queues for a connection inside the pool, where nothing bounds the wait),
// a request waits up to wait for a place, and at most serverQueue waiters
// a place wait: one more is refused at once. Its places are one
// "tenant"'s, serverPlaces.
func newServerGate(limit int, wait time.Duration) *tenantGate {
	g := newTenantGate(limit, wait)
	g.queue = serverQueue * limit
	return g
}

// serverQueue is how many requests may wait for each of the server's
// places: past capacity it, more than the wait, bounds how long an
// admitted request waits (eight turns of a place: tens of milliseconds
// when a place is held a few, as by a first execution's statement), and a
// refusal costs the client a round trip. A closed loop of clients up to
// nine times the places never meets it (the benchmark's 32 clients for 6
// places).
const serverQueue = 8

// serverPlaces is the key of the server gate's places.
var serverPlaces = uuid.Nil

// enter waits up to the gate's wait (or until ctx ends) for one of tenant's
// places and returns the function that gives it back. A request whose
// context has ended gets no place, free or not; one refused for waiting too
// long gets context.DeadlineExceeded.
func (g *tenantGate) enter(ctx context.Context, tenant uuid.UUID) (leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	t := g.tenants[tenant]
	if t == nil {
		t = &turns{}
		g.tenants[tenant] = t
	}
	if len(t.queue) == 0 && t.held < g.limit {
		t.held++
		g.mu.Unlock()
		return func() { g.leave(tenant, t) }, nil
	}
	if g.queue > 0 && len(t.queue) >= g.queue {
		g.mu.Unlock()
		return nil, context.DeadlineExceeded
	}
	w := &waiter{deadline: time.Now().Add(g.wait), turn: make(chan bool, 1)}
	t.queue = append(t.queue, w)
	if len(t.queue) == 1 {
		g.refuseLate(tenant, t, w.deadline)
	}
	g.mu.Unlock()

	select {
	case placed := <-w.turn:
		if placed {
			return func() { g.leave(tenant, t) }, nil
		}
		return nil, context.DeadlineExceeded
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(t.queue, w); i >= 0 {
		t.queue = slices.Delete(t.queue, i, i+1)
	} else if <-w.turn {
		// Given a place as its context ended: pass the place on.
		g.giveBack(tenant, t)
	}
	return nil, ctx.Err()
}

// leave gives back a place of tenant's.
func (g *tenantGate) leave(tenant uuid.UUID, t *turns) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.giveBack(tenant, t)
}

// giveBack gives a place that was held to t's oldest waiter, or frees it
// and forgets the tenant once it holds none (nobody waits then). g.mu is
// held.
func (g *tenantGate) giveBack(tenant uuid.UUID, t *turns) {
	if len(t.queue) > 0 {
		t.next() <- true
		return
	}
	if t.held--; t.held == 0 {
		if t.timer != nil {
			t.timer.Stop()
		}
		delete(g.tenants, tenant)
	}
}

// refuseLate sets t's timer for deadline, the oldest waiter's. When it
// fires it refuses every waiter whose deadline has passed and sets itself
// for the next one. g.mu is held.
func (g *tenantGate) refuseLate(tenant uuid.UUID, t *turns, deadline time.Time) {
	d := time.Until(deadline)
	if t.timer != nil {
		t.timer.Reset(d)
		return
	}
	t.timer = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.tenants[tenant] != t {
			return // forgotten since: nobody waits
		}
		now := time.Now()
		for len(t.queue) > 0 && !t.queue[0].deadline.After(now) {
			t.next() <- false
		}
		if len(t.queue) > 0 {
			t.timer.Reset(t.queue[0].deadline.Sub(now))
		}
	})
}

// shareDB admits a tenant's request when the tenant has a free place in the
// gate. A request that waited too long gets 503 SERVICE_UNAVAILABLE with
// Retry-After on every route, Dasha's included: nothing was claimed, so the
// retry is safe, and a 4xx would make a voice agent give up. A REST write
// takes its place itself (enterDB), once its input is accepted and only
// while the core runs it. A request the core makes wait for another
// attempt of its action gives its place up meanwhile (seat).
func (s *Server) shareDB(next http.Handler) http.Handler {
	if s.gate == nil && s.server == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seat, ok := s.enterDB(w, r)
		if !ok {
			return
		}
		defer seat.Free()
		next.ServeHTTP(w, r)
	})
}

// enterDB takes one of the request's tenant's places, as shareDB does, and
// returns the request's seat holding it (a seat without a gate when there
// is none); when it cannot, the answer has been written and ok is false.
// seat.Free gives the place back.
func (s *Server) enterDB(w http.ResponseWriter, r *http.Request) (_ *seat, ok bool) {
	seat := &infoFrom(r.Context()).seat
	if s.gate == nil && s.server == nil {
		return seat, true
	}
	seat.gate, seat.tenant, seat.server = s.gate, tenantFrom(r.Context()).ID, s.server
	if err := seat.Take(r.Context()); err != nil {
		if !errors.Is(r.Context().Err(), context.Canceled) { // else the client went away
			writeError(w, r, err)
		}
		return nil, false
	}
	return seat, true
}

// errTenantBusy answers a request that waited too long for a place.
var errTenantBusy = fault.New(fault.Unavailable,
	"too many requests of this tenant are using the database at once; nothing was stored for this one. "+
		"Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)")

// errServerBusy answers a request refused by the server's gate: every
// place was taken and its turn would not have come within the wait.
var errServerBusy = fault.New(fault.Unavailable,
	"the server is using every database connection it has and could not give this request one in time; nothing was stored for this one. "+
		"Retry after the delay in Retry-After with the same Idempotency-Key (or the same tool call)")

// seat is a request's place in its tenant's share of the gate (and in the
// server's gate), an
// idem.Place: the idempotency core gives it up while the request waits for
// another attempt of its action, and takes it again when that attempt has
// ended. It belongs to one request (reqInfo.seat) and is used by that
// request's goroutine only. Without a gate it holds nothing.
type seat struct {
	gate   *tenantGate
	tenant uuid.UUID
	leave  func() // gives the place back; nil while none is held
	// server is the server's gate, whose place is taken after the
	// tenant's (so a tenant waiting for its own turn holds none of the
	// server's); leaveServer gives it back, nil while none is held.
	server      *tenantGate
	leaveServer func()
}

// Take waits for one of the tenant's places, as enter does, unless one is
// held already. A request that got none before its wait or its own
// deadline ended gets errTenantBusy; one whose client went away, its
// context's error.
func (st *seat) Take(ctx context.Context) error {
	if st.gate != nil && st.leave == nil {
		leave, err := st.gate.enter(ctx, st.tenant)
		switch {
		case errors.Is(err, context.Canceled):
			return err
		case err != nil:
			return errTenantBusy
		}
		st.leave = leave
	}
	if st.server != nil && st.leaveServer == nil {
		leave, err := st.server.enter(ctx, serverPlaces)
		if err != nil {
			st.Free()
			if errors.Is(err, context.Canceled) {
				return err
			}
			return errServerBusy
		}
		st.leaveServer = leave
	}
	return nil
}

// Free gives the places back, if any are held.
func (st *seat) Free() {
	if st.leaveServer != nil {
		st.leaveServer()
		st.leaveServer = nil
	}
	if st.leave != nil {
		st.leave()
		st.leave = nil
	}
}

// gated reports whether the seat takes a place in any gate.
func (st *seat) gated() bool { return st.gate != nil || st.server != nil }
