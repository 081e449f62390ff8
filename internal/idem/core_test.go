package idem_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/fault"
	"github.com/oncecall/oncecall/internal/idem"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type env struct {
	store  *db.Store
	core   *idem.Core
	tenant oncecall.Tenant
}

func setup(t *testing.T) env {
	t.Helper()
	store := db.New(pgtest.NewPool(t))
	tenant, _, err := store.CreateTenant(t.Context(), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	return env{store: store, core: idem.New(store, idem.Config{}), tenant: tenant}
}

// noteRun is an operation that writes one row (a customer) per execution.
func noteRun(calls *int, mu *sync.Mutex) func(context.Context, *db.Tx, idem.Exec) (idem.Result, error) {
	return func(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
		mu.Lock()
		*calls++
		mu.Unlock()
		c, err := tx.CreateCustomer(ctx, db.NewCustomer{TenantID: x.TenantID, Name: "n"})
		return idem.Result{Outcome: idem.Confirmed, Status: 201, ResourceID: c.ID.String(), Body: []byte(`{}`)}, err
	}
}

func (e env) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := e.store.Pool().QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFailedTransactionLeavesNoClaim(t *testing.T) {
	t.Parallel()
	e := setup(t)
	boom := errors.New("provider of a local write failed")
	req := idem.Request{
		TenantID: e.tenant.ID, Key: "k", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
		Work: run(func(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
			if _, err := tx.CreateCustomer(ctx, db.NewCustomer{TenantID: x.TenantID, Name: "half"}); err != nil {
				return idem.Result{}, err
			}
			return idem.Result{}, boom // fails after the claim and a business write
		}),
	}
	if _, err := e.core.Do(t.Context(), req); !errors.Is(err, boom) {
		t.Fatalf("Do: %v, want the operation's error", err)
	}
	if n := e.count(t, "actions"); n != 0 {
		t.Fatalf("a rolled-back attempt left %d actions", n)
	}
	if n := e.count(t, "customers"); n != 0 {
		t.Fatalf("a rolled-back attempt left %d business rows", n)
	}
	var calls int
	var mu sync.Mutex
	req.Work = run(noteRun(&calls, &mu))
	reply, err := e.core.Do(t.Context(), req)
	if err != nil || reply.Replayed || reply.Action.Outcome != idem.Confirmed {
		t.Fatalf("retry with the same key: %+v %v", reply, err)
	}
	if calls != 1 || e.count(t, "customers") != 1 || e.count(t, "actions") != 1 {
		t.Fatalf("retry executed %d times", calls)
	}
}

func TestConcurrentDistinctKeysRunInParallel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var calls int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := e.core.Do(t.Context(), idem.Request{
				TenantID: e.tenant.ID, Key: "key-" + string(rune('a'+i)), Operation: "test.op",
				Fingerprint: "f", Input: []byte(`{}`), Work: run(noteRun(&calls, &mu)),
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if calls != 20 || e.count(t, "customers") != 20 {
		t.Fatalf("20 distinct keys: %d executions, %d rows", calls, e.count(t, "customers"))
	}
}

func TestRetryableConflictRerunsTheUnit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	attempts := 0
	reply, err := e.core.Do(t.Context(), idem.Request{
		TenantID: e.tenant.ID, Key: "race", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
		Work: run(func(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
			attempts++
			if attempts == 1 {
				// A unique violation from a business write that lost a race.
				if _, err := tx.CreateCustomer(ctx, db.NewCustomer{TenantID: x.TenantID, Phone: "+15550000001"}); err != nil {
					return idem.Result{}, err
				}
				_, err := tx.CreateCustomer(ctx, db.NewCustomer{TenantID: x.TenantID, Phone: "+15550000001"})
				return idem.Result{}, err
			}
			return idem.Result{Outcome: idem.Rejected, Status: 422, Reason: "LOST_RACE", Body: []byte(`{}`)}, nil
		}),
	})
	if err != nil || attempts != 2 || reply.Action.Reason != "LOST_RACE" {
		t.Fatalf("attempts %d, reply %+v, err %v", attempts, reply, err)
	}
}

func TestUnavailableDatabaseFailsClosed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// A pool that points at a port where nothing listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := pgxpool.ParseConfig("postgres://postgres@" + addr + "/x?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	core := idem.New(db.New(pool), idem.Config{})
	ran := false
	_, err = core.Do(t.Context(), idem.Request{
		TenantID: e.tenant.ID, Key: "k", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
		Work: run(func(context.Context, *db.Tx, idem.Exec) (idem.Result, error) { ran = true; return idem.Result{}, nil }),
	})
	if fault.CodeOf(err) != fault.Unavailable || ran {
		t.Fatalf("err %v (code %s), ran %v; want SERVICE_UNAVAILABLE and nothing run", err, fault.CodeOf(err), ran)
	}
}

