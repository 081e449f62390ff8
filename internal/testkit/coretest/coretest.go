// Package coretest is a test harness for operations run through the
// idempotency core without the HTTP stack: a store on a fresh database, a
// core on it and a tenant, and helpers to run an operation's request while
// another transaction holds what it needs.
package coretest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// Env is a store on a fresh database, a core on it and a tenant.
type Env struct {
	Store  *db.Store
	Core   *idem.Core
	Tenant uuid.UUID
}

// Setup returns an Env on a fresh database (pgtest.NewPool).
func Setup(t *testing.T) Env {
	t.Helper()
	return SetupOn(t, pgtest.NewPool(t))
}

// SetupWithTimeouts is Setup with the pool's connections starting with
// timeouts, as the server's do.
func SetupWithTimeouts(t *testing.T, timeouts db.Timeouts) Env {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	db.SetTimeouts(cfg, timeouts)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return SetupOn(t, pool)
}

// SetupOn returns an Env on pool, with a new tenant.
func SetupOn(t *testing.T, pool *pgxpool.Pool) Env {
	t.Helper()
	store := db.New(pool)
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	return Env{Store: store, Core: idem.New(store, idem.Config{}), Tenant: tenant.ID}
}

// Request is the core's request for o's input under key.
func (e Env) Request(t *testing.T, o op.Operation, input []byte, key string) idem.Request {
	t.Helper()
	p, err := o.Prepare(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	return idem.Request{
		TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
		Work: p.Work(),
	}
}

// WhileHeld runs o for input under key while another transaction holds
// what the statement needs: hold runs in that transaction first; once the
// statement waits on a lock, release ends the transaction (commits or
// rolls it back). It returns the core's answer.
func (e Env) WhileHeld(t *testing.T, o op.Operation, input []byte, key string, hold, release func(tx pgx.Tx) error) oncecall.Action {
	t.Helper()
	req := e.Request(t, o, input, key)
	req.Wait = 5 * time.Second
	tx, err := e.Store.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(t.Context())) //nolint:errcheck // ended by release
	if err := hold(tx); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		reply idem.Reply
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := e.Core.Do(t.Context(), req)
		done <- answer{r, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.Count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the statement never waited for the other transaction")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	if err := release(tx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.reply.Action
}

// Count runs a query that counts.
func (e Env) Count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Slot makes an hour-long slot of the tenant starting at at.
func (e Env) Slot(t *testing.T, at time.Time) uuid.UUID {
	t.Helper()
	s, err := e.Store.CreateSlot(t.Context(), db.NewSlot{TenantID: e.Tenant, StartsAt: at, EndsAt: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// Customer makes a customer of the tenant named Ana.
func (e Env) Customer(t *testing.T) uuid.UUID {
	t.Helper()
	c, err := e.Store.CreateCustomer(t.Context(), db.NewCustomer{TenantID: e.Tenant, Name: "Ana"})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// Run runs o for input under a fresh key and returns the action as stored,
// after checking that the answer given is the one stored.
func (e Env) Run(t *testing.T, o op.Operation, input map[string]any) oncecall.Action {
	t.Helper()
	body, _ := json.Marshal(input)
	reply, err := e.Core.Do(t.Context(), e.Request(t, o, body, uuid.NewString()))
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.Store.ActionByID(t.Context(), e.Tenant, reply.Action.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Result, reply.Action.Result) {
		t.Errorf("the answer %s is not what was stored %s", reply.Action.Result, a.Result)
	}
	return a
}

// AnswerOf is v as an answer writes it: encoding/json's text without the
// escaping of <, > and & for HTML.
func AnswerOf(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
