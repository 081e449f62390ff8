package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncecall/oncecall/db"
	"github.com/oncecall/oncecall/internal/pgembed"
	"github.com/oncecall/oncecall/internal/testkit/pgtest"
)

// secondCluster is a PostgreSQL cluster apart from the tests' server: its
// own embedded server when the server binaries are installed, else (a
// TEST_DATABASE_URL server alone) a second database on the tests' server.
func secondCluster(t *testing.T) string {
	t.Helper()
	if _, err := pgembed.FindBinDir(); err != nil {
		t.Logf("no PostgreSQL server binaries (%v): the second cluster is a second database on the tests' server", err)
		return pgtest.NewEmptyDB(t)
	}
	dir, err := os.MkdirTemp("", "oncecall-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgembed.Start(ctx, pgembed.Config{DataDir: filepath.Join(dir, "data"), Fast: true})
	if err != nil {
		t.Fatalf("start the second cluster: %v", err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv.URL(pgembed.AppDatabase)
}

// mover is one client of one tenant: it books slots with fresh keys and
// retries earlier keys, each with the same body, honouring Retry-After.
type mover struct {
	url, key string
	tenant   string
	slots    []uuid.UUID
	customer uuid.UUID
	client   *http.Client

	mu        sync.Mutex
	bodies    map[string][]byte // idempotency key → body
	slotOf    map[string]string // key → slot id
	confirmed map[string]string // key → appointment id it was told
	refused   int               // 503s
	errors    []string
}

func (c *mover) book(ctx context.Context, key string) (done bool) {
	c.mu.Lock()
	body := c.bodies[key]
	c.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/v1/appointments", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return false // the run is ending
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		var env struct {
			Outcome string `json:"outcome"`
			Result  struct {
				ID string `json:"id"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &env) != nil || env.Outcome != "confirmed" || env.Result.ID == "" {
			c.fail("key %s: %d %s", key, resp.StatusCode, b)
			return true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if prev, ok := c.confirmed[key]; ok && prev != env.Result.ID {
			c.errors = append(c.errors, fmt.Sprintf("key %s confirmed as %s, then as %s", key, prev, env.Result.ID))
		}
		c.confirmed[key] = env.Result.ID
		return true
	case http.StatusServiceUnavailable:
		c.mu.Lock()
		c.refused++
		c.mu.Unlock()
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 {
			c.fail("key %s: 503 without Retry-After: %s", key, b)
			secs = 1
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(secs) * time.Second):
		}
		return false
	default:
		c.fail("key %s: %d %s", key, resp.StatusCode, b)
		return true
	}
}

func (c *mover) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errors) < 20 {
		c.errors = append(c.errors, fmt.Sprintf(format, args...))
	}
}

// run books until ctx ends: every attempt a fresh key for the next slot,
// or (one in three) a retry of an earlier key; a 503 is retried with the
// same key.
func (c *mover) run(ctx context.Context, next func() int) {
	var used []string
	// About 50 bookings a second per client: the slots last through the
	// move.
	pace := time.NewTicker(20 * time.Millisecond)
	defer pace.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		var key string
		if len(used) > 0 && rand.IntN(3) == 0 {
			key = used[rand.IntN(len(used))]
		} else {
			i := next()
			if i >= len(c.slots) {
				return
			}
			key = fmt.Sprintf("%s-book-%d", c.tenant, i)
			body, _ := json.Marshal(map[string]string{"slot_id": c.slots[i].String(), "customer_id": c.customer.String()})
			c.mu.Lock()
			c.bodies[key] = body
			c.slotOf[key] = c.slots[i].String()
			c.mu.Unlock()
			used = append(used, key)
		}
		for ctx.Err() == nil && !c.book(ctx, key) {
		}
	}
}

// TestTenantMoveUnderLoad moves a tenant to another cluster while clients
// of it and of another tenant book and retry: the moving tenant's requests
// are answered 503 with Retry-After for a short pause, the other tenant's
// never, and at the end every key has one action and at most one
// appointment on its tenant's cluster, every confirmed answer's
// appointment is there, and nothing of the moved tenant stays behind.
func TestTenantMoveUnderLoad(t *testing.T) {
	homeURL := pgtest.NewDB(t)
	otherURL := secondCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	homePool, err := pgxpool.New(ctx, homeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer homePool.Close()
	store := db.New(homePool)
	const perTenant = 600
	movers := map[string]*mover{}
	for _, name := range []string{"T", "U"} {
		tn, key, err := store.CreateTenant(ctx, "move-"+name, "")
		if err != nil {
			t.Fatal(err)
		}
		cust, err := store.CreateCustomer(ctx, db.NewCustomer{TenantID: tn.ID, Name: "Caller " + name})
		if err != nil {
			t.Fatal(err)
		}
		c := &mover{key: key, tenant: tn.ID.String(), customer: cust.ID, bodies: map[string][]byte{}, slotOf: map[string]string{}, confirmed: map[string]string{},
			client: &http.Client{Timeout: 20 * time.Second}}
		start := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
		for i := range perTenant {
			s, err := store.CreateSlot(ctx, db.NewSlot{TenantID: tn.ID, StartsAt: start.Add(time.Duration(i) * time.Hour), EndsAt: start.Add(time.Duration(i)*time.Hour + 30*time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			c.slots = append(c.slots, s.ID)
		}
		movers[name] = c
	}
	T, U := movers["T"], movers["U"]

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("DATABASE_URL", homeURL)
	t.Setenv("ONCECALL_CLUSTERS", "b="+otherURL)
	var serveLog bytes.Buffer
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- run(serveCtx, []string{"serve", "--addr", addr, "--rate-limit", "0", "--prune-interval", "0"}, io.Discard, &lockedWriter{w: &serveLog})
	}()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + addr
	waitFor(t, "the server to be ready", time.Minute, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range movers {
		c.url = url
		var mu sync.Mutex
		n := 0
		next := func() int { mu.Lock(); defer mu.Unlock(); n++; return n - 1 }
		for range 2 {
			wg.Go(func() { c.run(load, next) })
		}
	}
	confirmed := func(c *mover) int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.confirmed) }
	waitFor(t, "bookings before the move", time.Minute, func() bool { return confirmed(T) >= 30 && confirmed(U) >= 30 })

	var out bytes.Buffer
	uBefore := confirmed(U)
	if err := run(ctx, []string{"tenant", "move", "--tenant", T.tenant, "--to", "b"}, &out, &out); err != nil {
		stopLoad()
		wg.Wait()
		t.Fatalf("tenant move: %v\n%s", err, out.String())
	}
	t.Logf("tenant move:\n%s", out.String())
	after, uDuring := confirmed(T), confirmed(U)-uBefore
	if uDuring == 0 {
		t.Errorf("U booked nothing while T moved: the test did not load the other tenant during the move")
	}
	waitFor(t, "bookings after the move", time.Minute, func() bool { return confirmed(T) >= after+30 })
	stopLoad()
	wg.Wait()

	// Every key is asked again until it has its answer.
	for _, c := range movers {
		for key := range c.bodies {
			c.mu.Lock()
			_, ok := c.confirmed[key]
			c.mu.Unlock()
			for !ok && ctx.Err() == nil {
				ok = c.book(ctx, key)
			}
		}
	}
	for name, c := range movers {
		for _, e := range c.errors {
			t.Errorf("tenant %s: %s", name, e)
		}
	}

	otherPool, err := pgxpool.New(ctx, otherURL)
	if err != nil {
		t.Fatal(err)
	}
	defer otherPool.Close()
	// Every key: exactly one action, confirmed; at most one appointment; the
	// one each confirmed answer named, on the tenant's cluster.
	audit := func(name string, c *mover, pool *pgxpool.Pool) (dup, lost, falseConf int) {
		for key := range c.bodies {
			var actions, confirmedActions int
			var resource string
			if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE outcome = 'confirmed'), COALESCE(max(resource_id), '')
				FROM actions WHERE tenant_id = $1 AND idempotency_key = $2`, c.tenant, key).Scan(&actions, &confirmedActions, &resource); err != nil {
				t.Fatal(err)
			}
			var slot string
			var appointments int
			if err := pool.QueryRow(ctx, `SELECT count(*), COALESCE(max(slot_id::text), '') FROM appointments
				WHERE tenant_id = $1 AND slot_id = $2`, c.tenant, c.slotOf[key]).Scan(&appointments, &slot); err != nil {
				t.Fatal(err)
			}
			told := c.confirmed[key]
			var exists int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM appointments WHERE tenant_id = $1 AND id::text = $2`, c.tenant, told).Scan(&exists); err != nil {
				t.Fatal(err)
			}
			switch {
			case actions != 1 || appointments > 1:
				dup++
				t.Errorf("tenant %s key %s: %d actions, %d appointments of its slot", name, key, actions, appointments)
			case told != "" && exists != 1:
				lost++
				t.Errorf("tenant %s key %s: told confirmed %s, which its cluster does not hold", name, key, told)
			case told != "" && (confirmedActions != 1 || resource != told):
				falseConf++
				t.Errorf("tenant %s key %s: told confirmed %s; its action: confirmed %d, resource %q", name, key, told, confirmedActions, resource)
			}
		}
		return dup, lost, falseConf
	}
	var dup, lost, falseConf int
	for _, a := range []struct {
		name string
		c    *mover
		pool *pgxpool.Pool
	}{{"T", T, otherPool}, {"U", U, homePool}} {
		d, l, f := audit(a.name, a.c, a.pool)
		dup, lost, falseConf = dup+d, lost+l, falseConf+f
	}
	// Appointments nobody asked for: one per confirmed key, no more.
	for _, a := range []struct {
		c    *mover
		pool *pgxpool.Pool
	}{{T, otherPool}, {U, homePool}} {
		var n int
		if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM appointments WHERE tenant_id = $1`, a.c.tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(a.c.confirmed) {
			dup++
			t.Errorf("tenant %s: %d appointments for %d confirmed keys", a.c.tenant, n, len(a.c.confirmed))
		}
	}
	// Nothing of T stays on the home cluster; nothing of U went.
	var leftT, movedU int
	if err := homePool.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenants WHERE id = $1) + (SELECT count(*) FROM api_keys WHERE tenant_id = $1)
		+ (SELECT count(*) FROM actions WHERE tenant_id = $1) + (SELECT count(*) FROM appointments WHERE tenant_id = $1)
		+ (SELECT count(*) FROM slots WHERE tenant_id = $1) + (SELECT count(*) FROM customers WHERE tenant_id = $1)`, T.tenant).Scan(&leftT); err != nil {
		t.Fatal(err)
	}
	if err := otherPool.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenants WHERE id = $1) + (SELECT count(*) FROM actions WHERE tenant_id = $1)`, U.tenant).Scan(&movedU); err != nil {
		t.Fatal(err)
	}
	if leftT != 0 || movedU != 0 {
		t.Errorf("rows of T left on the home cluster: %d; rows of U on the other: %d", leftT, movedU)
	}
	var slotsT int
	if err := otherPool.QueryRow(ctx, `SELECT count(*) FROM slots WHERE tenant_id = $1`, T.tenant).Scan(&slotsT); err != nil {
		t.Fatal(err)
	}
	if slotsT != perTenant {
		t.Errorf("T has %d slots on its new cluster, want %d", slotsT, perTenant)
	}
	if U.refused != 0 {
		t.Errorf("U, which did not move, was refused %d times", U.refused)
	}
	if T.refused == 0 {
		t.Errorf("T was never refused: the load did not reach the pause")
	}
	pause := regexp.MustCompile(`paused for (\S+)`).FindStringSubmatch(out.String())
	t.Logf("T: %d keys, %d confirmed, %d requests refused 503; U: %d keys, %d confirmed (%d during the move), 0 refused; pause %v; "+
		"audit: duplicates=%d lost=%d false_confirmations=%d",
		len(T.bodies), len(T.confirmed), T.refused, len(U.bodies), len(U.confirmed), uDuring, pause[1:], dup, lost, falseConf)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