func TestWaitFollowsARunningAction(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// A claim committed by a remote-step action that is still running.
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = e.core.Do(context.Background(), idem.Request{
			TenantID: e.tenant.ID, Key: "slow", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
			Work: run(func(ctx context.Context, tx *db.Tx, x idem.Exec) (idem.Result, error) {
				close(started)
				<-release
				return idem.Result{Outcome: idem.Confirmed, Status: 201, Body: []byte(`{"ok":true}`)}, nil
			}),
		})
	}()
	<-started
	// While the first transaction holds the claim, a second attempt blocks on
	// the claim and then replays the committed result.
	done := make(chan idem.Reply, 1)
	go func() {
		r, err := e.core.Do(context.Background(), idem.Request{
			TenantID: e.tenant.ID, Key: "slow", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
			Wait: 5 * time.Second,
			Work: run(func(context.Context, *db.Tx, idem.Exec) (idem.Result, error) {
				t.Error("second attempt executed")
				return idem.Result{}, nil
			}),
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	close(release)
	r := <-done
	if !r.Replayed || string(r.Action.Result) != `{"ok":true}` {
		t.Fatalf("second attempt: %+v", r)
	}
}

// Every claim of a key finds it taken by an attempt that then rolls back,
// so the key is free again when the action is read: here a trigger takes
// the key in the claim's own transaction, which the core rolls back. The
// core tries a bounded number of times and then answers 503 with nothing
// claimed, instead of claiming for as long as the request lives.
func TestClaimerThatAlwaysRollsBackIsBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, q := range []string{
		`CREATE SEQUENCE claims_tried`,
		`CREATE FUNCTION take_key_first() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		     IF pg_trigger_depth() = 1 AND NEW.idempotency_key = 'churn' THEN
		         PERFORM nextval('claims_tried');
		         INSERT INTO actions (id, tenant_id, idempotency_key, operation, fingerprint, request)
		         VALUES (gen_random_uuid(), NEW.tenant_id, NEW.idempotency_key, NEW.operation, NEW.fingerprint, NEW.request);
		     END IF;
		     RETURN NEW;
		 END $$`,
		`CREATE TRIGGER take_key_first BEFORE INSERT ON actions FOR EACH ROW EXECUTE FUNCTION take_key_first()`,
	} {
		if _, err := e.store.Pool().Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	const retries = 3
	core := idem.New(e.store, idem.Config{Retries: retries})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ran := false
	_, err := core.Do(ctx, idem.Request{
		TenantID: e.tenant.ID, Key: "churn", Operation: "test.op", Fingerprint: "f", Input: []byte(`{}`),
		Work: run(func(context.Context, *db.Tx, idem.Exec) (idem.Result, error) { ran = true; return idem.Result{}, nil }),
	})
	var tried int
	if err := e.store.Pool().QueryRow(t.Context(), "SELECT last_value FROM claims_tried").Scan(&tried); err != nil {
		t.Fatal(err)
	}
	if tried > 1+retries {
		t.Fatalf("the key was claimed %d times (answer %v); want at most %d", tried, err, 1+retries)
	}
	if fault.CodeOf(err) != fault.Unavailable || ctx.Err() != nil || ran {
		t.Fatalf("err %v (code %s), deadline passed %v, ran %v; want SERVICE_UNAVAILABLE before the deadline and nothing run",
			err, fault.CodeOf(err), ctx.Err() != nil, ran)
	}
	if n := e.count(t, "actions"); n != 0 {
		t.Fatalf("%d actions stored", n)
	}
}

// rejectingRequest is a request whose answers may go stale like a voice
// call's under a derived key: a rejection is stale, so the same request is
// decided afresh. Each execution is counted and rejected.
func rejectingRequest(e env, runs *atomic.Int32, fingerprint string) idem.Request {
	return idem.Request{
		TenantID: e.tenant.ID, Key: idem.DeriveKey("test", "declined"), Operation: "test.op", Fingerprint: fingerprint,
		Input: []byte(`{}`), Wait: 5 * time.Second,
		Work: run(func(context.Context, *db.Tx, idem.Exec) (idem.Result, error) {
			runs.Add(1)
			return idem.Result{Outcome: idem.Rejected, Status: 422, Reason: "DECLINED", Body: []byte(`{}`)}, nil
		}),
		Stale: stale(func(_ context.Context, a oncecall.Action) (bool, error) { return a.Outcome == oncecall.Rejected, nil }),
	}
}

// Identical requests sent at once, whose answers may go stale: those that
// wait for the first attempt's claim hear its rejection, and so do those
// that arrive just after it. One execution.
func TestConcurrentDuplicatesOfARejectionRunOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var runs atomic.Int32
	ids := make([]uuid.UUID, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			r, err := e.core.Do(t.Context(), rejectingRequest(e, &runs, "f"))
			if err != nil {
				t.Error(err)
			}
			ids[i] = r.Action.ID
		})
	}
	wg.Wait()
	if n := runs.Load(); n != 1 || e.count(t, "actions") != 1 {
		t.Fatalf("20 identical requests ran %d times and made %d actions, want 1 and 1", n, e.count(t, "actions"))
	}
	for i, id := range ids {
		if id != ids[0] {
			t.Fatalf("request %d answered with action %s, the first with %s", i, id, ids[0])
		}
	}
}

