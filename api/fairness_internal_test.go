package api

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The gate gives each tenant limit places, refuses past its wait and a
// request already cancelled, and forgets a tenant once nobody holds or
// waits for a place.
func TestTenantGatePlaces(t *testing.T) {
	t.Parallel()
	g := newTenantGate(2, 20*time.Millisecond)
	a, b := uuid.New(), uuid.New()
	ctx := context.Background()
	leave1, err1 := g.enter(ctx, a)
	leave2, err2 := g.enter(ctx, a)
	if err1 != nil || err2 != nil {
		t.Fatalf("the first two places: %v %v", err1, err2)
	}
	if _, err := g.enter(ctx, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third request of a full tenant: %v", err)
	}
	leaveB, err := g.enter(ctx, b)
	if err != nil {
		t.Fatalf("another tenant was refused: %v", err)
	}
	leave1()
	leave3, err := g.enter(ctx, a)
	if err != nil {
		t.Fatalf("a freed place was not given out: %v", err)
	}
	// A request already gone gets no place, free or not.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.enter(gone, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request with a place free: %v", err)
	}
	for _, leave := range []func(){leave2, leave3, leaveB} {
		leave()
	}
	if n := len(g.tenants); n != 0 {
		t.Fatalf("%d idle tenants kept", n)
	}
}

// queued reports how many requests wait for one of tenant's places.
func (g *tenantGate) queued(tenant uuid.UUID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.tenants[tenant]; t != nil {
		return len(t.queue)
	}
	return 0
}

// waitQueued waits until n requests of tenant wait for a place.
func waitQueued(t *testing.T, g *tenantGate, tenant uuid.UUID, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.queued(tenant) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", g.queued(tenant), n)
		}
		runtime.Gosched()
	}
}

type entered struct {
	leave func()
	err   error
}

// enterAsync starts a request entering the gate and returns where its
// answer arrives.
func enterAsync(ctx context.Context, g *tenantGate, tenant uuid.UUID) <-chan entered {
	c := make(chan entered, 1)
	go func() {
		leave, err := g.enter(ctx, tenant)
		c <- entered{leave, err}
	}()
	return c
}

// A place given back goes to the oldest waiter; a waiter that gave up is
// passed over.
func TestTenantGateFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	g := newTenantGate(1, time.Minute)
	tenant := uuid.New()
	ctx := context.Background()
	leave, err := g.enter(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	first := enterAsync(ctx, g, tenant)
	waitQueued(t, g, tenant, 1)
	goneCtx, gone := context.WithCancel(ctx)
	quitter := enterAsync(goneCtx, g, tenant)
	waitQueued(t, g, tenant, 2)
	second := enterAsync(ctx, g, tenant)
	waitQueued(t, g, tenant, 3)

	gone()
	if e := <-quitter; !errors.Is(e.err, context.Canceled) || e.leave != nil {
		t.Fatalf("a waiter whose request ended: %v", e.err)
	}
	waitQueued(t, g, tenant, 2)
	leave()
	e := <-first
	if e.err != nil {
		t.Fatalf("the oldest waiter: %v", e.err)
	}
	select {
	case e := <-second:
		t.Fatalf("the second waiter got in while the place was held (err %v)", e.err)
	default:
	}
	e.leave()
	if e := <-second; e.err != nil {
		t.Fatalf("the second waiter: %v", e.err)
	} else {
		e.leave()
	}
	if n := len(g.tenants); n != 0 {
		t.Fatalf("%d idle tenants kept", n)
	}
}

// Every waiter is refused once it has waited the gate's wait, though none
// sets a timer of its own.
func TestTenantGateRefusesEachWaiterAfterItsWait(t *testing.T) {
	t.Parallel()
	const wait = 30 * time.Millisecond
	g := newTenantGate(1, wait)
	tenant := uuid.New()
	ctx := context.Background()
	leave, err := g.enter(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []<-chan entered
	var started []time.Time
	for i := range 3 {
		started = append(started, time.Now())
		waiting = append(waiting, enterAsync(ctx, g, tenant))
		waitQueued(t, g, tenant, i+1)
	}
	for i, c := range waiting {
		var e entered
		select {
		case e = <-c:
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d still waits long after the gate's wait of %s", i, wait)
		}
		if !errors.Is(e.err, context.DeadlineExceeded) || e.leave != nil {
			t.Fatalf("waiter %d: %v, want refused", i, e.err)
		}
		if waited := time.Since(started[i]); waited < wait {
			t.Fatalf("waiter %d refused after %s, before the gate's wait of %s", i, waited, wait)
		}
	}
	leave()
	if n := len(g.tenants); n != 0 {
		t.Fatalf("%d idle tenants kept", n)
	}
}

// A waiter given a place just as its request ends passes the place on:
// none is lost, whichever of the two it sees first.
func TestTenantGateLosesNoPlaceToARequestThatEnds(t *testing.T) {
	t.Parallel()
	g := newTenantGate(2, time.Minute)
	tenant := uuid.New()
	// keeper holds a place throughout, so the tenant's count of places
	// taken is never forgotten with an idle tenant.
	keeper, err := g.enter(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	held := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.tenants[tenant].held
	}
	for i := range 200 {
		leave, err := g.enter(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := enterAsync(ctx, g, tenant)
		waitQueued(t, g, tenant, 1)
		// The place is given back (what leave does, under the same hold
		// of the lock) as the waiter's request ends: it wakes with both
		// ready.
		g.mu.Lock()
		cancel()
		g.giveBack(tenant, g.tenants[tenant])
		g.mu.Unlock()
		_ = leave // given back above
		if e := <-c; e.err == nil {
			e.leave()
		} else if !errors.Is(e.err, context.Canceled) {
			t.Fatal(e.err)
		}
		if n := held(); n != 1 {
			t.Fatalf("round %d: %d places taken, want the keeper's 1", i, n)
		}
	}
	keeper()
	if n := len(g.tenants); n != 0 {
		t.Fatalf("%d idle tenants kept", n)
	}
}

// The server's gate lets serverQueue requests wait for each place and
// refuses one more at once, not after its wait; a place given back still
// goes to the oldest waiter.
func TestServerGateRefusesPastItsQueueAtOnce(t *testing.T) {
	t.Parallel()
	const wait = time.Minute
	g := newServerGate(1, wait)
	ctx := context.Background()
	leave, err := g.enter(ctx, serverPlaces)
	if err != nil {
		t.Fatal(err)
	}
	waiters := make([]<-chan entered, serverQueue)
	for i := range waiters {
		waiters[i] = enterAsync(ctx, g, serverPlaces)
		waitQueued(t, g, serverPlaces, i+1)
	}
	start := time.Now()
	if _, err := g.enter(ctx, serverPlaces); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request past the queue: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refused after %s, not at once (the wait is %s)", took, wait)
	}
	for _, w := range waiters {
		leave()
		e := <-w
		if e.err != nil {
			t.Fatalf("a waiter in the queue: %v", e.err)
		}
		leave = e.leave
	}
	leave()
	if n := len(g.tenants); n != 0 {
		t.Fatalf("%d idle entries kept", n)
	}
}
