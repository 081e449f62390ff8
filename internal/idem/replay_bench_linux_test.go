//go:build linux

package idem

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// BenchmarkBookingReplay measures what a replay of a booking costs in CPU,
// this process's and PostgreSQL's backends' (from /proc), through the
// booking's statement and through the read of the action first (the two
// paths replayShare picks between), against the read alone and a first
// execution. CPU time rather than throughput: on a machine shared with other
// work it moves less. 8 goroutines on 6 connections (the server's pool on
// 2 cores); the figures are in docs/performance-log.md.
//
//	go test ./internal/idem -run '^$' -bench BookingReplay -benchtime 5000x -count 3
func BenchmarkBookingReplay(b *testing.B) {
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 6, 6
	db.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	store := db.New(pool)
	core := New(store, Config{})
	tenant, _, err := store.CreateTenant(b.Context(), "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	customer := uuid.New()
	if _, err := pool.Exec(b.Context(), `INSERT INTO customers (id, tenant_id, name) VALUES ($1, $2, 'c')`, customer, tenant.ID); err != nil {
		b.Fatal(err)
	}
	var slot atomic.Int64
	newSlot := func(b *testing.B) uuid.UUID {
		id := uuid.New()
		if _, err := pool.Exec(b.Context(), `INSERT INTO slots (id, tenant_id, starts_at, ends_at)
			VALUES ($1, $2, now() + interval '10 days' + $3 * interval '1 hour', now() + interval '10 days' + $3 * interval '1 hour' + interval '30 minutes')`,
			id, tenant.ID, slot.Add(1)); err != nil {
			b.Fatal(err)
		}
		return id
	}
	book := func(key string, slot uuid.UUID) Request {
		return Request{TenantID: tenant.ID, Key: key, Operation: "appointment.book", Fingerprint: "f", Input: []byte(`{}`),
			Work: booking{customer, slot}}
	}
	const keys = 1000
	for i := range keys {
		if _, err := core.Do(b.Context(), book("k"+strconv.Itoa(i), newSlot(b))); err != nil {
			b.Fatal(err)
		}
	}
	backends := func(b *testing.B) []int {
		var pids []int
		for range cfg.MaxConns {
			c, err := pool.Acquire(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Release()
			pids = append(pids, int(c.Conn().PgConn().PID()))
		}
		return pids
	}(b)
	measure := func(b *testing.B, op func(b *testing.B, i int64)) {
		var next atomic.Int64
		for range 100 { // warm: prepared statements, the replay estimate
			op(b, next.Add(1))
		}
		self, pg := cpuSelf(b), cpuOf(backends)
		b.ResetTimer()
		b.SetParallelism(4) // 8 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				op(b, next.Add(1))
			}
		})
		b.StopTimer()
		self, pg = cpuSelf(b)-self, cpuOf(backends)-pg
		b.ReportMetric(float64(self.Microseconds())/float64(b.N), "go-µs/op")
		b.ReportMetric(float64(pg.Microseconds())/float64(b.N), "pg-µs/op")
	}
	replay := func(readFirst bool) func(b *testing.B, i int64) {
		return func(b *testing.B, i int64) {
			v := int64(0)
			if readFirst {
				v = replayShareOne
			}
			core.replays.v.Store(v)
			r, err := core.Do(b.Context(), book("k"+strconv.Itoa(int(i%keys)), uuid.Nil))
			if err != nil || !r.Replayed {
				b.Fatalf("replay: %v, replayed %v", err, r.Replayed)
			}
		}
	}
	b.Run("replay_statement", func(b *testing.B) { measure(b, replay(false)) })
	b.Run("replay_read_first", func(b *testing.B) { measure(b, replay(true)) })
	b.Run("read", func(b *testing.B) {
		measure(b, func(b *testing.B, i int64) {
			if _, err := store.ActionByKey(b.Context(), tenant.ID, "k"+strconv.Itoa(int(i%keys))); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("first", func(b *testing.B) {
		var free []uuid.UUID
		rows, err := pool.Query(b.Context(), `INSERT INTO slots (id, tenant_id, starts_at, ends_at)
			SELECT gen_random_uuid(), $1, now() + interval '100 days' + i * interval '1 hour', now() + interval '100 days' + i * interval '1 hour' + interval '30 minutes'
			FROM generate_series($2::int, $2::int + 29999) i RETURNING id`, tenant.ID, int(slot.Add(30000)))
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			free = append(free, id)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		var used atomic.Int64
		measure(b, func(b *testing.B, _ int64) {
			i := used.Add(1)
			if i >= int64(len(free)) {
				b.Fatalf("more than %d first executions: run with -benchtime Nx, N below 30000", len(free))
			}
			core.replays.v.Store(0)
			if r, err := core.Do(b.Context(), book(uuid.NewString(), free[i])); err != nil || r.Replayed {
				b.Fatalf("first: %v", err)
			}
		})
	})
}

func cpuSelf(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOf sums the CPU time of processes (user and system, in clock ticks of
// 10 ms, from /proc/<pid>/stat).
func cpuOf(pids []int) (d time.Duration) {
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		user, _ := strconv.ParseInt(f[11], 10, 64)
		sys, _ := strconv.ParseInt(f[12], 10, 64)
		d += time.Duration(user+sys) * 10 * time.Millisecond
	}
	return d
}

// booking is the Work of a booking's one statement.
type booking struct{ customer, slot uuid.UUID }

func (b booking) OneStatement() bool                { return true }
func (b booking) Statement(s *db.Statement, _ Exec) { s.Book(b.customer, b.slot, "consult") }
func (b booking) Run(context.Context, *db.Tx, Exec) (Result, error) {
	panic("a statement runs no Go")
}
func (b booking) Reserve(context.Context, *db.Tx, Exec, []db.NewStep) (*Result, error) {
	return nil, nil
}
