package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/provider"
	"github.com/oncecall/oncecall/internal/testkit/apptest"
)

// Tenant A floods requests that are stuck behind a row lock held outside
// oncecall, more of them than the pool has connections, and with a lock
// timeout long enough that only fairness can help. Tenant B's requests are
// served meanwhile; A's either finish or are refused with 503 and store
// nothing.
func TestOneTenantCannotExhaustThePool(t *testing.T) {
	t.Parallel()
	const poolSize, flood = 4, 10
	e := apptest.Start(t, func(c *app.Config) {
		c.MaxConns = poolSize
		c.DBTimeouts.Lock = time.Minute
	})
	count := directCount(t, e.DBURL)

	a, aKey := e.Tenant("tenant-a")
	b, bKey, err := e.Store.CreateTenant(t.Context(), "tenant-b", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	aCustomer, bCustomer := e.Customer(a.ID), e.Customer(b.ID)
	aSlots := make([]uuid.UUID, flood)
	for i := range aSlots {
		aSlots[i] = e.Slot(a.ID, i+1)
	}
	bSlots := []uuid.UUID{e.Slot(b.ID, 1), e.Slot(b.ID, 2)}
	// Warm both API keys into the cache.
	for _, k := range []string{aKey, bKey} {
		if r := e.Get("/v1/actions/"+uuid.NewString(), k); r.Status != http.StatusNotFound {
			t.Fatalf("warm-up: %d %s", r.Status, r.Body)
		}
	}

	lock := holdCustomer(t, e.DBURL, aCustomer)

	answers := make([]apptest.Response, flood)
	errs := make([]error, flood)
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			answers[i], errs[i] = e.RequestCtx(ctx, http.MethodPost, "/v1/appointments", aKey,
				map[string]any{"customer_id": aCustomer, "slot_id": aSlots[i]}, "Idempotency-Key", fmt.Sprintf("flood-%d", i))
		})
	}
	// A's requests hold connections, waiting on the lock.
	deadline := time.Now().Add(10 * time.Second)
	for count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("tenant A's requests never waited on the lock")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}

	// B is served promptly, over REST and Dasha.
	const prompt = 5 * time.Second
	rest := within(t, e, prompt, http.MethodPost, "/v1/appointments", bKey,
		map[string]any{"customer_id": bCustomer, "slot_id": bSlots[0]}, "Idempotency-Key", "b-1")
	if rest.Status != http.StatusCreated {
		t.Fatalf("tenant B during A's flood: %d %s", rest.Status, rest.Body)
	}
	dasha := within(t, e, prompt, http.MethodPost, "/v1/dasha/tools/book_appointment", bKey,
		payload("book_appointment", "call_b", map[string]any{"customer_id": bCustomer, "slot_id": bSlots[1]}))
	if a := decodeAnswer(t, dasha); a.Outcome != "confirmed" {
		t.Fatalf("tenant B's tool call during A's flood: %s", dasha.Body)
	}
	if n := count("SELECT count(*) FROM appointments WHERE tenant_id = $1", b.ID); n != 2 {
		t.Fatalf("tenant B's appointments = %d, want 2", n)
	}

	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	booked := 0
	for i, r := range answers {
		switch {
		case errs[i] != nil:
			t.Errorf("tenant A's request %d got no answer: %v", i, errs[i])
		case r.Status == http.StatusCreated:
			booked++
		case r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != "":
		default:
			t.Errorf("tenant A's request %d: %d %s", i, r.Status, r.Body)
		}
	}
	if n := count("SELECT count(*) FROM appointments WHERE tenant_id = $1", a.ID); n != booked {
		t.Errorf("tenant A: %d appointments for %d bookings answered 201", n, booked)
	}
	if n := count("SELECT count(*) FROM actions WHERE tenant_id = $1", a.ID); n != booked {
		t.Errorf("tenant A: %d actions for %d bookings answered 201", n, booked)
	}
}

