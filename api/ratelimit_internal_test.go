package api

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestTenantLimiterStaysBounded(t *testing.T) {
	t.Parallel()
	l := newTenantLimiter(1, 2) // full again 2s after last use
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	busy := uuid.New()
	if ok, _ := l.take(busy, now); !ok {
		t.Fatal("first request refused")
	}
	if ok, _ := l.take(busy, now); !ok {
		t.Fatal("burst of 2 refused the second request")
	}
	if ok, wait := l.take(busy, now); ok || wait != time.Second {
		t.Fatalf("third request: ok=%v wait=%v, want a refusal for 1s", ok, wait)
	}
	for i := 1; i < maxLimitedTenants; i++ {
		l.take(uuid.New(), now.Add(-time.Hour))
	}
	if len(l.buckets) != maxLimitedTenants {
		t.Fatalf("buckets = %d", len(l.buckets))
	}
	// A new tenant evicts the refilled buckets and keeps the busy one, whose
	// empty bucket still refuses.
	l.take(uuid.New(), now)
	if len(l.buckets) != 2 {
		t.Fatalf("after eviction: %d buckets, want 2", len(l.buckets))
	}
	if ok, _ := l.take(busy, now); ok {
		t.Fatal("eviction refilled a busy tenant's bucket")
	}
	if ok, _ := l.take(busy, now.Add(time.Second)); !ok {
		t.Fatal("a token did not come back after 1s")
	}
}
