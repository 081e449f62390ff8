package idem_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/pgtest"
)

// sent records the names of the sqlc statements a pool sends.
type sent struct {
	mu    sync.Mutex
	names []string
}

var sqlcName = regexp.MustCompile(`^-- name: (\w+)`)

func (s *sent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if m := sqlcName.FindStringSubmatch(data.SQL); m != nil {
		s.mu.Lock()
		s.names = append(s.names, m[1])
		s.mu.Unlock()
	}
	return ctx
}

func (s *sent) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the names sent since the last call, keeping only the read
// of an action by key and the operations' statements.
func (s *sent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.names {
		if n == "ActionByKey" || strings.HasPrefix(n, "ClaimAnd") {
			out = append(out, n)
		}
	}
	s.names = nil
	return out
}

// A replay of an operation with a statement is answered by the statement
// itself while replays are rare, and by the read of the action alone once
// most requests are replays (a retry storm); a first execution then reads
// and claims. Whichever path a request takes, each key is executed once.
func TestStatementReplaysReadFirstWhenMostRequestsAreReplays(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	trace := &sent{}
	cfg.ConnConfig.Tracer = trace
	db.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := db.New(pool)
	core := idem.New(store, idem.Config{})
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	req := func(key string) idem.Request {
		return idem.Request{
			TenantID: tenant.ID, Key: key, Operation: "customer.create", Fingerprint: "f", Input: []byte(`{}`),
			Statement: func(s *db.Statement, x idem.Exec) {
				s.CreateCustomer(db.NewCustomer{TenantID: x.TenantID, Name: "n"})
			},
		}
	}
	do := func(key string, replayed bool) []string {
		t.Helper()
		reply, err := core.Do(t.Context(), req(key))
		if err != nil || reply.Replayed != replayed {
			t.Fatalf("key %s: replayed %v, %v; want replayed %v", key, reply.Replayed, err, replayed)
		}
		return trace.take()
	}
	customers := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM customers WHERE tenant_id = $1", tenant.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := func(what string, got []string, names ...string) {
		t.Helper()
		if len(got) != len(names) {
			t.Fatalf("%s sent %v, want %v", what, got, names)
		}
		for i := range names {
			if got[i] != names[i] {
				t.Fatalf("%s sent %v, want %v", what, got, names)
			}
		}
	}

	key := uuid.NewString()
	want("a first execution", do(key, false), "ClaimAndCreateCustomer")
	want("a replay among first executions", do(key, true), "ClaimAndCreateCustomer")
	for range 200 {
		do(key, true)
	}
	want("a replay in a retry storm", do(key, true), "ActionByKey")
	want("a first execution in a retry storm", do(uuid.NewString(), false), "ActionByKey", "ClaimAndCreateCustomer")
	if n := customers(); n != 2 {
		t.Fatalf("%d customers after two keys, want 2", n)
	}
	for range 200 {
		do(uuid.NewString(), false)
	}
	want("a first execution after the storm", do(uuid.NewString(), false), "ClaimAndCreateCustomer")
	want("a replay after the storm", do(key, true), "ClaimAndCreateCustomer")
	if n := customers(); n != 203 {
		t.Fatalf("%d customers after 203 keys, want 203", n)
	}
}
