package api

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkTenantGate is one tenant's requests taking and giving back a
// place, 32 at once for 6 places (the bench's first executions at 32
// clients on a 2-core server), each holding its place briefly.
//
//	go test ./api -run '^$' -bench TenantGate -count 5
func BenchmarkTenantGate(b *testing.B) {
	g := newTenantGate(6, time.Second)
	tenant := uuid.New()
	ctx := context.Background()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			leave, err := g.enter(ctx, tenant)
			if err != nil {
				b.Error(err)
				return
			}
			for range 20 { // the request's work while it holds the place
				_ = time.Now()
			}
			leave()
		}
	})
}
