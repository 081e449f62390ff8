package api

import (
	"context"
	"errors"
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