// A rejection answers an identical request for RejectionHold after it was
// recorded; a request with other details is decided afresh at once, and
// the same request once the hold has passed.
func TestRejectionAnswersItsDuplicatesForTheHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const hold = time.Second
	core := idem.New(e.store, idem.Config{RejectionHold: hold})
	var runs atomic.Int32
	do := func(fingerprint string) idem.Reply {
		t.Helper()
		r, err := core.Do(t.Context(), rejectingRequest(e, &runs, fingerprint))
		if err != nil || r.Action.Outcome != idem.Rejected {
			t.Fatalf("Do: %+v %v", r, err)
		}
		return r
	}
	first := do("f")
	if again := do("f"); !again.Replayed || again.Action.ID != first.Action.ID || runs.Load() != 1 {
		t.Fatalf("the same request within the hold: %+v after %d runs; want the rejection %s replayed", again, runs.Load(), first.Action.ID)
	}
	other := do("other")
	if other.Replayed || other.Action.ID == first.Action.ID || runs.Load() != 2 {
		t.Fatalf("another request under the key within the hold: %+v after %d runs; want a new action", other, runs.Load())
	}
	last := do("f") // the key now names the other request's rejection
	if last.Replayed || runs.Load() != 3 {
		t.Fatalf("the first request again: %+v after %d runs; want a new action", last, runs.Load())
	}
	stored, err := e.store.ActionByID(t.Context(), e.tenant.ID, last.Action.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again := do("f"); !again.Replayed || again.Action.ID != last.Action.ID {
		t.Fatalf("the same request within the hold: %+v; want %s replayed", again, last.Action.ID)
	}
	// The rule is about time: wait until the hold has passed.
	time.Sleep(time.Until(stored.CompletedAt.Add(hold)))
	if after := do("f"); after.Replayed || after.Action.ID == last.Action.ID || runs.Load() != 4 {
		t.Fatalf("the same request after the hold: %+v after %d runs; want a new action", after, runs.Load())
	}
}
