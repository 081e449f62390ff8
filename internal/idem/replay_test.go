package idem_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
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
	core, store, trace, tenant := tracedCore(t, idem.Config{})
	pool := store.Pool()
	req := func(key string) idem.Request {
		return idem.Request{
			TenantID: tenant, Key: key, Operation: "customer.create", Fingerprint: "f", Input: []byte(`{}`),
			Work: statement(func(s *db.Statement, x idem.Exec) {
				s.CreateCustomer(db.NewCustomer{TenantID: x.TenantID, Name: "n"})
			}),
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
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM customers WHERE tenant_id = $1", tenant).Scan(&n); err != nil {
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

// all returns every statement name sent since the last call.
func (s *sent) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.names
	s.names = nil
	return out
}

// tracedCore is a core configured by cfg on a fresh database whose
// statements trace records, and a tenant.
func tracedCore(t *testing.T, cfg idem.Config) (*idem.Core, *db.Store, *sent, uuid.UUID) {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	trace := &sent{}
	pcfg.ConnConfig.Tracer = trace
	db.Configure(pcfg)
	pool, err := pgxpool.NewWithConfig(t.Context(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := db.New(pool)
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	trace.all()
	return idem.New(store, cfg), store, trace, tenant.ID
}

// A replay of an answer this process gave within the answer age is
// answered from memory: nothing is sent to the database, and a key reused
// with another request is still refused. Keys that a request may retire
// (derived keys, requests with a stale-answer check) and requests naming
// an action always go to the database; another replica's first replay
// reads the action and keeps it from then on.
func TestReplayOfAKeptAnswerSendsNothing(t *testing.T) {
	t.Parallel()
	core, store, trace, tenant := tracedCore(t, idem.Config{AnswerBytes: 1 << 20})
	req := func(key, fingerprint string) idem.Request {
		return idem.Request{
			TenantID: tenant, Key: key, Operation: "customer.create", Fingerprint: fingerprint, Input: []byte(`{}`),
			Work: statement(func(s *db.Statement, x idem.Exec) {
				s.CreateCustomer(db.NewCustomer{TenantID: x.TenantID, Name: "n"})
			}),
		}
	}
	customers := func() int {
		t.Helper()
		var n int
		if err := store.Pool().QueryRow(t.Context(), "SELECT count(*) FROM customers WHERE tenant_id = $1", tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		trace.all()
		return n
	}

	key := uuid.NewString()
	first, err := core.Do(t.Context(), req(key, "f"))
	if err != nil || first.Replayed {
		t.Fatalf("first execution: replayed %v, %v", first.Replayed, err)
	}
	if got := trace.all(); len(got) == 0 {
		t.Fatal("the first execution sent nothing")
	}
	for range 3 {
		again, err := core.Do(t.Context(), req(key, "f"))
		if err != nil || !again.Replayed || !again.Kept || again.Action.ID != first.Action.ID || string(again.Action.Result) != string(first.Action.Result) {
			t.Fatalf("replay: %+v, %v; want action %s replayed", again, err, first.Action.ID)
		}
		if got := trace.all(); len(got) != 0 {
			t.Fatalf("a replay of a kept answer sent %v", got)
		}
	}
	var reused *idem.ReusedError
	if _, err := core.Do(t.Context(), req(key, "other")); !errors.As(err, &reused) || reused.Action.ID != first.Action.ID {
		t.Fatalf("key reused with another request: %v, want ReusedError for %s", err, first.Action.ID)
	}
	if got := trace.all(); len(got) != 0 {
		t.Fatalf("a reused key of a kept answer sent %v", got)
	}

	// Never from memory: a derived key, a request with a stale check, a
	// request naming its action.
	derived := idem.DeriveKey("t", "customer.create", "call-1")
	if _, err := core.Do(t.Context(), req(derived, "f")); err != nil {
		t.Fatal(err)
	}
	trace.all()
	if r, err := core.Do(t.Context(), req(derived, "f")); err != nil || !r.Replayed || r.Kept {
		t.Fatalf("derived key replay: %+v %v", r, err)
	}
	if got := trace.all(); len(got) == 0 {
		t.Fatal("a derived key was answered from memory")
	}
	withCheck := req(key, "f")
	checked := false
	withCheck.Stale = stale(func(context.Context, oncecall.Action) (bool, error) { checked = true; return false, nil })
	if r, err := core.Do(t.Context(), withCheck); err != nil || !r.Replayed || !checked {
		t.Fatalf("replay with a stale check: %+v %v, checked %v", r, err, checked)
	}
	if got := trace.all(); len(got) == 0 {
		t.Fatal("a request with a stale check was answered from memory")
	}
	named := req(key, "f")
	named.Named = first.Action.ID
	if r, err := core.Do(t.Context(), named); err != nil || r.Action.ID != first.Action.ID {
		t.Fatalf("named replay: %+v %v", r, err)
	}
	if got := trace.all(); !slices.Contains(got, "ActionByID") {
		t.Fatalf("a named request sent %v, want ActionByID", got)
	}

	// Another replica: its first replay reads the database, its next ones
	// do not.
	other := idem.New(store, idem.Config{AnswerBytes: 1 << 20})
	for i, wantSent := range []bool{true, false} {
		r, err := other.Do(t.Context(), req(key, "f"))
		if err != nil || !r.Replayed || r.Action.ID != first.Action.ID {
			t.Fatalf("other replica's replay %d: %+v %v", i, r, err)
		}
		if got := trace.all(); (len(got) > 0) != wantSent {
			t.Fatalf("other replica's replay %d sent %v", i, got)
		}
	}
	if n := customers(); n != 2 {
		t.Fatalf("%d customers, want 2 (one per key)", n)
	}
}
