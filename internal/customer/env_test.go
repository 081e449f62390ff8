package customer_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/op"
	"github.com/oncecall/oncecall/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// env is a store on a fresh database, a core on it and a tenant.
type env struct {
	Store  *db.Store
	Core   *idem.Core
	Tenant uuid.UUID
}

func setup(t *testing.T) env {
	t.Helper()
	return setupOn(t, pgtest.NewPool(t))
}

func setupOn(t *testing.T, pool *pgxpool.Pool) env {
	t.Helper()
	store := db.New(pool)
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	return env{Store: store, Core: idem.New(store, idem.Config{}), Tenant: tenant.ID}
}

// request is the core's request for o's input under key.
func (e env) request(t *testing.T, o op.Operation, input []byte, key string) idem.Request {
	t.Helper()
	p, err := o.Prepare(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	return idem.Request{
		TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
		Run: p.Run, Statement: p.Statement,
	}
}

// whileHeld runs o for input under key while another transaction holds
// what the statement needs: hold runs in that transaction first; once the
// statement waits on a lock, release ends the transaction (commits or
// rolls it back). It returns the core's answer.
func (e env) whileHeld(t *testing.T, o op.Operation, input []byte, key string, hold, release func(tx pgx.Tx) error) oncecall.Action {
	t.Helper()
	req := e.request(t, o, input, key)
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
	for e.count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 0 {
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

// count runs a query that counts.
func (e env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