// A write holds one of its tenant's places only while it uses the
// database: with the tenant's only place taken by a booking stuck behind a
// row lock, a booking whose body is refused is answered 400 at once (not
// 503 after the gate's wait), stores nothing, and the stuck booking is
// booked once the lock goes.
func TestRefusedInputTakesNoPlace(t *testing.T) {
	t.Parallel()
	e := apptest.Start(t, func(c *app.Config) {
		c.TenantDBRequests = 1
		c.TenantDBWait = time.Minute
		c.DBTimeouts.Lock, c.DBTimeouts.Statement = time.Minute, time.Minute
	})
	tn, key := e.Tenant("one-place")
	customer, slot := e.Customer(tn.ID), e.Slot(tn.ID, 1)
	if r := e.Get("/v1/actions/"+uuid.NewString(), key); r.Status != http.StatusNotFound { // the key into the cache
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	direct, err := pgxpool.New(t.Context(), e.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	lock := holdCustomer(t, e.DBURL, customer)
	type answer struct {
		r   apptest.Response
		err error
	}
	stuck := make(chan answer, 1)
	go func() {
		r, err := e.RequestCtx(t.Context(), http.MethodPost, "/v1/appointments", key,
			map[string]any{"customer_id": customer, "slot_id": slot}, "Idempotency-Key", "stuck")
		stuck <- answer{r, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := direct.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the booking never waited on the lock")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}

	bad := within(t, e, 5*time.Second, http.MethodPost, "/v1/appointments", key,
		map[string]any{"customer_id": customer}, "Idempotency-Key", "bad")
	if bad.Status != http.StatusBadRequest {
		t.Fatalf("a booking without a slot while the tenant's place is taken: %d %s, want 400", bad.Status, bad.Body)
	}
	select {
	case a := <-stuck:
		t.Fatalf("the stuck booking was answered before its lock went: %d %s %v", a.r.Status, a.r.Body, a.err)
	default:
	}
	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := <-stuck; a.err != nil || a.r.Status != http.StatusCreated {
		t.Fatalf("the stuck booking once the lock went: %d %s %v", a.r.Status, a.r.Body, a.err)
	}
	var actions, appointments int
	if err := direct.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM actions WHERE tenant_id = $1),
		(SELECT count(*) FROM appointments WHERE tenant_id = $1)`, tn.ID).Scan(&actions, &appointments); err != nil {
		t.Fatal(err)
	}
	if actions != 1 || appointments != 1 {
		t.Fatalf("%d actions and %d appointments, want the stuck booking's one of each", actions, appointments)
	}
}

// A remote booking is slow at its provider, and identical requests keep
// arriving while it runs (REST retries with Prefer: wait, Dasha's retries
// of the tool call). A duplicate waiting for the first attempt holds no
// place in the tenant's share of the pool, so the tenant's other requests
// (a REST read, another call's get_customer) are served while they wait,
// and the duplicates are not refused for want of a place: each hears the
// booking, or pending. One booking at the calendar.
func TestWaitingDuplicatesHoldNoTenantPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(d dashaEnv, ctx context.Context) (apptest.Response, error)
		// answered reports whether r is an answer to the booking.
		answered func(t *testing.T, r apptest.Response) bool
	}{
		{"dasha", func(d dashaEnv, ctx context.Context) (apptest.Response, error) {
			return d.RequestCtx(ctx, http.MethodPost, "/v1/dasha/tools/book_appointment", d.key, payload("book_appointment", "call_slow", d.bookArgs(d.slot)))
		}, func(t *testing.T, r apptest.Response) bool {
			if r.Status != http.StatusOK {
				return false
			}
			a := decodeAnswer(t, r)
			return a.Outcome == "confirmed" || a.Outcome == "pending"
		}},
		{"rest", func(d dashaEnv, ctx context.Context) (apptest.Response, error) {
			return d.RequestCtx(ctx, http.MethodPost, "/v1/appointments", d.key, d.bookArgs(d.slot), "Idempotency-Key", "slow", "Prefer", "wait=10")
		}, func(t *testing.T, r apptest.Response) bool { return r.Status == http.StatusCreated }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim, providers := slowCalendar(t, "4s")
			d := setupDasha(t, func(c *app.Config) {
				c.Providers, c.ReconcileDisabled = providers, true
				c.MaxConns, c.TenantDBRequests, c.TenantDBWait = 6, 3, time.Second
			})
			if r := d.Get("/v1/customers/"+d.customer.String(), d.key); r.Status != http.StatusOK { // the key into the cache
				t.Fatalf("warm-up: %d %s", r.Status, r.Body)
			}
			first := make(chan apptest.Response, 1)
			go func() {
				r, _ := tc.write(d, t.Context())
				first <- r
			}()
			deadline := time.Now().Add(10 * time.Second)
			for d.Count("SELECT count(*) FROM actions WHERE state = 'running'") == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the first booking never claimed its action")
				}
				time.Sleep(5 * time.Millisecond) // polling a condition
			}

			const dups = 10
			answers := make([]apptest.Response, dups)
			errs := make([]error, dups)
			var wg sync.WaitGroup
			for i := range dups {
				wg.Go(func() { answers[i], errs[i] = tc.write(d, t.Context()) })
			}
			// While the duplicates wait, the tenant's other requests are
			// served: none waits out the gate's second.
			reads := 0
			for done := false; !done; reads++ {
				read := within(t, d.Env, 5*time.Second, http.MethodGet, "/v1/customers/"+d.customer.String(), d.key, nil)
				if read.Status != http.StatusOK {
					t.Fatalf("read %d while the duplicates wait: %d %s", reads, read.Status, read.Body)
				}
				tool := within(t, d.Env, 5*time.Second, http.MethodPost, "/v1/dasha/tools/get_customer", d.key,
					payload("get_customer", fmt.Sprintf("call_other_%d", reads), map[string]any{"customer_id": d.customer}))
				if tool.Status != http.StatusOK {
					t.Fatalf("another call's get_customer %d while the duplicates wait: %d %s", reads, tool.Status, tool.Body)
				}
				select {
				case r := <-first:
					if !tc.answered(t, r) {
						t.Fatalf("the first booking: %d %s", r.Status, r.Body)
					}
					done = true
				case <-time.After(100 * time.Millisecond): // the pace of the reads
				}
			}
			wg.Wait()
			for i, r := range answers {
				if errs[i] != nil || !tc.answered(t, r) {
					t.Errorf("duplicate %d: %v %d %s", i, errs[i], r.Status, r.Body)
				}
			}
			if l := sim.Ledger(provider.Calendar); len(l) != 1 {
				t.Fatalf("calendar ledger holds %d writes, want 1", len(l))
			}
			if n := d.Count("SELECT count(*) FROM actions"); n != 1 {
				t.Fatalf("%d actions, want 1", n)
			}
		})
	}
}

// Past the server's capacity, when every place in the database is taken
// (here by bookings stuck behind a row lock held outside oncecall), another
// tenant's requests are refused within the server's short wait with 503
// and Retry-After, over REST and a voice platform, and store nothing; sent
// again once the places are free, each runs once, as a first execution.
func TestPastThePoolRequestsAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	const poolSize, wait = 3, 50 * time.Millisecond
	e := apptest.Start(t, func(c *app.Config) {
		c.MaxConns = poolSize
		c.TenantDBRequests = poolSize // a tenant may use the whole pool
		c.DBWait = wait
		c.DBTimeouts.Lock, c.DBTimeouts.Statement = time.Minute, time.Minute
	})
	count := directCount(t, e.DBURL)
	a, aKey := e.Tenant("tenant-a")
	b, bKey, err := e.Store.CreateTenant(t.Context(), "tenant-b", testOrg)
	if err != nil {
		t.Fatal(err)
	}
	aCustomer, bCustomer := e.Customer(a.ID), e.Customer(b.ID)
	bRest, bCall := e.Slot(b.ID, 1), e.Slot(b.ID, 2)
	for _, k := range []string{aKey, bKey} { // both keys into the cache
		if r := e.Get("/v1/actions/"+uuid.NewString(), k); r.Status != http.StatusNotFound {
			t.Fatalf("warm-up: %d %s", r.Status, r.Body)
		}
	}

	lock := holdCustomer(t, e.DBURL, aCustomer)
	stuck := make([]apptest.Response, poolSize)
	errs := make([]error, poolSize)
	var wg sync.WaitGroup
	for i := range poolSize {
		slot := e.Slot(a.ID, 10+i)
		wg.Go(func() {
			stuck[i], errs[i] = e.RequestCtx(t.Context(), http.MethodPost, "/v1/appointments", aKey,
				map[string]any{"customer_id": aCustomer, "slot_id": slot}, "Idempotency-Key", fmt.Sprintf("stuck-%d", i))
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") < poolSize {
		if time.Now().After(deadline) {
			t.Fatal("tenant A's bookings never took every place")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}

	// Refused within the wait and some slack, not left to queue for a
	// connection.
	const prompt = time.Second
	restBody := map[string]any{"customer_id": bCustomer, "slot_id": bRest}
	callBody := payload("book_appointment", "call_full", map[string]any{"customer_id": bCustomer, "slot_id": bCall})
	for _, req := range []struct {
		path    string
		body    any
		headers []string
	}{
		{"/v1/appointments", restBody, []string{"Idempotency-Key", "b-full"}},
		{"/v1/dasha/tools/book_appointment", callBody, nil},
	} {
		start := time.Now()
		r := within(t, e, 5*time.Second, http.MethodPost, req.path, bKey, req.body, req.headers...)
		took := time.Since(start)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%s with every place taken: %d (Retry-After %q) %s", req.path, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
		if took > prompt {
			t.Errorf("%s refused after %s, want within %s", req.path, took, prompt)
		}
	}
	if n := count("SELECT count(*) FROM actions WHERE tenant_id = $1", b.ID); n != 0 {
		t.Fatalf("tenant B: %d actions stored by refused requests", n)
	}

	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, r := range stuck {
		if errs[i] != nil || r.Status != http.StatusCreated {
			t.Fatalf("tenant A's booking %d once the lock went: %d %s %v", i, r.Status, r.Body, errs[i])
		}
	}
	again := e.Post("/v1/appointments", bKey, "b-full", restBody)
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("the refused booking sent again: %d replayed=%q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	if ans := decodeAnswer(t, e.Post("/v1/dasha/tools/book_appointment", bKey, "", callBody)); ans.Outcome != "confirmed" {
		t.Fatalf("the refused tool call sent again: %+v", ans)
	}
	if n := count("SELECT count(*) FROM appointments WHERE tenant_id = $1", b.ID); n != 2 {
		t.Errorf("tenant B: %d appointments, want 2", n)
	}
	if n := count("SELECT count(*) FROM actions WHERE tenant_id = $1", b.ID); n != 2 {
		t.Errorf("tenant B: %d actions, want 2", n)
	}
}

// directCount returns a count query on a pool of its own: the server's pool
// is what these tests fill, and a count must not wait for a place in it.
func directCount(t *testing.T, dbURL string) func(query string, args ...any) int {
	direct, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	return func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := direct.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}
