// Package optest checks, against a real database, that an operation's SQL
// form (op.Spec.Local, one round trip) stores what its Go form (Execute)
// stores.
package optest

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
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

// Env is a store on a fresh database, a core on it and a tenant.
type Env struct {
	Store  *db.Store
	Core   *idem.Core
	Tenant uuid.UUID
}

// Setup returns an Env; the test's package must run pgtest.Main.
func Setup(t *testing.T) Env {
	t.Helper()
	return setup(t, pgtest.NewPool(t))
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
	return setup(t, pool)
}

func setup(t *testing.T, pool *pgxpool.Pool) Env {
	t.Helper()
	store := db.New(pool)
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	return Env{Store: store, Core: idem.New(store, idem.Config{}), Tenant: tenant.ID}
}

// Run runs o once in SQL and once in Go, with the input input(true) and
// input(false) makes (inputs naming twin objects of the same database
// state), and returns the actions as stored: [0] in SQL, [1] in Go.
func (e Env) Run(t *testing.T, o op.Operation, input func(inSQL bool) []byte) [2]oncecall.Action {
	t.Helper()
	var got [2]oncecall.Action
	for i, inSQL := range []bool{true, false} {
		p, err := o.Prepare(input(inSQL), nil)
		if err != nil {
			t.Fatal(err)
		}
		req := idem.Request{TenantID: e.Tenant, Key: uuid.NewString(), Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input, Run: p.Run}
		if inSQL {
			if p.Local == nil {
				t.Fatalf("%s has no SQL form", o.Name())
			}
			req.Local = p.Local
		}
		reply, err := e.Core.Do(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = e.Store.ActionByID(t.Context(), e.Tenant, reply.Action.ID); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i].Result, reply.Action.Result) {
			t.Errorf("the answer %s is not what was stored %s", reply.Action.Result, got[i].Result)
		}
	}
	return got
}

// Same fails unless the two stored actions agree: state, outcome, reason,
// status, whether they name a resource, and the body. Bodies are compared
// after each one's own ids (its resource id and the given per-run ids)
// are replaced by placeholders: as JSON values always, and as bytes unless
// escapes is set (the SQL form does not escape <, > and & for HTML as Go's
// encoding/json does).
func Same(t *testing.T, name string, got [2]oncecall.Action, own [2][]string, escapes bool) {
	t.Helper()
	sql, goes := got[0], got[1]
	if sql.State != goes.State || sql.Outcome != goes.Outcome || sql.Reason != goes.Reason || sql.Status != goes.Status {
		t.Errorf("%s: in SQL %s %s %s %d, in Go %s %s %s %d", name,
			sql.State, sql.Outcome, sql.Reason, sql.Status, goes.State, goes.Outcome, goes.Reason, goes.Status)
	}
	if (sql.ResourceID == "") != (goes.ResourceID == "") {
		t.Errorf("%s: resource ids %q and %q", name, sql.ResourceID, goes.ResourceID)
	}
	norm := func(a oncecall.Action, ids []string) []byte {
		b := a.Result
		for i, id := range append(ids, a.ResourceID) {
			if id != "" {
				b = bytes.ReplaceAll(b, []byte(id), []byte{'#', byte('A' + i)})
			}
		}
		return b
	}
	bs, bg := norm(sql, own[0]), norm(goes, own[1])
	var js, jg any
	if err := json.Unmarshal(bs, &js); err != nil {
		t.Fatalf("%s: the body in SQL is not JSON: %s", name, bs)
	}
	if err := json.Unmarshal(bg, &jg); err != nil {
		t.Fatalf("%s: the body in Go is not JSON: %s", name, bg)
	}
	if !reflect.DeepEqual(js, jg) {
		t.Errorf("%s: bodies differ:\n in SQL %s\n in Go  %s", name, bs, bg)
	}
	if !escapes && !bytes.Equal(bs, bg) {
		t.Errorf("%s: bodies differ in bytes:\n in SQL %s\n in Go  %s", name, bs, bg)
	}
}

// OwnTimes adds to each run's own ids the created_at its answer gives:
// rows made by the two runs have times of their own.
func OwnTimes(got [2]oncecall.Action, ids *[2][]string) {
	for i, a := range got {
		var v struct {
			CreatedAt string `json:"created_at"`
		}
		if json.Unmarshal(a.Result, &v) == nil && v.CreatedAt != "" {
			ids[i] = append(ids[i], v.CreatedAt)
		}
	}
}

// WhileHeld runs o's SQL form for input under key while another transaction
// holds what the statement needs: hold runs in that transaction first;
// once the statement waits on a lock, release ends the transaction (commits
// or rolls it back). It returns the core's answer.
func (e Env) WhileHeld(t *testing.T, o op.Operation, input []byte, key string, hold, release func(tx pgx.Tx) error) oncecall.Action {
	t.Helper()
	p, err := o.Prepare(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Local == nil {
		t.Fatalf("%s has no SQL form", o.Name())
	}
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
		r, err := e.Core.Do(t.Context(), idem.Request{
			TenantID: e.Tenant, Key: key, Operation: p.Operation, Fingerprint: p.Fingerprint, Input: p.Input,
			Run: p.Run, Local: p.Local, Wait: 5 * time.Second,
		})
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
